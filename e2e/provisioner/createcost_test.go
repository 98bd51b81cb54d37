package provisioner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// BenchmarkClusterCreate3x5 measures a 3-zone managed create (3 load
// balancers, 5 nodes per zone) with every VM booting 20 s after its
// create, with the VMs made one after another (cluster_vm_concurrency 1,
// as before VMs were made at once) and then with the default cap of 5,
// each on its own site: the create time from the order's event to done,
// the ratio of the two, and the calls of one create by peer (OpenStack,
// Rancher, Vault with the VMs' own logins). It does so twice: with
// volumes available at once, and with each volume available at its
// second look, as a volume made from an image is on a real Cinder (the
// client looks again after its 2 s poll interval), where making a VM
// takes time of its own. make bench-cluster-create runs it:
//
//	go test -run '^$' -bench ClusterCreate3x5 -benchtime 1x ./provisioner/
func BenchmarkClusterCreate3x5(b *testing.B) {
	const boot = 20 * time.Second
	scenarios := []struct {
		name        string
		volumePolls int
	}{{"volumes at once", 0}, {"volumes at the second look", 1}}
	modes := []struct {
		name  string
		limit int
	}{{"sequential", 1}, {"parallel", 5}}
	for si, sc := range scenarios {
		took := map[string]time.Duration{}
		for _, m := range modes {
			s := newSiteWith(b, siteOptions{bootAfter: boot, vmConcurrency: m.limit, volumePolls: sc.volumePolls})
			osBefore, rBefore, vBefore := len(s.OpenStack.Calls()), len(s.Rancher.Calls()), s.vaultCalls.snapshot()
			for i := range b.N {
				name := fmt.Sprintf("%s-%d-%d", m.name, si, i)
				start := time.Now()
				o, _ := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 2)})
				// Made one after another, 39 volumes polled 2 s apart take
				// longer than WaitOrder's 90 s.
				got, err := s.Admin.WaitOrder(harness.Context(b, 10*time.Minute), o, "done", "erred")
				if err != nil {
					b.Fatalf("%s, %s create: %v\n%s", sc.name, m.name, err, s.Sitebus.Tail(100))
				}
				if got.State != "done" {
					b.Fatalf("%s, %s create %s: %s", sc.name, m.name, got.State, got.ErrorMessage)
				}
				took[m.name] += time.Since(start)
			}
			// The cluster pass and the rest stay out of the other sites' runs.
			if err := s.Sitebus.Stop(10 * time.Second); err != nil {
				b.Logf("stopping sitebus: %v", err)
			}
			per := took[m.name] / time.Duration(b.N)
			osCalls, rCalls := callSummary(s.OpenStack.Calls()[osBefore:]), callSummary(s.Rancher.Calls()[rBefore:])
			vCalls := s.vaultCalls.snapshot()
			for k, n := range vBefore {
				vCalls[k] -= n
			}
			b.Logf("%s, %s (cluster_vm_concurrency %d, VM boot %s): %s per create; calls per create: OpenStack %d, Rancher %d, Vault %d",
				sc.name, m.name, m.limit, boot, per.Round(10*time.Millisecond), total(osCalls)/b.N, total(rCalls)/b.N, total(vCalls)/b.N)
			report(b, sc.name+", "+m.name+": OpenStack calls", osCalls)
			report(b, sc.name+", "+m.name+": Rancher calls", rCalls)
			report(b, sc.name+", "+m.name+": Vault calls (sitebus and the 15 VMs)", vCalls)
			unit := fmt.Sprintf("-%d-", si+1)
			b.ReportMetric(per.Seconds(), m.name+unit+"s/create")
			b.ReportMetric(float64(total(osCalls))/float64(b.N), m.name+unit+"openstack-calls/create")
			b.ReportMetric(float64(total(rCalls))/float64(b.N), m.name+unit+"rancher-calls/create")
			b.ReportMetric(float64(total(vCalls))/float64(b.N), m.name+unit+"vault-calls/create")
		}
		ratio := took["sequential"].Seconds() / took["parallel"].Seconds()
		b.Logf("%s: sequential/parallel create time %.2f", sc.name, ratio)
		b.ReportMetric(ratio, fmt.Sprintf("sequential/parallel-%d", si+1))
	}
}
