package orders_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
)

// waitHandled waits until sitebus's consumer has settled the events
// carrying msgIDs (see harness.WaitHandled).
func waitHandled(t testing.TB, s *site, consumer string, msgIDs ...string) {
	t.Helper()
	harness.WaitHandled(t, s.Sitebus.NATSURL, consumer, msgIDs...)
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
