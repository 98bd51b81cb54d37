package harness

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// OrderStart is when an order's clock started: its frame published.
type OrderStart struct {
	UUID  string
	Start time.Time
}

// Latencies are, sorted, the times from each order's start to its
// set_state_done call in doneAt (by UUID without dashes, as the Waldur
// simulator's call log has it); an order without one fails tb.
func Latencies(tb testing.TB, starts []OrderStart, doneAt map[string]time.Time) []time.Duration {
	tb.Helper()
	var lat []time.Duration
	for _, s := range starts {
		t, ok := doneAt[strings.ReplaceAll(s.UUID, "-", "")]
		if !ok {
			tb.Fatalf("no set_state_done call for order %s", s.UUID)
		}
		lat = append(lat, t.Sub(s.Start))
	}
	slices.Sort(lat)
	return lat
}
