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
