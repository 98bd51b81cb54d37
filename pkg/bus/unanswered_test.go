package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestRetryUnanswered(t *testing.T) {
	answered := &jetstream.APIError{Code: 400, ErrorCode: 10071, Description: "wrong last sequence"}
	tests := map[string]struct {
		errs      []error // f's results, in turn; then it blocks until its ctx ends
		ctx       time.Duration
		wantCalls int
		wantErr   error
	}{
		"success at once":                           {errs: []error{nil}, ctx: time.Minute, wantCalls: 1},
		"no responders, then success":               {errs: []error{jetstream.ErrNoStreamResponse, nil}, ctx: time.Minute, wantCalls: 2},
		"cluster unavailable, then success":         {errs: []error{&jetstream.APIError{Code: 503, ErrorCode: 10008}, nil}, ctx: time.Minute, wantCalls: 2},
		"an answer is not repeated":                 {errs: []error{answered}, ctx: time.Minute, wantCalls: 1, wantErr: answered},
		"unanswered until the caller's ctx expires": {errs: []error{jetstream.ErrNoStreamResponse, jetstream.ErrNoStreamResponse, jetstream.ErrNoStreamResponse}, ctx: 120 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.ctx)
			defer cancel()
			calls := 0
			err := retryUnanswered(ctx, func(actx context.Context) error {
				calls++
				if dl, ok := actx.Deadline(); !ok || time.Until(dl) > requestTimeout {
					t.Errorf("attempt %d: deadline %v, want within %s", calls, dl, requestTimeout)
				}
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				<-actx.Done()
				return actx.Err()
			})
			switch {
			case tc.wantErr == context.DeadlineExceeded:
				if err == nil || ctx.Err() == nil {
					t.Fatalf("err %v before the caller's ctx ended", err)
				}
			case !errors.Is(err, tc.wantErr):
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantCalls > 0 && calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls, tc.wantCalls)
			}
		})
	}
}

// An attempt that hangs (its answer lost) is cut at requestTimeout and
// made again; the caller's ctx, minutes long, is not waited out.
func TestRetryUnansweredCutsAHangingAttempt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	calls := 0
	err := retryUnanswered(ctx, func(actx context.Context) error {
		calls++
		if calls == 1 {
			<-actx.Done() // no answer
			return actx.Err()
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	if took := time.Since(start); took > requestTimeout+5*time.Second {
		t.Errorf("took %s", took)
	}
}

// hangingKV is a bucket whose first Get and every Update are never
// answered (their server died), the way a jetstream.KeyValue behaves then:
// it waits for the request's deadline.
type hangingKV struct {
	jetstream.KeyValue
	gets, updates int
}

func (kv *hangingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	kv.gets++
	if kv.gets == 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, jetstream.ErrKeyNotFound
}

func (kv *hangingKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	kv.updates++
	<-ctx.Done()
	return 0, ctx.Err()
}

func TestBoundedKVDoesNotWaitOutTheCallersDeadline(t *testing.T) {
	// A handler's ctx runs for minutes; a request its server never
	// answers must not hold the handler that long.
	t.Run("an unanswered read is sent again", func(t *testing.T) {
		t.Parallel()
		inner := &hangingKV{}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_, err := boundedKV{inner}.Get(ctx, "k")
		if !errors.Is(err, jetstream.ErrKeyNotFound) || inner.gets != 2 {
			t.Fatalf("err %v after %d gets, want the second get's answer", err, inner.gets)
		}
	})
	t.Run("an unanswered conditional write returns after one attempt", func(t *testing.T) {
		t.Parallel()
		inner := &hangingKV{}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_, err := boundedKV{inner}.Update(ctx, "k", nil, 1)
		if !unanswered(err) || ctx.Err() != nil || inner.updates != 1 {
			t.Fatalf("err %v after %d updates (caller's ctx %v), want one unanswered attempt", err, inner.updates, ctx.Err())
		}
	})
}
