// Command benchproc measures the `sitebus run` process (`make bench`): its
// start-up time to /readyz, its resident memory idle and under load, and
// the end-to-end ingest rate through a scratch RabbitMQ node fed by the
// Waldur simulator. sitebus runs with its embedded NATS.
//
//	go run ./e2e/cmd/benchproc [-frames 20000] [-starts 5]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
)

const (
	startTarget = time.Second
	rssTarget   = 60 << 20
	idleSettle  = 5 * time.Second
)

type options struct {
	sitebus  string
	only     string
	dataRoot string
	starts   int
	load     loadOptions
}

func parseFlags() options {
	var o options
	harness.SitebusFlag(&o.sitebus)
	flag.StringVar(&o.only, "only", "stomp-bridge", "passed to `sitebus run --only`: the figures are about ingestion, which needs no platform")
	flag.StringVar(&o.dataRoot, "data-root", "", "where the fresh data directories go (default: the temp dir); its disk's fsync speed bounds the ingest rate")
	flag.IntVar(&o.starts, "starts", 5, "start-up measurements, each with a fresh data directory")
	flag.IntVar(&o.load.frames, "frames", 20000, "frames to push through RabbitMQ for the load measurement")
	flag.IntVar(&o.load.concurrency, "concurrency", 8, "concurrent POST /sim/events requests")
	flag.IntVar(&o.load.window, "window", 5000, "most frames published but not yet acked by sitebus (queues hold 10000)")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	ctx, stop, log := harness.CommandContext("benchproc")
	defer stop()
	if err := run(ctx, o, log); err != nil {
		fmt.Fprintln(os.Stderr, "benchproc:", err)
		stop()
		os.Exit(1)
	}
}

type report struct {
	starts  []time.Duration
	idleRSS uint64
	load    *loadResult
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	if err := rabbitmq.Available(); err != nil {
		return fmt.Errorf("RabbitMQ is needed (install it with `make deps`): %w", err)
	}
	bin, err := harness.SitebusBinaryOrBuild(o.sitebus)
	if err != nil {
		return err
	}
	e, err := setup(ctx, bin, o, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.broker.Stop(); err != nil {
			log.Warn("stop RabbitMQ", "err", err)
		}
	}()
	var r report
	if r.starts, err = e.measureStarts(ctx, o.starts); err != nil {
		return err
	}
	if err := e.measureMemory(ctx, o.load, &r); err != nil {
		return err
	}
	r.print(os.Stdout, o)
	return nil
}

// setup loads the fixture and starts RabbitMQ; the caller must stop it.
func setup(ctx context.Context, bin string, o options, log *slog.Logger) (*env, error) {
	fx, err := harness.LoadFixture()
	if err != nil {
		return nil, err
	}
	if len(fx.Users) == 0 || len(fx.Offerings) == 0 {
		return nil, errors.New("the fixture needs a user and an offering")
	}
	log.Info("starting RabbitMQ")
	broker, err := rabbitmq.Start(ctx, rabbitmq.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start RabbitMQ: %w", err)
	}
	// Before any sitebus runs: see ensureVhost.
	if err := ensureVhost(ctx, broker, fixtureVhost(fx.Users[0].UUID)); err != nil {
		_ = broker.Stop()
		return nil, err
	}
	return &env{bin: bin, only: o.only, dataRoot: o.dataRoot, broker: broker, fx: fx, log: log}, nil
}

// measureStarts starts sitebus n times, each with a fresh data directory,
// and times exec → first /readyz 200.
func (e *env) measureStarts(ctx context.Context, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := range n {
		d, err := e.timeStart(ctx)
		if err != nil {
			return nil, fmt.Errorf("start-up run %d: %w", i+1, err)
		}
		e.log.Info("start-up measured", "run", i+1, "ready_after", d.Round(time.Millisecond))
		out = append(out, d)
	}
	return out, nil
}

func (e *env) timeStart(ctx context.Context) (time.Duration, error) {
	in, err := e.start()
	if err != nil {
		return 0, err
	}
	defer in.stop()
	d, err := in.waitReady(ctx)
	if err != nil {
		return 0, in.failed(err)
	}
	// Stopping sitebus as soon as /readyz said 200 would cut its Waldur
	// registration off half-way, and with it the simulator's broker calls
	// for that registration (which end with sitebus's request): RabbitMQ
	// can then be left with a half-made vhost that every later instance
	// shares (see ensureVhost). Let the registration finish first; the
	// figure is already taken.
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := e.subscriptionQueues(wctx, in); err != nil {
		return 0, in.failed(fmt.Errorf("after /readyz: %w", err))
	}
	return d, nil
}

// measureMemory samples RSS once idle (subscriptions consumed, then
// idleSettle), then runs the load.
func (e *env) measureMemory(ctx context.Context, lo loadOptions, r *report) error {
	in, err := e.start()
	if err != nil {
		return err
	}
	defer in.stop()
	if _, err := in.waitReady(ctx); err != nil {
		return in.failed(err)
	}
	if _, err := e.waitConsumers(ctx, in); err != nil {
		return in.failed(err)
	}
	e.log.Info("subscriptions consumed; letting sitebus settle", "for", idleSettle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idleSettle):
	}
	if r.idleRSS, err = rssBytes(in.proc.Pid()); err != nil {
		return in.failed(fmt.Errorf("idle RSS: %w", err))
	}
	e.log.Info("idle RSS sampled", "MiB", mib(r.idleRSS))
	e.log.Info("pushing frames through RabbitMQ", "frames", lo.frames, "concurrency", lo.concurrency)
	if r.load, err = e.load(ctx, in, lo); err != nil {
		return in.failed(fmt.Errorf("load: %w", err))
	}
	return nil
}

func mib(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func (r *report) print(w *os.File, o options) {
	lo, dataRoot := o.load, o.dataRoot
	if dataRoot == "" {
		dataRoot = os.TempDir()
	}
	s := slices.Clone(r.starts)
	slices.Sort(s)
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	l := r.load
	fmt.Fprintln(w)
	fmt.Fprintf(w, "sitebus run: start → /readyz 200 (%d runs): min %d ms, median %d ms, max %d ms (target < %s)%s\n",
		len(s), ms(s[0]), ms(s[len(s)/2]), ms(s[len(s)-1]), startTarget, verdict(s[len(s)-1] < startTarget))
	fmt.Fprintf(w, "sitebus run: RSS idle %s MiB (target < %s MiB)%s; peak under load (%d frames) %s MiB (%d samples at 100 ms)\n",
		mib(r.idleRSS), mib(rssTarget), verdict(r.idleRSS < rssTarget), l.frames, mib(l.peakRSS), l.rssSamples)
	fmt.Fprintf(w, "end-to-end ingest through RabbitMQ: %d frames in %.1f s = %.0f frames/s (bounded by the broker's delivery and the store's fsync)\n",
		l.frames, l.ingested.Seconds(), float64(l.frames)/l.ingested.Seconds())
	fmt.Fprintf(w, "  simulator published them in %.1f s (%.0f frames/s; %d concurrent POST /sim/events, at most %d unacked);\n",
		l.published.Seconds(), float64(l.frames)/l.published.Seconds(), lo.concurrency, lo.window)
	fmt.Fprintf(w, "  sitebus mean frame received → acked %.1f ms (JetStream store in %s); events stream grew by %d\n",
		float64(l.meanIngest.Microseconds())/1000, dataRoot, l.storedEvents)
}

func verdict(ok bool) string {
	if ok {
		return ""
	}
	return " MISSED"
}
