package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/bus"
)

// rssBytes reads VmRSS from /proc/<pid>/status.
func rssBytes(pid int) (uint64, error) {
	return procStatus(pid, "VmRSS:")
}

// procStatus reads a "Name:   123 kB" line of /proc/<pid>/status.
func procStatus(pid int, field string) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// peakSampler samples a process's RSS every interval and keeps the peak.
type peakSampler struct {
	peak    atomic.Uint64
	samples atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func samplePeak(pid int, every time.Duration) *peakSampler {
	s := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if rss, err := rssBytes(pid); err == nil {
				s.samples.Add(1)
				if rss > s.peak.Load() {
					s.peak.Store(rss)
				}
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the peak.
func (s *peakSampler) Stop() uint64 {
	close(s.stop)
	<-s.done
	return s.peak.Load()
}

// scrape is what benchproc reads from sitebus's /metrics.
type scrape struct {
	frames      int64   // sitebus_stomp_frames_total of one object type, all outcomes
	ingestSum   float64 // sitebus_stomp_ingest_seconds_sum
	ingestCount float64 // sitebus_stomp_ingest_seconds_count
}

// parseMetrics reads a Prometheus text exposition.
func parseMetrics(r io.Reader, objectType string) (scrape, error) {
	var out scrape
	var frames float64
	label := `object_type="` + objectType + `"`
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		var dst *float64
		switch {
		case name == "sitebus_stomp_frames_total" && strings.Contains(line, label):
			dst = &frames
		case name == "sitebus_stomp_ingest_seconds_sum":
			dst = &out.ingestSum
		case name == "sitebus_stomp_ingest_seconds_count":
			dst = &out.ingestCount
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return out, fmt.Errorf("metrics line %q: %w", line, err)
		}
		*dst += v
	}
	out.frames = int64(frames)
	return out, sc.Err()
}

// frameCounter polls sitebus's /metrics for the STOMP frames it has
// acked of one object type.
type frameCounter struct {
	url        string
	objectType string
	client     *http.Client
	acked      atomic.Int64
}

func newFrameCounter(httpAddr, objectType string) *frameCounter {
	return &frameCounter{url: "http://" + httpAddr + "/metrics", objectType: objectType,
		client: &http.Client{Timeout: 2 * time.Second}}
}

// poll scrapes once and stores the frame count.
func (c *frameCounter) poll(ctx context.Context) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return scrape{}, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return scrape{}, err
	}
	defer resp.Body.Close()
	m, err := parseMetrics(resp.Body, c.objectType)
	if err != nil {
		return scrape{}, err
	}
	c.acked.Store(m.frames)
	return m, nil
}

// loadResult is one load run: frames sent through the simulator and
// acked by sitebus.
type loadResult struct {
	frames       int
	published    time.Duration // first publish until the last publish answered
	ingested     time.Duration // first publish until sitebus acked them all
	storedEvents uint64        // growth of the events stream
	peakRSS      uint64
	rssSamples   int64
	// meanIngest is sitebus's mean frame-received → frame-acked time.
	meanIngest time.Duration
}

// loadOptions say how to push frames.
type loadOptions struct {
	frames      int
	concurrency int
	// window bounds the frames published but not yet acked: the
	// subscription queues hold at most 10000 (x-max-length, overflow
	// reject-publish-dlx), and a frame over that is lost silently.
	window int
}

// loadRun is the state shared by the publishers and the ack watcher.
type loadRun struct {
	opts     loadOptions
	counter  *frameCounter
	base     int64 // frames acked before the run
	sent     atomic.Int64
	failed   atomic.Pointer[error] // the first failed publish
	pubDone  chan struct{}
	offering string
}

// load publishes opts.frames order frames with distinct message ids
// through the simulator's POST /sim/events, and waits until sitebus has
// acked them all, while sampling its RSS every 100 ms.
func (e *env) load(ctx context.Context, in *instance, opts loadOptions) (*loadResult, error) {
	lr := &loadRun{opts: opts, counter: newFrameCounter(in.httpAddr, "order"), pubDone: make(chan struct{}),
		offering: e.fx.Offerings[0].UUID}
	before, err := lr.counter.poll(ctx)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	lr.base = before.frames
	msgsBefore, err := streamMsgs(ctx, in.natsURL)
	if err != nil {
		return nil, err
	}
	res := &loadResult{frames: opts.frames}
	sampler := samplePeak(in.proc.Pid(), 100*time.Millisecond)
	start := time.Now()
	pctx, cancelPub := context.WithCancel(ctx)
	defer cancelPub()
	go func() {
		defer close(lr.pubDone)
		lr.publish(pctx, waldursim.NewAdminClient(in.sim.URL()))
		res.published = time.Since(start)
	}()
	after, err := lr.waitAcked(ctx)
	res.ingested = time.Since(start)
	cancelPub()
	<-lr.pubDone
	res.peakRSS, res.rssSamples = sampler.Stop(), sampler.samples.Load()
	if err != nil {
		return res, err
	}
	if n := after.ingestCount - before.ingestCount; n > 0 {
		res.meanIngest = time.Duration((after.ingestSum - before.ingestSum) / n * float64(time.Second))
	}
	msgsAfter, err := streamMsgs(ctx, in.natsURL)
	if err != nil {
		return res, err
	}
	res.storedEvents = msgsAfter - msgsBefore
	return res, nil
}

// publish runs opts.concurrency workers posting one frame per request
// (repeat would resend the same message id, which sitebus deduplicates).
func (lr *loadRun) publish(ctx context.Context, admin *waldursim.AdminClient) {
	admin.HTTP.Transport = &http.Transport{MaxIdleConnsPerHost: lr.opts.concurrency}
	runID := time.Now().UnixNano()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range lr.opts.concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(lr.opts.frames) || !lr.waitWindow(ctx, i) {
					return
				}
				req := waldursim.RawEventRequest{OfferingUUID: lr.offering, ObjectType: "order",
					MessageID: fmt.Sprintf("benchproc-%d-%d", runID, i), Body: orderBody(i, lr.offering)}
				if _, err := admin.PublishRaw(ctx, req); err != nil {
					if ctx.Err() == nil {
						lr.failed.CompareAndSwap(nil, &err)
					}
					return
				}
				lr.sent.Add(1)
			}
		})
	}
	wg.Wait()
}

// waitWindow holds frame i back while opts.window frames are unacked. It
// reports false when ctx ended.
func (lr *loadRun) waitWindow(ctx context.Context, i int64) bool {
	for i-(lr.counter.acked.Load()-lr.base) >= int64(lr.opts.window) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return ctx.Err() == nil
}

func orderBody(i int64, offering string) string {
	return fmt.Sprintf(`{"order_uuid": "%032x", "order_state": "pending-provider", "offering_uuid": "%s"}`, i+1, offering)
}

// waitAcked polls /metrics every 20 ms until sitebus has acked all frames.
// It gives up when a publish failed or nothing moved for 30 s.
func (lr *loadRun) waitAcked(ctx context.Context) (scrape, error) {
	want := int64(lr.opts.frames)
	last, lastMove := int64(-1), time.Now()
	for {
		m, err := lr.counter.poll(ctx)
		acked := m.frames - lr.base
		switch {
		case err == nil && acked >= want:
			return m, nil
		case err == nil && acked != last:
			last, lastMove = acked, time.Now()
		}
		if perr := lr.failed.Load(); perr != nil {
			return m, fmt.Errorf("publish frame: %w", *perr)
		}
		if time.Since(lastMove) > 30*time.Second {
			return m, fmt.Errorf("stalled: %d of %d frames acked, %d sent", last, want, lr.sent.Load())
		}
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// streamMsgs is the number of messages in sitebus's events stream.
func streamMsgs(ctx context.Context, url string) (uint64, error) {
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		return 0, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, bus.EventsStream)
	if err != nil {
		return 0, fmt.Errorf("events stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("events stream info: %w", err)
	}
	return info.State.Msgs, nil
}
