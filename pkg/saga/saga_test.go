package saga_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/saga"
)

// --- harness -----------------------------------------------------------------

func startServer(t *testing.T) *server.Server { return bustest.Server(t) }

// connect opens a connection of its own, so a test can cut one coordinator
// off the bus (a crash) while another keeps working.
func connect(t *testing.T, s *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := bustest.Connect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func logger() *slog.Logger {
	if testing.Verbose() {
		return slog.Default()
	}
	return slog.New(slog.DiscardHandler)
}

func newCoordinator(t *testing.T, js jetstream.JetStream, cfg saga.Config, defs []saga.Definition, acts map[string]saga.Activity) *saga.Coordinator {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = logger()
	}
	if cfg.LeaseTTL == 0 {
		// Far longer than any test: a lease only expires where a test kills
		// a coordinator (and sets its own TTL), never because a loaded
		// machine delayed a renewal and the same step ran twice.
		cfg.LeaseTTL = time.Minute
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 200 * time.Millisecond
	}
	c, err := saga.New(js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if err := c.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	for name, fn := range acts {
		c.RegisterActivity(name, fn)
	}
	return c
}

// run runs c until the returned stop is called (or the test ends).
func run(t *testing.T, c *saga.Coordinator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func wait(t *testing.T, c *saga.Coordinator, id string) saga.Saga {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	s, err := c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fast(int) time.Duration { return 10 * time.Millisecond }

// threeSteps is a definition whose steps a, b, c run <step>.do and are undone
// by <step>.undo.
func threeSteps(name string, mod func(*saga.Step)) saga.Definition {
	d := saga.Definition{Name: name}
	for _, s := range []string{"a", "b", "c"} {
		st := saga.Step{Name: s, Action: s + ".do", Compensation: s + ".undo", Timeout: 5 * time.Second, MaxAttempts: 3, CompensationMaxAttempts: 3, Backoff: fast}
		if mod != nil {
			mod(&st)
		}
		d.Steps = append(d.Steps, st)
	}
	return d
}

// world records activity calls and applies side effects idempotently: an
// effect is keyed by saga, step and phase, and applying it again is a no-op,
// as it must be for a real activity.
type world struct {
	mu      sync.Mutex
	calls   []string
	applied map[string]int // effect key → times it took effect (must stay 1)
	tries   map[string]int // activity name → calls
	running map[string]int // effect key → executions in progress
	overlap int            // executions that started while another was in progress
}

func newWorld() *world {
	return &world{applied: map[string]int{}, tries: map[string]int{}, running: map[string]int{}}
}

type behaviour func(ctx context.Context, try int, in saga.ActivityInput) (json.RawMessage, error)

// activities builds do/undo activities for steps; behave overrides what an
// activity does before its effect is applied (an error stops the effect).
func (w *world) activities(steps []string, behave map[string]behaviour) map[string]saga.Activity {
	acts := map[string]saga.Activity{}
	for _, s := range steps {
		for _, name := range []string{s + ".do", s + ".undo"} {
			acts[name] = func(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
				key := in.SagaID + "/" + name
				w.mu.Lock()
				w.calls = append(w.calls, name)
				w.tries[name]++
				try := w.tries[name]
				w.running[key]++
				if w.running[key] > 1 {
					w.overlap++
				}
				w.mu.Unlock()
				defer func() {
					w.mu.Lock()
					w.running[key]--
					w.mu.Unlock()
				}()
				if b := behave[name]; b != nil {
					out, err := b(ctx, try, in)
					if err != nil || out != nil {
						if err == nil {
							w.apply(key)
						}
						return out, err
					}
				}
				w.apply(key)
				return json.RawMessage(`{"by":"` + name + `"}`), nil
			}
		}
	}
	return acts
}

func (w *world) apply(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, done := w.applied[key]; !done {
		w.applied[key] = 1
	}
}

func (w *world) snapshot() ([]string, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cp := map[string]int{}
	for k, v := range w.applied {
		cp[k] = v
	}
	return slices.Clone(w.calls), cp
}

func stepStatuses(s saga.Saga) string {
	var parts []string
	for _, st := range s.Steps {
		parts = append(parts, st.Name+"="+string(st.Status))
	}
	return strings.Join(parts, " ")
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return 0
}

// --- behaviour ---------------------------------------------------------------

func TestSagaOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	tests := map[string]struct {
		mod        func(*saga.Step)
		behave     map[string]behaviour
		wantCalls  []string
		wantStatus saga.Status
		check      func(t *testing.T, s saga.Saga)
	}{
		"all steps succeed": {
			wantCalls:  []string{"a.do", "b.do", "c.do"},
			wantStatus: saga.StatusSucceeded,
			check: func(t *testing.T, s saga.Saga) {
				if got := stepStatuses(s); got != "a=done b=done c=done" {
					t.Errorf("steps: %s", got)
				}
				if st, _ := s.Step("b"); string(st.Output) != `{"by":"b.do"}` {
					t.Errorf("output of b = %s", st.Output)
				}
			},
		},
		"terminal failure compensates completed steps last-in first-out": {
			behave: map[string]behaviour{
				"c.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
					return nil, bus.Terminal(fmt.Errorf("CR exists: %w", errBoom))
				},
			},
			wantCalls:  []string{"a.do", "b.do", "c.do", "b.undo", "a.undo"},
			wantStatus: saga.StatusCompensated,
			check: func(t *testing.T, s saga.Saga) {
				if got := stepStatuses(s); got != "a=compensated b=compensated c=failed" {
					t.Errorf("steps: %s", got)
				}
				if !strings.Contains(s.Error, "step c") || !strings.Contains(s.Error, "CR exists: boom") {
					t.Errorf("saga error %q does not keep the failure", s.Error)
				}
				if st, _ := s.Step("c"); st.Attempts != 1 {
					t.Errorf("terminal failure retried: %d attempts", st.Attempts)
				}
			},
		},
		"retryable failure succeeds on a later attempt": {
			behave: map[string]behaviour{
				"b.do": func(_ context.Context, try int, _ saga.ActivityInput) (json.RawMessage, error) {
					if try < 3 {
						return nil, errors.New("keycloak unavailable")
					}
					return nil, nil
				},
			},
			wantCalls:  []string{"a.do", "b.do", "b.do", "b.do", "c.do"},
			wantStatus: saga.StatusSucceeded,
			check: func(t *testing.T, s saga.Saga) {
				if st, _ := s.Step("b"); st.Attempts != 3 || st.Error != "" {
					t.Errorf("step b: %d attempts, error %q", st.Attempts, st.Error)
				}
			},
		},
		"retries exhausted compensate the completed steps": {
			mod: func(s *saga.Step) { s.MaxAttempts = 2 },
			behave: map[string]behaviour{
				"b.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
					return nil, errors.New("still down")
				},
			},
			wantCalls:  []string{"a.do", "b.do", "b.do", "a.undo"},
			wantStatus: saga.StatusCompensated,
			check: func(t *testing.T, s saga.Saga) {
				if got := stepStatuses(s); got != "a=compensated b=failed c=skipped" {
					t.Errorf("steps: %s", got)
				}
				if !strings.Contains(s.Error, "after 2 attempt(s): still down") {
					t.Errorf("saga error %q", s.Error)
				}
			},
		},
		"step timeout counts as a failed attempt": {
			// Only b has the short timeout: a, c must not trip it on a loaded machine.
			mod: func(s *saga.Step) {
				if s.Name == "b" {
					s.Timeout = 300 * time.Millisecond
				}
			},
			behave: map[string]behaviour{
				"b.do": func(ctx context.Context, try int, _ saga.ActivityInput) (json.RawMessage, error) {
					if try == 1 {
						<-ctx.Done() // hangs until the step timeout
						return nil, ctx.Err()
					}
					return nil, nil
				},
			},
			wantCalls:  []string{"a.do", "b.do", "b.do", "c.do"},
			wantStatus: saga.StatusSucceeded,
			check: func(t *testing.T, s saga.Saga) {
				if st, _ := s.Step("b"); st.Attempts != 2 {
					t.Errorf("step b: %d attempts, want 2", st.Attempts)
				}
			},
		},
		"first step failing leaves nothing to undo": {
			behave: map[string]behaviour{
				"a.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
					return nil, bus.Terminal(errors.New("invalid slug"))
				},
			},
			wantCalls:  []string{"a.do"},
			wantStatus: saga.StatusFailed,
			check: func(t *testing.T, s saga.Saga) {
				if got := stepStatuses(s); got != "a=failed b=skipped c=skipped" {
					t.Errorf("steps: %s", got)
				}
			},
		},
		"compensation sees its action's output and the saga input": {
			behave: map[string]behaviour{
				"a.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
					return json.RawMessage(`{"created":["ns_demo_admin"]}`), nil
				},
				"c.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
					return nil, bus.Terminal(errors.New("no"))
				},
				"a.undo": func(_ context.Context, _ int, in saga.ActivityInput) (json.RawMessage, error) {
					var out struct{ Created []string }
					if ok, err := in.DecodeOutput("a", &out); !ok || err != nil || len(out.Created) != 1 || out.Created[0] != "ns_demo_admin" {
						return nil, bus.Terminal(fmt.Errorf("compensation got output %v (%v, %v)", out, ok, err))
					}
					var input struct{ Slug string }
					if err := in.DecodeInput(&input); err != nil || input.Slug != "demo" || !in.Compensating || in.SagaError == "" {
						return nil, bus.Terminal(fmt.Errorf("compensation got input %+v (%v)", in, err))
					}
					return nil, nil
				},
			},
			wantCalls:  []string{"a.do", "b.do", "c.do", "b.undo", "a.undo"},
			wantStatus: saga.StatusCompensated,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t)
			_, js := connect(t, srv)
			w := newWorld()
			reg := prometheus.NewRegistry()
			c := newCoordinator(t, js, saga.Config{Registerer: reg}, []saga.Definition{threeSteps("ns-create", tc.mod)}, w.activities([]string{"a", "b", "c"}, tc.behave))
			run(t, c)
			if _, err := c.Start(testCtx(t), "ns-create", "order-1", map[string]string{"slug": "demo"}); err != nil {
				t.Fatal(err)
			}
			s := wait(t, c, "order-1")
			calls, _ := w.snapshot()
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tc.wantCalls)
			}
			if s.Status != tc.wantStatus {
				t.Errorf("status = %s, want %s (error %q, park reason %q)", s.Status, tc.wantStatus, s.Error, s.ParkReason)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
			waitFor(t, "outcome metric", func() bool {
				return metricValue(t, reg, "sitebus_sagas_total", map[string]string{"definition": "ns-create", "outcome": string(tc.wantStatus)}) == 1
			})
		})
	}
}

func TestParkedCompensationIsPublishedAndRetried(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv)
	ctx := testCtx(t)
	w := newWorld()
	var faulty atomic.Bool
	faulty.Store(true)
	reg := prometheus.NewRegistry()
	def := threeSteps("ns-create", func(s *saga.Step) { s.CompensationMaxAttempts = 2 })
	c := newCoordinator(t, js, saga.Config{Registerer: reg}, []saga.Definition{def}, w.activities([]string{"a", "b", "c"}, map[string]behaviour{
		"c.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
			return nil, bus.Terminal(errors.New("CR create refused"))
		},
		"a.undo": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
			if faulty.Load() {
				return nil, errors.New("keycloak down")
			}
			return nil, nil
		},
	}))
	run(t, c)
	if _, err := c.Start(ctx, "ns-create", "order-7", nil); err != nil {
		t.Fatal(err)
	}
	s := wait(t, c, "order-7")
	if s.Status != saga.StatusParked || s.ParkedIn != saga.StatusCompensating {
		t.Fatalf("status = %s (parked in %q), want parked in compensating; steps %s", s.Status, s.ParkedIn, stepStatuses(s))
	}
	if got := stepStatuses(s); got != "a=compensating b=compensated c=failed" {
		t.Errorf("steps: %s", got)
	}
	if st, _ := s.Step("a"); st.CompensationAttempts != 2 || !strings.Contains(st.CompensationError, "keycloak down") {
		t.Errorf("step a: %d compensation attempts, error %q", st.CompensationAttempts, st.CompensationError)
	}
	if !strings.Contains(s.ParkReason, "compensation of step a failed after 2 attempt(s)") || !strings.Contains(s.Error, "CR create refused") {
		t.Errorf("park reason %q, error %q", s.ParkReason, s.Error)
	}

	// Published on saga.parked.<definition>.
	stream, err := js.Stream(ctx, saga.Stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, saga.OutcomeSubject(saga.StatusParked, "ns-create"))
	if err != nil {
		t.Fatalf("no parked message: %v", err)
	}
	var published saga.Saga
	if err := json.Unmarshal(msg.Data, &published); err != nil || published.ID != "order-7" || published.Status != saga.StatusParked {
		t.Errorf("parked message = %s (%v)", msg.Data, err)
	}
	if msg.Header.Get(saga.HeaderSagaID) != "order-7" {
		t.Errorf("parked message headers %v", msg.Header)
	}
	// Both metrics change after the record Wait saw is written, each on its
	// own goroutine (the gauge in Run's watcher, the counter in the driver
	// after its write): wait for each one, not for one and then read the other.
	waitFor(t, "parked gauge = 1", func() bool {
		return metricValue(t, reg, "sitebus_sagas_parked", map[string]string{"definition": "ns-create"}) == 1
	})
	waitFor(t, "sitebus_sagas_total{outcome=parked} = 1", func() bool {
		return metricValue(t, reg, "sitebus_sagas_total", map[string]string{"definition": "ns-create", "outcome": "parked"}) == 1
	})
	if _, err := c.Retry(ctx, "order-1"); !errors.Is(err, saga.ErrNotFound) {
		t.Errorf("Retry of an unknown saga: %v", err)
	}

	// The fault is cleared; Retry resumes the compensation.
	faulty.Store(false)
	if _, err := c.Retry(ctx, "order-7"); err != nil {
		t.Fatal(err)
	}
	s = wait(t, c, "order-7")
	if s.Status != saga.StatusCompensated {
		t.Fatalf("after retry: %s (%s)", s.Status, s.ParkReason)
	}
	if got := stepStatuses(s); got != "a=compensated b=compensated c=failed" {
		t.Errorf("steps: %s", got)
	}
	if !strings.Contains(s.Error, "CR create refused") {
		t.Errorf("original error lost: %q", s.Error)
	}
	waitFor(t, "parked gauge = 0", func() bool {
		return metricValue(t, reg, "sitebus_sagas_parked", map[string]string{"definition": "ns-create"}) == 0
	})
	waitFor(t, "sitebus_sagas_total{outcome=compensated} = 1", func() bool {
		return metricValue(t, reg, "sitebus_sagas_total", map[string]string{"definition": "ns-create", "outcome": "compensated"}) == 1
	})
	if v := metricValue(t, reg, "sitebus_sagas_total", map[string]string{"definition": "ns-create", "outcome": "parked"}); v != 1 {
		t.Errorf("sitebus_sagas_total{outcome=parked} = %v after the retry, want still 1", v)
	}
	if _, err := c.Retry(ctx, "order-7"); !errors.Is(err, saga.ErrNotParked) {
		t.Errorf("Retry of a compensated saga: %v", err)
	}
	calls, _ := w.snapshot()
	if want := []string{"a.do", "b.do", "c.do", "b.undo", "a.undo", "a.undo", "a.undo"}; !slices.Equal(calls, want) {
		t.Errorf("calls = %v, want %v", calls, want)
	}
	if _, err := stream.GetLastMsgForSubject(ctx, saga.OutcomeSubject(saga.StatusCompensated, "ns-create")); err != nil {
		t.Errorf("no compensated outcome message: %v", err)
	}
}

func TestStartingTheSameIDTwiceRunsOnce(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv)
	ctx := testCtx(t)
	w := newWorld()
	other := saga.Definition{Name: "other", Steps: []saga.Step{{Name: "a", Action: "a.do"}}}
	c := newCoordinator(t, js, saga.Config{}, []saga.Definition{threeSteps("ns-create", nil), other}, w.activities([]string{"a", "b", "c"}, nil))
	first, err := c.Start(ctx, "ns-create", "order-2", map[string]string{"slug": "one"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Start(ctx, "ns-create", "order-2", map[string]string{"slug": "two"})
	if err != nil {
		t.Fatalf("second Start: %v", err)
	}
	if second.Revision != first.Revision || string(second.Input) != `{"slug":"one"}` {
		t.Errorf("second Start returned %+v, want the existing saga", second)
	}
	if _, err := c.Start(ctx, "other", "order-2", nil); !errors.Is(err, saga.ErrConflict) {
		t.Errorf("Start with another definition: %v", err)
	}
	if _, err := c.Start(ctx, "nope", "order-3", nil); !errors.Is(err, saga.ErrUnknownDefinition) {
		t.Errorf("Start with an unknown definition: %v", err)
	}
	if _, err := c.Start(ctx, "ns-create", "order.3>", nil); err == nil {
		t.Error("Start accepted an ID that is not a subject token")
	}
	run(t, c)
	if _, err := c.Start(ctx, "ns-create", "order-2", nil); err != nil {
		t.Fatal(err)
	}
	if s := wait(t, c, "order-2"); s.Status != saga.StatusSucceeded {
		t.Fatalf("status %s", s.Status)
	}
	calls, _ := w.snapshot()
	if want := []string{"a.do", "b.do", "c.do"}; !slices.Equal(calls, want) {
		t.Errorf("calls = %v, want %v", calls, want)
	}
	list, err := c.List(ctx, saga.Filter{Status: []saga.Status{saga.StatusSucceeded}})
	if err != nil || len(list) != 1 || list[0].ID != "order-2" {
		t.Errorf("List = %v, %v", list, err)
	}
	if list, _ := c.List(ctx, saga.Filter{Definition: "other"}); len(list) != 0 {
		t.Errorf("List by definition = %v", list)
	}
}

// TestCrashResumesExactlyOnce kills a coordinator while an activity is in
// flight (its connection is cut, so it can write nothing more) and checks that
// a second coordinator on the same bucket finishes the saga with every side
// effect applied once.
func TestCrashResumesExactlyOnce(t *testing.T) {
	tests := map[string]struct {
		blockOn    string // the activity the first coordinator dies in
		behave     map[string]behaviour
		wantStatus saga.Status
		wantCalls  []string
		wantSteps  string
		wantEffect int
	}{
		"crash during an action": {
			blockOn:    "b.do",
			wantStatus: saga.StatusSucceeded,
			wantCalls:  []string{"a.do", "b.do", "b.do", "c.do"},
			wantSteps:  "a=done b=done c=done",
			wantEffect: 3,
		},
		"crash during a compensation": {
			blockOn: "b.undo",
			behave: map[string]behaviour{
				"c.do": func(context.Context, int, saga.ActivityInput) (json.RawMessage, error) {
					return nil, bus.Terminal(errors.New("CR create refused"))
				},
			},
			wantStatus: saga.StatusCompensated,
			wantCalls:  []string{"a.do", "b.do", "c.do", "b.undo", "b.undo", "a.undo"},
			wantSteps:  "a=compensated b=compensated c=failed",
			wantEffect: 4, // a.do, b.do, b.undo, a.undo; c.do failed
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t)
			nc1, js1 := connect(t, srv)
			_, js2 := connect(t, srv)
			ctx := testCtx(t)
			w := newWorld()
			entered, gate := make(chan struct{}), make(chan struct{})
			t.Cleanup(func() { close(gate) })
			var blocked atomic.Bool
			behave := map[string]behaviour{}
			for k, v := range tc.behave {
				behave[k] = v
			}
			inner := behave[tc.blockOn]
			behave[tc.blockOn] = func(ctx context.Context, try int, in saga.ActivityInput) (json.RawMessage, error) {
				if blocked.CompareAndSwap(false, true) {
					close(entered)
					<-gate // the process "dies" here: this call never returns a verdict
				}
				if inner != nil {
					return inner(ctx, try, in)
				}
				return nil, nil
			}
			acts := w.activities([]string{"a", "b", "c"}, behave)
			def := threeSteps("ns-create", nil)
			cfg := saga.Config{LeaseTTL: time.Second, ShutdownGrace: 50 * time.Millisecond}

			cfg.Owner = "coordinator-a"
			a := newCoordinator(t, js1, cfg, []saga.Definition{def}, acts)
			ctxA, crash := context.WithCancel(context.Background())
			t.Cleanup(crash)
			go func() { _ = a.Run(ctxA) }() // its error after the crash is expected
			if _, err := a.Start(ctx, "ns-create", "order-9", map[string]string{"slug": "demo"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-entered:
			case <-time.After(30 * time.Second):
				t.Fatal("the blocking activity was never called")
			}
			nc1.Close() // crash: nothing more reaches the bucket
			crash()

			// a's lease (1 s, in the record) is what b waits out. b's own
			// lease is longer, so that a slow renewal on a loaded machine
			// does not make b abandon and re-run its own step (b notices
			// a's expiry within TTL/3).
			cfg.Owner, cfg.LeaseTTL = "coordinator-b", 3*time.Second
			b := newCoordinator(t, js2, cfg, []saga.Definition{def}, acts)
			mid, err := b.Get(ctx, "order-9")
			if err != nil {
				t.Fatal(err)
			}
			step := strings.TrimSuffix(strings.TrimSuffix(tc.blockOn, ".do"), ".undo")
			if st, _ := mid.Step(step); !st.InFlight || mid.Owner != "coordinator-a" {
				t.Fatalf("record after the crash: owner %q, step %s %+v", mid.Owner, step, st)
			}
			run(t, b)
			s := wait(t, b, "order-9")
			if s.Status != tc.wantStatus {
				t.Fatalf("status %s, want %s (%s; %s)", s.Status, tc.wantStatus, s.Error, s.ParkReason)
			}
			if got := stepStatuses(s); got != tc.wantSteps {
				t.Errorf("steps: %s, want %s", got, tc.wantSteps)
			}
			if s.Owner != "coordinator-b" {
				t.Errorf("finished by %q", s.Owner)
			}
			calls, applied := w.snapshot()
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tc.wantCalls)
			}
			for key, n := range applied {
				if n != 1 {
					t.Errorf("effect %s applied %d times", key, n)
				}
			}
			if len(applied) != tc.wantEffect {
				t.Errorf("effects applied: %v", applied)
			}
			// The interrupted attempt was re-run, not counted as a new one.
			st, _ := s.Step(step)
			attempts := st.Attempts
			if strings.HasSuffix(tc.blockOn, ".undo") {
				attempts = st.CompensationAttempts
			}
			if attempts != 1 {
				t.Errorf("step %s: %d attempts recorded, want 1", step, attempts)
			}
		})
	}
}

func TestGracefulShutdownHandsSagaOver(t *testing.T) {
	srv := startServer(t)
	_, js1 := connect(t, srv)
	_, js2 := connect(t, srv)
	ctx := testCtx(t)
	w := newWorld()
	entered := make(chan struct{})
	var once sync.Once
	acts := w.activities([]string{"a", "b", "c"}, map[string]behaviour{
		"b.do": func(ctx context.Context, try int, _ saga.ActivityInput) (json.RawMessage, error) {
			if try == 1 {
				once.Do(func() { close(entered) })
				<-ctx.Done() // honours cancellation, as activities should
				return nil, ctx.Err()
			}
			return nil, nil
		},
	})
	def := threeSteps("ns-create", nil)
	// A lease far longer than the test: only a release lets b take over. The
	// activity returns as soon as it is cancelled, so the grace is never
	// used up; a short one would make the release depend on scheduling.
	cfg := saga.Config{LeaseTTL: 10 * time.Minute, ShutdownGrace: 20 * time.Second, Owner: "coordinator-a"}
	a := newCoordinator(t, js1, cfg, []saga.Definition{def}, acts)
	stopA := run(t, a)
	if _, err := a.Start(ctx, "ns-create", "order-4", nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	stopA()
	mid, err := a.Get(ctx, "order-4")
	if err != nil {
		t.Fatal(err)
	}
	if mid.Owner != "" || mid.Status != saga.StatusRunning {
		t.Fatalf("after shutdown: owner %q status %s", mid.Owner, mid.Status)
	}
	cfg.Owner = "coordinator-b"
	b := newCoordinator(t, js2, cfg, []saga.Definition{def}, acts)
	run(t, b)
	if s := wait(t, b, "order-4"); s.Status != saga.StatusSucceeded || s.Owner != "coordinator-b" {
		t.Fatalf("status %s owner %s", s.Status, s.Owner)
	}
}

// TestConcurrentCoordinatorsNeverOverlap runs two coordinators on the same
// bucket and checks that no activity runs twice at the same time, and that
// without crashes every activity runs exactly once.
func TestConcurrentCoordinatorsNeverOverlap(t *testing.T) {
	srv := startServer(t)
	_, js1 := connect(t, srv)
	_, js2 := connect(t, srv)
	ctx := testCtx(t)
	w := newWorld()
	slow := func(ctx context.Context, _ int, in saga.ActivityInput) (json.RawMessage, error) {
		select {
		case <-time.After(15 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if in.Step == "c" && !in.Compensating && strings.HasSuffix(in.SagaID, "-odd") {
			return nil, bus.Terminal(errors.New("refused"))
		}
		return nil, nil
	}
	behave := map[string]behaviour{}
	for _, s := range []string{"a", "b", "c"} {
		behave[s+".do"], behave[s+".undo"] = slow, slow
	}
	acts := w.activities([]string{"a", "b", "c"}, behave)
	def := threeSteps("ns-create", nil)
	a := newCoordinator(t, js1, saga.Config{Owner: "coordinator-a", Concurrency: 4}, []saga.Definition{def}, acts)
	b := newCoordinator(t, js2, saga.Config{Owner: "coordinator-b", Concurrency: 4}, []saga.Definition{def}, acts)
	run(t, a)
	run(t, b)
	var ids []string
	for i := range 16 {
		id := fmt.Sprintf("order-%d", i)
		if i%2 == 1 {
			id += "-odd"
		}
		ids = append(ids, id)
		starter := a
		if i%2 == 0 {
			starter = b
		}
		if _, err := starter.Start(ctx, "ns-create", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	owners := map[string]int{}
	for _, id := range ids {
		s := wait(t, a, id)
		want := saga.StatusSucceeded
		if strings.HasSuffix(id, "-odd") {
			want = saga.StatusCompensated
		}
		if s.Status != want {
			t.Errorf("%s: %s, want %s", id, s.Status, want)
		}
		owners[s.Owner]++
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.overlap != 0 {
		t.Errorf("%d activity executions overlapped another of the same step", w.overlap)
	}
	runs := map[string]int{}
	for _, c := range w.calls {
		runs[c]++
	}
	// 8 sagas × 3 actions + 8 × (3 actions + 2 compensations), each once.
	if got, want := len(w.calls), 8*3+8*5; got != want {
		t.Errorf("%d activity calls, want %d (%v)", got, want, runs)
	}
	t.Logf("sagas finished per coordinator: %v", owners)
}

func TestTraceContinuesFromStart(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	w := newWorld()
	c := newCoordinator(t, js, saga.Config{TracerProvider: tp}, []saga.Definition{threeSteps("ns-create", nil)}, w.activities([]string{"a", "b", "c"}, nil))
	run(t, c)
	ctx, order := tp.Tracer("test").Start(testCtx(t), "order")
	s, err := c.Start(ctx, "ns-create", "order-5", nil)
	order.End()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.TraceParent, order.SpanContext().TraceID().String()) {
		t.Errorf("traceparent %q does not carry the order's trace", s.TraceParent)
	}
	wait(t, c, "order-5")
	var sagaSpan sdktrace.ReadOnlySpan
	waitFor(t, "saga span", func() bool {
		for _, sp := range rec.Ended() {
			if sp.Name() == "saga ns-create" {
				sagaSpan = sp
				return true
			}
		}
		return false
	})
	if sagaSpan.Parent().SpanID() != order.SpanContext().SpanID() {
		t.Errorf("saga span's parent is %s, want the order span", sagaSpan.Parent().SpanID())
	}
	steps := 0
	for _, sp := range rec.Ended() {
		if strings.HasPrefix(sp.Name(), "saga.action ") {
			steps++
			if sp.Parent().SpanID() != sagaSpan.SpanContext().SpanID() || sp.SpanContext().TraceID() != order.SpanContext().TraceID() {
				t.Errorf("span %s is not a child of the saga span", sp.Name())
			}
		}
	}
	if steps != 3 {
		t.Errorf("%d step spans, want 3", steps)
	}
}

func TestDefinitionValidation(t *testing.T) {
	tests := map[string]struct {
		def  saga.Definition
		want string
	}{
		"name with a dot":     {saga.Definition{Name: "a.b", Steps: []saga.Step{{Name: "x", Action: "x"}}}, "definition name"},
		"no steps":            {saga.Definition{Name: "empty"}, "has no steps"},
		"duplicate step name": {saga.Definition{Name: "d", Steps: []saga.Step{{Name: "x", Action: "x"}, {Name: "x", Action: "y"}}}, "used twice"},
		"step without action": {saga.Definition{Name: "d", Steps: []saga.Step{{Name: "x"}}}, "has no action"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.def.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunRefusesUnregisteredActivities(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv)
	c := newCoordinator(t, js, saga.Config{}, []saga.Definition{threeSteps("ns-create", nil)}, nil)
	if err := c.Run(testCtx(t)); err == nil || !strings.Contains(err.Error(), `"a.do" is not registered`) {
		t.Errorf("Run = %v", err)
	}
}

func TestFormatSaga(t *testing.T) {
	s := saga.Saga{
		ID: "order-1", Definition: "ns-create", Status: saga.StatusParked, Error: "step c failed (not retryable): CR exists",
		ParkReason: "compensation of step a failed after 10 attempt(s): keycloak down", ParkedIn: saga.StatusCompensating, Parks: 1,
		Steps: []saga.StepState{
			{Name: "a", Status: saga.StepCompensating, Attempts: 1, CompensationAttempts: 10, CompensationError: "keycloak down"},
			{Name: "b", Status: saga.StepCompensated, Attempts: 1, CompensationAttempts: 1},
			{Name: "c", Status: saga.StepFailed, Attempts: 1, Error: "CR exists"},
		},
	}
	var buf bytes.Buffer
	if err := saga.FormatSaga(&buf, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"status:      parked", "retry resumes it compensating", "compensation error: keycloak down", "c     failed"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := saga.FormatList(&buf, []saga.Saga{s}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "a (compensating)") {
		t.Errorf("list output:\n%s", buf.String())
	}
}

func TestFinishedSagasExpireAfterRetentionAndParkedOnesStay(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv)
	ctx := testCtx(t)
	w := newWorld()
	reg := prometheus.NewRegistry()
	def := threeSteps("ns-create", func(s *saga.Step) { s.CompensationMaxAttempts = 1 })
	c := newCoordinator(t, js, saga.Config{Registerer: reg, Retention: 300 * time.Millisecond}, []saga.Definition{def}, w.activities([]string{"a", "b", "c"}, map[string]behaviour{
		"c.do": func(_ context.Context, _ int, in saga.ActivityInput) (json.RawMessage, error) {
			if in.SagaID != "ok-1" {
				return nil, bus.Terminal(errors.New("CR create refused"))
			}
			return nil, nil
		},
		"a.undo": func(_ context.Context, _ int, in saga.ActivityInput) (json.RawMessage, error) {
			if in.SagaID == "parked-1" {
				return nil, bus.Terminal(errors.New("keycloak refused"))
			}
			return nil, nil
		},
	}))
	run(t, c)

	// The parked saga finishes first, so the sweep that removes the later
	// ones has its last change past the retention too: it stays because it
	// is parked, not because it is young.
	if _, err := c.Start(ctx, "ns-create", "parked-1", nil); err != nil {
		t.Fatal(err)
	}
	if s := wait(t, c, "parked-1"); s.Status != saga.StatusParked {
		t.Fatalf("parked-1: %s", s.Status)
	}
	for _, id := range []string{"ok-1", "comp-1"} {
		if _, err := c.Start(ctx, "ns-create", id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if s := wait(t, c, "ok-1"); s.Status != saga.StatusSucceeded {
		t.Fatalf("ok-1: %s", s.Status)
	}
	if s := wait(t, c, "comp-1"); s.Status != saga.StatusCompensated {
		t.Fatalf("comp-1: %s", s.Status)
	}

	for _, id := range []string{"ok-1", "comp-1"} {
		waitFor(t, id+" removed", func() bool {
			_, err := c.Get(ctx, id)
			return errors.Is(err, saga.ErrNotFound)
		})
	}
	if s, err := c.Get(ctx, "parked-1"); err != nil || s.Status != saga.StatusParked {
		t.Fatalf("parked saga after the sweep: %v, %v", s.Status, err)
	}
	left, err := c.List(ctx, saga.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].ID != "parked-1" {
		t.Errorf("List after the sweep = %v, want only parked-1", left)
	}
	waitFor(t, "sitebus_sagas_expired_total = 2", func() bool {
		return metricValue(t, reg, "sitebus_sagas_expired_total", map[string]string{"definition": "ns-create"}) == 2
	})

	// Past its retention an ID is free again: the dedupe of Start lasts as
	// long as the retention, which is why sitebus keeps it no shorter than
	// the events stream's max age.
	s, err := c.Start(ctx, "ns-create", "ok-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != saga.StatusRunning {
		t.Errorf("restarted ok-1: %s", s.Status)
	}
	if s := wait(t, c, "ok-1"); s.Status != saga.StatusSucceeded {
		t.Fatalf("ok-1 again: %s", s.Status)
	}
}

func TestNegativeRetentionIsRefused(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv)
	if _, err := saga.New(js, saga.Config{Retention: -time.Second}); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Errorf("New with a negative retention: %v", err)
	}
}
