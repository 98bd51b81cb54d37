package provisioner_test

import (
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// passLine is the cluster pass's log line of a pass over every cluster.
var passLine = regexp.MustCompile(`msg="cluster pass" .*clusters=(\d+) repairs=(\d+) failed=(\d+) took=(\S+)`)

// The cost of one cluster pass over 50 one-zone clusters (3 servers and a
// worker each): its time as the pass logs it, and the OpenStack and
// Rancher calls between two passes with nothing else running. A
// measurement, not a check: it runs with SITEBUS_MEASURE_CLUSTER_PASS=1.
//
//	SITEBUS_MEASURE_CLUSTER_PASS=1 go test -count=1 -run TestClusterPassCost -v ./provisioner/
func TestClusterPassCostFor50Clusters(t *testing.T) {
	if os.Getenv("SITEBUS_MEASURE_CLUSTER_PASS") == "" {
		t.Skip("a measurement: set SITEBUS_MEASURE_CLUSTER_PASS=1")
	}
	const clusters = 50
	s := newSiteWith(t, siteOptions{pullPeriod: "10s"})
	start := time.Now()
	var orders []string
	for i := range clusters {
		name := fmt.Sprintf("pass-%02d", i)
		o, _ := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: oneZone(name)})
		orders = append(orders, o)
	}
	for _, o := range orders {
		if got := s.WaitOrder(o, "done", "erred"); got.State != "done" {
			t.Fatalf("create %s: %s", got.State, got.ErrorMessage)
		}
	}
	t.Logf("%d one-zone creates: %s", clusters, time.Since(start).Round(time.Second))

	passes := func() [][]string { return passLine.FindAllStringSubmatch(s.Sitebus.Output(), -1) }
	full := func() int {
		n := 0
		for _, m := range passes() {
			if m[1] == fmt.Sprint(clusters) {
				n++
			}
		}
		return n
	}
	// The first full pass writes every cluster's node counts; the cost is
	// measured between the second and the third, when nothing changes.
	harness.Eventually(t, 5*time.Minute, "two passes over every cluster", func() bool { return full() >= 2 })
	osBefore, rBefore := len(s.OpenStack.Calls()), len(s.Rancher.Calls())
	osSummary := callSummary(s.OpenStack.Calls())
	rSummary := callSummary(s.Rancher.Calls())
	harness.Eventually(t, 5*time.Minute, "a third pass", func() bool { return full() >= 3 })
	all := passes()
	last := all[len(all)-1]
	t.Logf("one cluster pass over %s clusters: took %s, repairs %s, failed %s; %d OpenStack calls, %d Rancher calls",
		last[1], last[4], last[2], last[3], len(s.OpenStack.Calls())-osBefore, len(s.Rancher.Calls())-rBefore)
	report(t, "OpenStack calls of one pass", diff(callSummary(s.OpenStack.Calls()), osSummary))
	report(t, "Rancher calls of one pass", diff(callSummary(s.Rancher.Calls()), rSummary))
	for _, m := range all {
		t.Logf("pass: clusters %s, repairs %s, failed %s, took %s", m[1], m[2], m[3], m[4])
	}
}

func diff(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
