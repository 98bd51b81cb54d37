package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
)

func TestDecide(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name string
		err  error
		want fault.Decision
	}{
		{"nil is nothing to decide", nil, fault.Decision{}},
		{"an error of no kind is retried", base, fault.Decision{}},
		{"invalid input is final", fault.Errorf(fault.Invalid, "name %q is not a DNS label", "A_b"), fault.Decision{Terminal: true}},
		{"a foreign object is final", fault.Mark(base, fault.NotManaged), fault.Decision{Terminal: true}},
		{"a refused call is final", fault.Mark(base, fault.Rejected), fault.Decision{Terminal: true}},
		{"refused credentials are final", fault.Mark(base, fault.Credentials), fault.Decision{Terminal: true}},
		{"an absent object is retried", fault.Mark(base, fault.NotFound), fault.Decision{}},
		{"a conflict is retried", fault.Mark(base, fault.Conflict), fault.Decision{}},
		{"an unavailable peer is retried", fault.Mark(base, fault.Unavailable), fault.Decision{}},
		{"a kind deep in the chain counts", fmt.Errorf("create: %w", fmt.Errorf("get: %w", fault.Mark(base, fault.Invalid))), fault.Decision{Terminal: true}},
		{"an explicit terminal mark wins over a retryable kind", fault.Terminal(fault.Mark(base, fault.Unavailable)), fault.Decision{Terminal: true}},
		{"retry-after wins over a terminal kind beneath it", fault.RetryAfter(fault.Mark(base, fault.Rejected), 3*time.Second), fault.Decision{After: 3 * time.Second}},
		{"the outermost mark wins", fault.RetryAfter(fault.Terminal(base), time.Second), fault.Decision{After: time.Second}},
		{"the outermost mark wins the other way round", fmt.Errorf("x: %w", fault.Terminal(fault.RetryAfter(base, time.Second))), fault.Decision{Terminal: true}},
		{"an ended context is never final", fmt.Errorf("call: %w", errors.Join(context.Canceled, fault.Mark(base, fault.Rejected))), fault.Decision{}},
		{"a deadline is never final", fmt.Errorf("call: %w", context.DeadlineExceeded), fault.Decision{}},
		{"a terminal mark inside a join is found", errors.Join(base, fault.Terminal(base)), fault.Decision{Terminal: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fault.Decide(tt.err); got != tt.want {
				t.Errorf("Decide(%v) = %+v, want %+v", tt.err, got, tt.want)
			}
			if got := fault.IsTerminal(tt.err); got != tt.want.Terminal {
				t.Errorf("IsTerminal(%v) = %v, want %v", tt.err, got, tt.want.Terminal)
			}
		})
	}
}

func TestMessagesAndMatching(t *testing.T) {
	inner := errors.New("HTTP 403: forbidden")
	err := fault.Errorf(fault.Rejected, "bind group g to project p: %w", inner)
	if got, want := err.Error(), "bind group g to project p: HTTP 403: forbidden"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if !errors.Is(err, fault.Rejected) || !errors.Is(err, inner) {
		t.Errorf("Errorf lost its kind or its cause: kind %v, cause %v", errors.Is(err, fault.Rejected), errors.Is(err, inner))
	}
	if errors.Is(err, fault.Invalid) {
		t.Error("an error matches a kind it does not have")
	}
	marked := fault.Mark(inner, fault.Unavailable)
	if marked.Error() != inner.Error() || !errors.Is(marked, inner) || fault.KindOf(marked) != fault.Unavailable {
		t.Errorf("Mark changed the message or lost the cause or kind: %q kind %q", marked, fault.KindOf(marked))
	}
	if fault.Mark(nil, fault.Invalid) != nil || fault.Terminal(nil) != nil || fault.RetryAfter(nil, time.Second) != nil {
		t.Error("marking nil made an error")
	}
	if fault.KindOf(inner) != "" {
		t.Errorf("an unclassified error has kind %q", fault.KindOf(inner))
	}
}
