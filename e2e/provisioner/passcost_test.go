package provisioner_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// passLine is the cluster pass's log line of a pass over every cluster.
var passLine = regexp.MustCompile(`msg="cluster pass" .*clusters=(\d+) repairs=(\d+) failed=(\d+) took=(\S+)`)

// BenchmarkClusterPass50Clusters measures one cluster pass over 50
// one-zone clusters (3 servers and a worker each): its time as the pass
// logs it, and the OpenStack and Rancher calls of one pass with nothing
// else running. Each iteration is one pass, after the first two (the
// first writes every cluster's node counts). make bench-cluster-pass runs
// it:
//
//	go test -run '^$' -bench ClusterPass50Clusters -benchtime 2x ./provisioner/
func BenchmarkClusterPass50Clusters(b *testing.B) {
	const clusters = 50
	s := newSiteWith(b, siteOptions{pullPeriod: "10s"})
	start := time.Now()
	var orders []string
	for i := range clusters {
		name := fmt.Sprintf("pass-%02d", i)
		o, _ := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: oneZone(name)})
		orders = append(orders, o)
	}
	for _, o := range orders {
		if got := s.WaitOrder(o, "done", "erred"); got.State != "done" {
			b.Fatalf("create %s: %s", got.State, got.ErrorMessage)
		}
	}
	b.Logf("%d one-zone creates: %s", clusters, time.Since(start).Round(time.Second))

	// full are the log lines of the passes that went over every cluster.
	full := func() [][]string {
		var out [][]string
		for _, m := range passLine.FindAllStringSubmatch(s.Sitebus.Output(), -1) {
			if m[1] == fmt.Sprint(clusters) {
				out = append(out, m)
			}
		}
		return out
	}
	harness.Eventually(b, 5*time.Minute, "two passes over every cluster", func() bool { return len(full()) >= 2 })
	osBefore, rBefore := s.OpenStack.Calls(), s.Rancher.Calls()
	var took time.Duration
	for i := range b.N {
		harness.Eventually(b, 5*time.Minute, "one more pass", func() bool { return len(full()) >= 3+i })
		passes := full()
		d, err := time.ParseDuration(passes[2+i][4])
		if err != nil {
			b.Fatalf("pass took %q: %v", passes[2+i][4], err)
		}
		took += d
	}
	osCalls, rCalls := s.OpenStack.Calls()[len(osBefore):], s.Rancher.Calls()[len(rBefore):]
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/pass")
	b.ReportMetric(float64(len(osCalls))/float64(b.N), "openstack-calls/pass")
	b.ReportMetric(float64(len(rCalls))/float64(b.N), "rancher-calls/pass")
	report(b, "OpenStack calls of the measured passes", callSummary(osCalls))
	report(b, "Rancher calls of the measured passes", callSummary(rCalls))
}
