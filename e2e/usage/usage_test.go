package usage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// TestUsageReporterSubmitsTheSumsOnceAndRefusesDecreases runs `sitebus run
// --only usage-reporter` against the simulator and a real API server.
func TestUsageReporterSubmitsTheSumsOnceAndRefusesDecreases(t *testing.T) {
	c := cluster(t)
	dyn := c.Dynamic()
	crNS := newNamespace(t, dyn, "crs")

	// Resource a's CR names a namespace other than its own name: usage is
	// read where the CR says, not guessed from the backend_id.
	nsA, nsB, noise := uniqueName(t, "tenant-a"), uniqueName(t, "tenant-b"), uniqueName(t, "unrelated")
	for _, ns := range []string{nsA, nsB, noise} {
		createNamespace(t, dyn, ns)
	}
	createCR(t, dyn, crNS, "waldur-usage-a", nsA)
	createCR(t, dyn, crNS, "waldur-usage-b", nsB)
	createWorkload(t, dyn, nsA, nsA, nsB, noise, "1")

	fx := fixture(t, []waldursim.Resource{resource(1, "waldur-usage-a"), resource(2, "waldur-usage-b")})
	site := usageReporter(t, fx, "k8s-ut-namespace", map[string]any{"kubeconfig_path": c.Kubeconfig, "cr_namespace": crNS})
	sim, sb := site.Waldur, site.Sitebus

	month := thisMonth()
	want := map[string]map[string]string{
		// 0.5+0.25+1 cores; 1+0.5+2 GiB; 10+5 GiB of claims; the GPU is not an offering component.
		resource(1, "").UUID: {"cpu": "1.75", "ram": "3.50", "storage": "15.00"},
		// 128 MiB is 0.125 GiB: two decimals.
		resource(2, "").UUID: {"cpu": "0.10", "ram": "0.13", "storage": "0.00"},
	}
	for _, body := range awaitFirstReport(t, sim, month, want) {
		if !strings.Contains(body, `"date":"`+month+`T00:00:00Z"`) {
			t.Errorf("set_usage body %s: want the first of the month as date", body)
		}
	}

	// Two more whole cycles with nothing changed: nothing is sent.
	unchangedCycles(t, sb, sim, 2)

	// Less is allocated now; Waldur keeps the month's higher value.
	if err := dyn.Resource(podGVR).Namespace(nsA).Delete(context.Background(), "train", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, "the decrease counted as an anomaly", func() bool {
		return metric(t, sb, `sitebus_usage_anomalies_total{component="cpu",offering="e2e-usage"}`) >= 1 &&
			metric(t, sb, `sitebus_usage_anomalies_total{component="ram",offering="e2e-usage"}`) >= 1
	})
	waitCycles(t, sb, cycles(t, sb)+1)
	if n := len(setUsageCalls(t, sim)); n != 2 {
		t.Errorf("%d set_usage calls after the decrease, want still 2", n)
	}
	if got := usages(sim, month); !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("Waldur's usage after the decrease = %v, want unchanged %v", got, want)
	}
	if !strings.Contains(sb.Output(), "usage anomaly") {
		t.Errorf("no usage anomaly logged:\n%s", sb.Tail(20))
	}

	// More again: reported.
	createPod(t, dyn, nsB, "grown", container{"cpu": "2", "memory": "1Gi"})
	want[resource(2, "").UUID] = map[string]string{"cpu": "2.10", "ram": "1.13", "storage": "0.00"}
	awaitUsages(t, sim, month, "the grown usage reported", want)
}

// usages are Waldur's usages of the month, by resource and component.
// thisMonth is the billing period this month's usage is filed under.
func thisMonth() string { return time.Now().UTC().Format("2006-01") + "-01" }

// awaitUsages waits until the simulator holds exactly want as month's
// usage, per resource and component.
func awaitUsages(t testing.TB, sim *waldursim.Server, month, what string, want map[string]map[string]string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, what, func() bool { return maps.EqualFunc(usages(sim, month), want, maps.Equal) })
}

// awaitFirstReport waits until want is month's usage and checks that it
// took one set_usage call per resource; it returns those calls' bodies.
func awaitFirstReport(t testing.TB, sim *waldursim.Server, month string, want map[string]map[string]string) []string {
	t.Helper()
	awaitUsages(t, sim, month, "the first usage report", want)
	sets := setUsageCalls(t, sim)
	if len(sets) != len(want) {
		t.Errorf("%d set_usage calls for the first report, want one per resource: %v", len(sets), sets)
	}
	return sets
}

// unchangedCycles waits for n more whole report cycles, with nothing
// changed, and checks that they sent Waldur no set_usage call.
func unchangedCycles(t testing.TB, sb *harness.Sitebus, sim *waldursim.Server, n int) {
	t.Helper()
	sent := len(setUsageCalls(t, sim))
	waitCycles(t, sb, cycles(t, sb)+float64(n))
	if now := len(setUsageCalls(t, sim)); now != sent {
		t.Errorf("%d set_usage calls after %d unchanged cycles, want still %d", now, n, sent)
	}
}

func usages(sim *waldursim.Server, month string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, u := range sim.Usages() {
		if u.BillingPeriod != month {
			continue
		}
		if out[u.ResourceUUID] == nil {
			out[u.ResourceUUID] = map[string]string{}
		}
		out[u.ResourceUUID][u.Type] = u.Usage
	}
	return out
}

// setUsageCalls are the bodies of the set_usage calls the simulator got.
func setUsageCalls(t testing.TB, sim *waldursim.Server) []string {
	t.Helper()
	var out []string
	for _, c := range sim.Calls() {
		if c.Method == "POST" && strings.HasSuffix(c.Path, "/set_usage/") {
			var v map[string]any
			if err := json.Unmarshal([]byte(c.Body), &v); err != nil {
				t.Errorf("set_usage body %q: %v", c.Body, err)
			}
			out = append(out, c.Body)
		}
	}
	return out
}

// metric reads one sample from /metrics (0 when absent).
func metric(t testing.TB, sb *harness.Sitebus, series string) float64 {
	t.Helper()
	_, body := sb.Get("/metrics")
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

func cycles(t testing.TB, sb *harness.Sitebus) float64 {
	return metric(t, sb, `sitebus_usage_cycles_total{offering="e2e-usage",outcome="ok"}`)
}

// waitCycles waits until n cycles have completed.
func waitCycles(t testing.TB, sb *harness.Sitebus, n float64) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, fmt.Sprintf("%v usage cycles", n), func() bool { return cycles(t, sb) >= n })
}
