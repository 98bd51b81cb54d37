package provisioner_test

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// vmSums is what the simulator holds for a resource: its VMs but the load
// balancers, their flavors' vCPUs and RAM (GiB) and their volumes' sizes,
// as Waldur shows usage (two decimals).
func vmSums(t *testing.T, s *site) map[string]string {
	t.Helper()
	flavors := map[string][2]int{"f-medium": {2, 4096}, "f-large": {4, 8192}, "f-xlarge": {8, 16384}}
	inv := s.OpenStack.Inventory("")
	size := map[string]int{}
	for _, v := range inv.Volumes {
		size[v.ID] = v.Size
	}
	var nodes, cpu, ramMB, storage int
	for _, v := range inv.Servers {
		if strings.HasPrefix(v.Name, "k8s-lb-") {
			continue
		}
		f, ok := flavors[v.FlavorID]
		if !ok {
			t.Fatalf("server %s has flavor %q the test does not know", v.Name, v.FlavorID)
		}
		nodes++
		cpu += f[0]
		ramMB += f[1]
		for _, id := range v.Volumes {
			storage += size[id]
		}
	}
	two := func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
	return map[string]string{"nodes": two(float64(nodes)), "cpu": two(float64(cpu)),
		"ram": two(float64(ramMB) / 1024), "storage": two(float64(storage))}
}

// reported is the usage Waldur holds for a resource in month.
func reported(s *site, resUUID, month string) map[string]string {
	out := map[string]string{}
	for _, u := range s.Waldur.Usages() {
		if u.BillingPeriod == month && strings.EqualFold(strings.ReplaceAll(u.ResourceUUID, "-", ""), strings.ReplaceAll(resUUID, "-", "")) {
			out[u.Type] = u.Usage
		}
	}
	return out
}

func setUsageCalls(s *site) int {
	n := 0
	for _, c := range s.Waldur.Calls() {
		if c.Method == "POST" && strings.HasSuffix(c.Path, "/set_usage/") {
			n++
		}
	}
	return n
}

// usageCycles reads the usage reporter's completed cycles from /metrics.
func usageCycles(t *testing.T, s *site) float64 {
	t.Helper()
	_, body := s.Sitebus.Get("/metrics")
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, `sitebus_usage_cycles_total{offering="e2e-clusters",outcome="ok"} `); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// TestUsageOfAClusterIsItsVMs creates a cluster with `sitebus run`
// reporting every 600 ms: the usage Waldur gets is the nodes, vCPUs, RAM
// and storage of the cluster's VMs in the OpenStack simulator (load
// balancers left out); a scale up raises it; unchanged usage is not sent
// again.
func TestUsageOfAClusterIsItsVMs(t *testing.T) {
	s := newSite(t, "WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES=0.01")
	// The fixture's offering has cpu, ram and storage; a rancher-cluster
	// offering also bills nodes.
	wc, err := waldur.New(waldur.Config{APIURL: s.Waldur.URL() + "/api/", Token: s.Token})
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.CreateOfferingComponent(ctx(t), s.OfferingUUID, waldur.ComponentRequest{
		Type: "nodes", Name: "Nodes", MeasuredUnit: "nodes", BillingType: "usage"}); err != nil {
		t.Fatal(err)
	}

	name := "usage-prod"
	orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 1)})
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	month := time.Now().UTC().Format("2006-01") + "-01"
	want := vmSums(t, s)
	// 3 zones × (3 servers + 1 worker): a check that the sums are of a
	// whole cluster, not of what happened to be there.
	if want["nodes"] != "12.00" || want["cpu"] != "60.00" {
		t.Fatalf("the simulator holds %v, want 12 nodes and 60 vCPUs", want)
	}
	harness.Eventually(t, 60*time.Second, "the cluster's usage in Waldur", func() bool {
		return maps.Equal(reported(s, resUUID, month), want)
	})
	t.Logf("reported after create: %v", want)

	// Up: one more worker per zone (8 vCPUs, 16 GiB each).
	up, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 2}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("scale up %s: %s", o.State, o.ErrorMessage)
	}
	grown := vmSums(t, s)
	if grown["nodes"] != "15.00" || grown["cpu"] != "84.00" {
		t.Fatalf("the simulator holds %v after the scale up, want 15 nodes and 84 vCPUs", grown)
	}
	harness.Eventually(t, 60*time.Second, "the grown usage in Waldur", func() bool {
		return maps.Equal(reported(s, resUUID, month), grown)
	})

	// Two whole cycles with nothing changed send nothing.
	calls := setUsageCalls(s)
	start := usageCycles(t, s)
	harness.Eventually(t, 60*time.Second, "two more usage cycles", func() bool { return usageCycles(t, s) >= start+2 })
	if n := setUsageCalls(s); n != calls {
		t.Errorf("%d set_usage calls after unchanged cycles, want still %d", n, calls)
	}
	if got := reported(s, resUUID, month); !maps.Equal(got, grown) {
		t.Errorf("usage %v after unchanged cycles, want %v", got, grown)
	}
}
