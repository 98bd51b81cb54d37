package bus

import (
	"math/rand/v2"
	"time"
)

// Backoff gives the delay before redelivery attempt n+1 after attempt n
// (n starts at 1) failed.
type Backoff func(attempt int) time.Duration

// ExponentialBackoff doubles from base up to max, with ±20% jitter so that
// many messages failing together (a platform outage) do not retry in lockstep.
func ExponentialBackoff(base, max time.Duration) Backoff {
	return func(attempt int) time.Duration {
		d := base
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		if d > max {
			d = max
		}
		jitter := time.Duration(float64(d) * 0.2 * (2*rand.Float64() - 1))
		return d + jitter
	}
}
