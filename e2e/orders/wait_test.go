package orders_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/pkg/bus"
)

// waitHandled waits until sitebus's consumer (on the events stream) has
// settled the events carrying msgIDs: the events are in the stream and the
// consumer's ack floor has passed them. What a handler did before its ack
// (a Kubernetes create, a Keycloak change through keycloak-sync) is then
// done, whichever of several deliveries ran last; the order reaching
// "done" in Waldur says nothing about a second event still in flight.
func waitHandled(t testing.TB, s *site, consumer string, msgIDs ...string) {
	t.Helper()
	r := harness.NewReader(t, s.Sitebus.NATSURL)
	var last uint64
	harness.Eventually(t, 60*time.Second, "events "+strconv.Quote(consumer)+" must handle", func() bool {
		last = 0
		found := 0
		for _, ev := range r.Events(t, "") {
			if slices.Contains(msgIDs, ev.MsgID) {
				found++
				last = max(last, ev.Seq)
			}
		}
		return found >= len(msgIDs)
	})
	harness.Eventually(t, 60*time.Second, consumer+" to ack up to event "+strconv.FormatUint(last, 10), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := r.Bus().JetStream().Consumer(ctx, bus.EventsStream, consumer)
		if err != nil {
			return false
		}
		ci, err := c.Info(ctx)
		return err == nil && ci.AckFloor.Stream >= last
	})
}

// metricAtLeast waits until the /metrics sample (name and sorted labels as
// Prometheus prints them) is at least min.
func (s *site) metricAtLeast(t testing.TB, series string, min float64) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, series+" ≥ "+strconv.FormatFloat(min, 'g', -1, 64), func() bool {
		v, err := strconv.ParseFloat(s.Metric(series), 64)
		return err == nil && v >= min
	})
}
