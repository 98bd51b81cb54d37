package bus

import (
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
)

// Terminal marks err as not retryable: the message goes to the dead-letter
// stream at once instead of being retried. It is fault.Terminal, kept here
// because handlers reach for the bus first.
func Terminal(err error) error { return fault.Terminal(err) }

// IsTerminal reports whether no retry can fix err, by the one rule of
// package fault: an explicit mark, else the error's kind.
func IsTerminal(err error) bool { return fault.IsTerminal(err) }

// RetryAfter marks err as retryable after at least d (fault.RetryAfter).
func RetryAfter(err error, d time.Duration) error { return fault.RetryAfter(err, d) }

// retryDelay is the least delay err asks for before its redelivery.
func retryDelay(err error) (time.Duration, bool) {
	d := fault.Decide(err)
	return d.After, !d.Terminal && d.After > 0
}
