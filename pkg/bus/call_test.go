package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

const svc = "echo"

// serveEcho serves the "provision" command of svc with h, answering with
// the request's order UUID, on a fast-retrying consumer.
func serveEcho(t *testing.T, b *bus.Bus, h func(n int32, req *sitebusv1.ProvisionCommand) error) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	sub, err := bus.Serve(testCtx(t), b, bus.ServeConfig{
		Service: svc, Command: "provision",
		Consumer: bus.ConsumerConfig{MaxDeliver: 3, Backoff: func(int) time.Duration { return 20 * time.Millisecond }},
	}, func(ctx context.Context, req *sitebusv1.ProvisionCommand) (*sitebusv1.CommandResult, error) {
		if err := h(calls.Add(1), req); err != nil {
			return nil, err
		}
		return &sitebusv1.CommandResult{OrderUuid: req.OrderUuid, Outcome: sitebusv1.Outcome_OUTCOME_SUCCEEDED}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	return &calls
}

func call(ctx context.Context, b *bus.Bus, key, order string) (*sitebusv1.CommandResult, error) {
	var resp sitebusv1.CommandResult
	err := b.Call(ctx, svc, "provision", &sitebusv1.ProvisionCommand{OrderUuid: order}, &resp, bus.WithKey(key))
	return &resp, err
}

func TestCallOutcomes(t *testing.T) {
	tests := map[string]struct {
		handler      func(n int32) error
		wantCalls    int32
		wantErr      string
		wantTerminal bool
	}{
		"success returns the response":                 {handler: func(int32) error { return nil }, wantCalls: 1},
		"terminal error comes back terminal, no retry": {handler: func(int32) error { return bus.Terminal(errors.New("not ours")) }, wantCalls: 1, wantErr: "echo provision: not ours", wantTerminal: true},
		"retryable error is retried until it succeeds": {handler: func(n int32) error { return map[bool]error{true: errors.New("blip")}[n < 3] }, wantCalls: 3},
		"persistent error comes back retryable after MaxDeliver": {handler: func(int32) error { return errors.New("down") }, wantCalls: 3,
			wantErr: "gave up after 3 attempts: down"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := newBus(t, bus.Config{})
			calls := serveEcho(t, b, func(n int32, _ *sitebusv1.ProvisionCommand) error { return tc.handler(n) })
			resp, err := call(testCtx(t), b, "k1", "o1")
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if resp.OrderUuid != "o1" {
					t.Errorf("response %v", resp)
				}
			} else {
				var re *bus.RemoteError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &re) {
					t.Fatalf("error %v, want a RemoteError with %q", err, tc.wantErr)
				}
				if bus.IsTerminal(err) != tc.wantTerminal {
					t.Errorf("terminal %v, want %v", bus.IsTerminal(err), tc.wantTerminal)
				}
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("handler ran %d times, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestCallWithTheSameKeyRunsOnce(t *testing.T) {
	b := newBus(t, bus.Config{})
	calls := serveEcho(t, b, func(int32, *sitebusv1.ProvisionCommand) error { return nil })
	ctx := testCtx(t)
	for i := range 3 {
		// The second and third request differ: the stored result wins.
		resp, err := call(ctx, b, "same", []string{"first", "second", "third"}[i])
		if err != nil {
			t.Fatal(err)
		}
		if resp.OrderUuid != "first" {
			t.Errorf("call %d got %q, want the first result", i, resp.OrderUuid)
		}
	}
	if _, err := call(ctx, b, "other", "x"); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("handler ran %d times, want 2 (once per key)", got)
	}
}

func TestCallerThatGaveUpGetsTheStoredResultWithoutRerun(t *testing.T) {
	b := newBus(t, bus.Config{})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	calls := serveEcho(t, b, func(int32, *sitebusv1.ProvisionCommand) error {
		once.Do(func() { close(entered) })
		<-release
		return nil
	})

	// The caller "crashes": its deadline passes while the command runs. It
	// passes once the command is known to run, not after a fixed time that
	// a loaded machine might spend before the command was even sent.
	short, cancel := context.WithCancelCause(testCtx(t))
	defer cancel(nil)
	go func() {
		select {
		case <-entered:
			cancel(context.DeadlineExceeded)
		case <-short.Done():
		}
	}()
	if _, err := call(short, b, "saga-1.step-a", "o1"); !errors.Is(err, context.DeadlineExceeded) || bus.IsTerminal(err) {
		t.Fatalf("error %v, want a retryable deadline error", err)
	}
	close(release)
	waitFor(t, "the command to finish", func() bool {
		e, err := b.JetStream().KeyValue(testCtx(t), bus.ResultsBucket)
		if err != nil {
			return false
		}
		_, err = e.Get(testCtx(t), "saga-1.step-a")
		return err == nil
	})

	resp, err := call(testCtx(t), b, "saga-1.step-a", "o1")
	if err != nil || resp.OrderUuid != "o1" {
		t.Fatalf("resumed call: %v, %v", resp, err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
}

func TestCallReissuesACommandTheServiceGaveUpOn(t *testing.T) {
	b := newBus(t, bus.Config{})
	var healthy atomic.Bool
	calls := serveEcho(t, b, func(int32, *sitebusv1.ProvisionCommand) error {
		if !healthy.Load() {
			return errors.New("down")
		}
		return nil
	})
	if _, err := call(testCtx(t), b, "k", "o1"); err == nil || bus.IsTerminal(err) {
		t.Fatalf("error %v, want a retryable failure", err)
	}
	healthy.Store(true)
	if _, err := call(testCtx(t), b, "k", "o1"); err != nil {
		t.Fatalf("re-issued call: %v", err)
	}
	if got := calls.Load(); got != 4 {
		t.Errorf("handler ran %d times, want 3 failed + 1", got)
	}
}

func TestCallTimesOutWhenNobodyServes(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx, cancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
	defer cancel()
	_, err := call(ctx, b, "k", "o1")
	if !errors.Is(err, context.DeadlineExceeded) || bus.IsTerminal(err) {
		t.Fatalf("error %v, want a retryable deadline error", err)
	}
}

func TestCallKeysTheBucketCannotHoldAreHashed(t *testing.T) {
	b := newBus(t, bus.Config{})
	calls := serveEcho(t, b, func(int32, *sitebusv1.ProvisionCommand) error { return nil })
	for range 2 {
		if _, err := call(testCtx(t), b, "saga:ns create/alpha ✓", "o1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
}
