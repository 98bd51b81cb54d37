package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/testenv"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/config"
)

// env is what every measured sitebus process runs against.
type env struct {
	bin      string
	only     string // `sitebus run --only`; "" = all services
	dataRoot string // "" = os.TempDir()
	broker   *rabbitmq.Broker
	fx       *waldursim.Fixture
	log      *slog.Logger
}

// instance is one `sitebus run` process with its own simulator (so the
// subscription queues of earlier runs get no events) and data directory.
type instance struct {
	proc     *harness.Process
	sim      *waldursim.Server
	dir      string
	httpAddr string
	natsURL  string
	started  time.Time
	// types are the object types sitebus subscribes to with this config.
	types []string
	// broker and vhost are where the simulator declares the queues, for
	// failure messages.
	broker *rabbitmq.Broker
	vhost  string
}

// start writes a fresh config and data directory and execs sitebus; the
// instance's started time is taken just before the exec.
func (e *env) start() (*instance, error) {
	simLog := slog.New(slog.DiscardHandler)
	sim, err := harness.StartSimulator("127.0.0.1:0", e.fx, e.broker, simLog)
	if err != nil {
		return nil, err
	}
	in := &instance{sim: sim, broker: e.broker, vhost: fixtureVhost(e.fx.Users[0].UUID)}
	if err := in.prepare(e); err != nil {
		in.stop()
		return nil, err
	}
	args := []string{"run", "-c", filepath.Join(in.dir, "config.yaml"), "--http-addr", in.httpAddr,
		"--nats-listen", strings.TrimPrefix(in.natsURL, "nats://"), "--data-dir", filepath.Join(in.dir, "data")}
	if e.only != "" {
		args = append(args, "--only", e.only)
	}
	in.started = time.Now()
	if in.proc, err = harness.StartProcess("sitebus", e.bin, args, nil); err != nil {
		in.stop()
		return nil, err
	}
	return in, nil
}

func (in *instance) prepare(e *env) error {
	cfg, err := harness.FixtureSite(e.fx, in.sim, e.broker)
	if err != nil {
		return err
	}
	if in.dir, err = os.MkdirTemp(e.dataRoot, "sitebus-benchproc-"); err != nil {
		return err
	}
	path := filepath.Join(in.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg.YAML()), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	loaded, err := config.Load(path)
	if err != nil {
		return fmt.Errorf("load the written config: %w", err)
	}
	for _, o := range loaded.Offerings {
		in.types = append(in.types, o.ObservableObjectTypes()...)
	}
	ports, err := testenv.FreePorts(2)
	if err != nil {
		return err
	}
	in.httpAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	in.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", ports[1])
	return nil
}

// waitReady polls /readyz every 5 ms and returns the time since the exec.
func (in *instance) waitReady(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := harness.WaitReadyz(ctx, in.httpAddr, 5*time.Millisecond, in.proc); err != nil {
		return 0, err
	}
	return time.Since(in.started), nil
}

// stop ends sitebus (SIGTERM), the simulator, and removes the directory.
func (in *instance) stop() {
	if in.proc != nil {
		if err := in.proc.Stop(20 * time.Second); err != nil {
			slog.Warn("sitebus stop", "err", err)
		}
	}
	if in.sim != nil {
		_ = in.sim.Close()
	}
	if in.dir != "" {
		_ = os.RemoveAll(in.dir)
	}
}

// waitConsumers waits until sitebus consumes every subscription queue the
// instance registered with its simulator.
func (e *env) waitConsumers(ctx context.Context, in *instance) ([]waldursim.SubscriptionQueue, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	queues, err := e.subscriptionQueues(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		_, err := e.broker.Mgmt().WaitQueue(ctx, q.Vhost, q.QueueName,
			func(qi rabbitmq.QueueInfo) bool { return qi.Consumers == 1 })
		if err != nil {
			return nil, fmt.Errorf("queue %s: waiting for a consumer: %w", q.QueueName, err)
		}
	}
	return queues, nil
}

// subscriptionQueues waits until the simulator has a queue for each of
// the instance's object types.
func (e *env) subscriptionQueues(ctx context.Context, in *instance) ([]waldursim.SubscriptionQueue, error) {
	for {
		var queues []waldursim.SubscriptionQueue
		for _, s := range in.sim.Subscriptions(in.sim.URL()) {
			queues = append(queues, s.Queues...)
		}
		if len(queues) >= len(in.types) {
			return queues, nil
		}
		if in.proc.Exited() {
			return nil, fmt.Errorf("sitebus exited after registering %d of %d subscription queues", len(queues), len(in.types))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sitebus registered %d of %d subscription queues: %w", len(queues), len(in.types), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// failed wraps err with what a failure needs to explain itself: where this
// instance's simulator, HTTP endpoint and NATS listened, whether sitebus
// still ran, the simulator's last API calls and the tail of sitebus's
// output.
func (in *instance) failed(err error) error {
	if err == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n--- sitebus instance: simulator %s, --http-addr %s, --nats-listen %s, dir %s",
		in.simURL(), in.httpAddr, strings.TrimPrefix(in.natsURL, "nats://"), in.dir)
	if in.proc != nil {
		state := "running"
		if in.proc.Exited() {
			state = "exited"
		}
		fmt.Fprintf(&b, ", pid %d (%s)", in.proc.Pid(), state)
	}
	b.WriteString(" ---\n")
	if in.broker != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		state, err := vhostState(ctx, in.broker, in.vhost)
		cancel()
		if err != nil {
			state = err.Error()
		}
		fmt.Fprintf(&b, "--- RabbitMQ %s, vhost %s: %s ---\n", in.broker.MgmtURL(), in.vhost, state)
	}
	if in.sim != nil {
		calls := in.sim.Calls()
		fmt.Fprintf(&b, "--- simulator API calls: %d", len(calls))
		if len(calls) > 10 {
			calls = calls[len(calls)-10:]
			b.WriteString(", the last 10")
		}
		b.WriteString(" ---\n")
		for _, c := range calls {
			fmt.Fprintf(&b, "%s %s %s -> %d (%s)\n", c.Time.Format("15:04:05.000"), c.Method, c.Path, c.Status, c.UserAgent)
		}
	}
	if in.proc != nil {
		fmt.Fprintf(&b, "--- sitebus output (tail) ---\n%s", in.proc.Tail(40))
	}
	return fmt.Errorf("%w%s", err, strings.TrimRight(b.String(), "\n"))
}

func (in *instance) simURL() string {
	if in.sim == nil {
		return "(none)"
	}
	return in.sim.URL()
}
