package provisioner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/waldursim"
)

// BenchmarkClusterCreate3x5 measures a 3-zone managed create (3 load
// balancers, 5 nodes per zone) with every VM booting 20 s after its
// create, first with the VMs made one after another
// (cluster_vm_concurrency 1, as before VMs were made at once), then with
// the default cap of 5, each on its own site: the create time from the
// order's event to done, the ratio of the two, and the calls of one
// create by peer (OpenStack, Rancher, Vault with the VMs' own logins).
// make bench-cluster-create runs it:
//
//	go test -run '^$' -bench ClusterCreate3x5 -benchtime 1x ./provisioner/
func BenchmarkClusterCreate3x5(b *testing.B) {
	const boot = 20 * time.Second
	modes := []struct {
		name  string
		limit int
	}{{"sequential", 1}, {"parallel", 5}}
	took := map[string]time.Duration{}
	for _, m := range modes {
		s := newSiteWith(b, siteOptions{bootAfter: boot, vmConcurrency: m.limit})
		osBefore, rBefore, vBefore := len(s.OpenStack.Calls()), len(s.Rancher.Calls()), s.vaultCalls.snapshot()
		for i := range b.N {
			name := fmt.Sprintf("%s-%d", m.name, i)
			start := time.Now()
			o, _ := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 2)})
			if got := s.WaitOrder(o, "done", "erred"); got.State != "done" {
				b.Fatalf("%s create %s: %s", m.name, got.State, got.ErrorMessage)
			}
			took[m.name] += time.Since(start)
		}
		per := took[m.name] / time.Duration(b.N)
		osCalls, rCalls := callSummary(s.OpenStack.Calls()[osBefore:]), callSummary(s.Rancher.Calls()[rBefore:])
		vCalls := s.vaultCalls.snapshot()
		for k, n := range vBefore {
			vCalls[k] -= n
		}
		b.Logf("%s (cluster_vm_concurrency %d, VM boot %s): %s per create; calls per create: OpenStack %d, Rancher %d, Vault %d",
			m.name, m.limit, boot, per.Round(10*time.Millisecond), total(osCalls)/b.N, total(rCalls)/b.N, total(vCalls)/b.N)
		report(b, m.name+": OpenStack calls", osCalls)
		report(b, m.name+": Rancher calls", rCalls)
		report(b, m.name+": Vault calls (sitebus and the 15 VMs)", vCalls)
		b.ReportMetric(per.Seconds(), m.name+"-s/create")
		b.ReportMetric(float64(total(osCalls))/float64(b.N), m.name+"-openstack-calls/create")
		b.ReportMetric(float64(total(rCalls))/float64(b.N), m.name+"-rancher-calls/create")
		b.ReportMetric(float64(total(vCalls))/float64(b.N), m.name+"-vault-calls/create")
	}
	ratio := took["sequential"].Seconds() / took["parallel"].Seconds()
	b.Logf("sequential/parallel create time: %.2f", ratio)
	b.ReportMetric(ratio, "sequential/parallel")
}
