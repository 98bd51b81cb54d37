// Package fault is sitebus's one error vocabulary. Every client of an outside
// system (Waldur, Kubernetes, Keycloak, Rancher, OpenShift, OpenStack, Vault)
// says once, where it reads the answer, what kind of failure it met; and one
// function, [Decide], says whether the work that met it is worth trying
// again. The message bus runs that decision around every handler (retry with
// backoff, or park the message in the dead-letter stream with the reason),
// so handlers return errors and never decide retries themselves.
//
// The vocabulary follows Kubernetes' apimachinery reasons and gRPC's status
// codes, reduced to what changes a decision here:
//
//	Invalid      the input can never work (a bad name, a wrong attribute)  terminal
//	NotManaged   the object exists but sitebus cannot prove it is its own  terminal
//	Rejected     the peer refused the call for good (a 400, 403, 422)      terminal
//	Credentials  the configured credentials were refused                   terminal
//	NotFound     the object is absent                                      retried
//	Conflict     the name is taken or the object changed meanwhile         retried
//	Unavailable  the peer did not answer, or answered 5xx or 429           retried
//
// NotFound and Conflict are retried when a handler returns them unhandled:
// most callers handle them where they occur (an absent object is created, a
// taken name is re-read), and what is left is usually a peer that has not
// caught up yet. A bounded number of retries later, the bus parks the message
// anyway.
package fault

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind is a class of failure. A Kind is itself an error, so that callers
// match it with errors.Is(err, fault.NotFound), and packages that had their
// own sentinels keep them as aliases (backend.ErrNotFound = fault.NotFound).
type Kind string

func (k Kind) Error() string { return string(k) }

// The kinds. Their texts are the words older sentinel errors had, since
// some reach Waldur as part of an order's error message.
const (
	Invalid     Kind = "invalid"
	NotManaged  Kind = "not managed by sitebus"
	Rejected    Kind = "rejected"
	Credentials Kind = "credentials rejected"
	NotFound    Kind = "not found"
	Conflict    Kind = "conflict"
	Unavailable Kind = "unavailable"
)

// terminalKinds are the kinds no retry can fix.
var terminalKinds = []Kind{Invalid, NotManaged, Rejected, Credentials}

// Terminal reports whether a failure of kind k is final.
func (k Kind) Terminal() bool {
	for _, t := range terminalKinds {
		if k == t {
			return true
		}
	}
	return false
}

// classified is an error of a kind with a message of its own: the message
// is what a person reads (Waldur shows it as the order's error), the kind is
// what the code decides on.
type classified struct {
	kind Kind
	msg  string
	err  error // the wrapped error, when there is one
}

func (e *classified) Error() string        { return e.msg }
func (e *classified) Unwrap() error        { return e.err }
func (e *classified) Is(target error) bool { return target == e.kind }

// Errorf returns an error of kind k with a formatted message; %w wraps as
// in fmt.Errorf.
func Errorf(k Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &classified{kind: k, msg: err.Error(), err: errors.Unwrap(err)}
}

// Mark gives err the kind k, keeping its message and its chain. Mark(nil)
// is nil.
func Mark(err error, k Kind) error {
	if err == nil {
		return nil
	}
	return &classified{kind: k, msg: err.Error(), err: err}
}

// KindOf returns the first kind found in err's chain, or "" when err
// carries none.
func KindOf(err error) Kind {
	for _, k := range []Kind{Invalid, NotManaged, Rejected, Credentials, NotFound, Conflict, Unavailable} {
		if errors.Is(err, k) {
			return k
		}
	}
	return ""
}

// terminal marks an error final whatever its kind: a handler saying "this
// message can never succeed" about something the vocabulary has no kind for
// (an undecodable message, an offering not configured here).
type terminal struct{ err error }

func (e *terminal) Error() string { return e.err.Error() }
func (e *terminal) Unwrap() error { return e.err }

// Terminal marks err as final. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminal{err: err}
}

// retryAfter asks for a redelivery no sooner than after, e.g. from a 429's
// Retry-After header, instead of the consumer's backoff schedule.
type retryAfter struct {
	err   error
	after time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// RetryAfter marks err as worth retrying after at least d. RetryAfter(nil,
// d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfter{err: err, after: d}
}

// Decision is what to do about a failed piece of work.
type Decision struct {
	// Terminal: no retry can fix it; settle it (err the order, park the
	// message) now.
	Terminal bool
	// After, when Terminal is false and After is positive, is the least
	// time to wait before the retry; zero leaves the schedule to the
	// caller's backoff.
	After time.Duration
}

// Decide is the one place that says whether an error is final. In order:
//   - an explicit mark wins: Terminal, then RetryAfter (the outermost of
//     the two in the chain, as the code nearest the handler knows best);
//   - a context that ended is never final: the work was interrupted (a
//     shutdown, a deadline), not refused;
//   - otherwise the kind decides (see the package comment), and an error
//     of no kind is retried: a failure nobody classified is assumed to be
//     passing, and the bounded retries end it if it is not.
func Decide(err error) Decision {
	if err == nil {
		return Decision{}
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch m := e.(type) {
		case *terminal:
			return Decision{Terminal: true}
		case *retryAfter:
			return Decision{After: m.after}
		}
		if _, joined := e.(interface{ Unwrap() []error }); joined {
			break // errors.Join: fall back to errors.As over every branch
		}
	}
	var t *terminal
	if errors.As(err, &t) {
		return Decision{Terminal: true}
	}
	var r *retryAfter
	if errors.As(err, &r) {
		return Decision{After: r.after}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Decision{}
	}
	return Decision{Terminal: KindOf(err).Terminal()}
}

// IsTerminal reports whether no retry can fix err: Decide(err).Terminal.
func IsTerminal(err error) bool { return Decide(err).Terminal }
