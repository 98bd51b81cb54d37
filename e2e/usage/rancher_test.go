package usage_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/config"
)

// rancherProject adds a managed project to the simulator, as the order
// service (or the Python agent) leaves it, and namespaces in it marked as
// Rancher marks them; it returns the project id Waldur keeps.
func rancherProject(t testing.TB, sim *ranchersim.Server, name string, namespaces ...string) string {
	t.Helper()
	p, err := sim.AddProject(ranchersim.Project{Name: name, Annotations: map[string]string{rancher.AnnotationManaged: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		createAnnotatedNamespace(t, cluster(t).Dynamic(), ns, map[string]string{ranchersim.ProjectIDAnnotation: p.ID})
	}
	return p.ID
}

// rancherResource is a Waldur resource whose backend_id is a Rancher
// project id.
func rancherResource(i int, projectID string) waldursim.Resource {
	r := resource(i, projectID)
	r.Name, r.Slug = fmt.Sprintf("rancher-%d", i), fmt.Sprintf("rancher-%d", i)
	return r
}

// TestRancherUsageReporterSubmitsTheSums runs `sitebus run --only
// usage-reporter` for a Rancher offering against the Rancher simulator
// (its cluster proxy reaching the real API server) and the Waldur one: the
// usage submitted is what the pods request and the PVCs claim over all the
// project's namespaces, and unchanged usage is not sent again.
func TestRancherUsageReporterSubmitsTheSums(t *testing.T) {
	c := cluster(t)
	dyn := c.Dynamic()
	rsim := ranchersim.NewTestServer(t, ranchersim.Options{Kube: c.RESTConfig()})
	nsA1, nsA2, nsB, noise := uniqueName(t, "a1"), uniqueName(t, "a2"), uniqueName(t, "b"), uniqueName(t, "unrelated")
	projectA := rancherProject(t, rsim, uniqueName(t, "pa"), nsA1, nsA2)
	projectB := rancherProject(t, rsim, uniqueName(t, "pb"), nsB)
	createNamespace(t, dyn, noise)
	createWorkload(t, dyn, nsA1, nsA2, nsB, noise, "2")

	fx := fixture(t, []waldursim.Resource{rancherResource(1, projectA), rancherResource(2, projectB)})
	o := rsim.Options()
	site := usageReporter(t, fx, "rancher", map[string]any{"backend_url": rsim.URL(), "username": o.AccessKey, "password": o.SecretKey, "cluster_id": o.ClusterID})
	wsim, sb := site.Waldur, site.Sitebus

	month := thisMonth()
	want := map[string]map[string]string{
		// Both namespaces: 0.5+0.25+1 cores; 1+0.5+2 GiB; 10+5 GiB of
		// claims. The GPUs are counted but gpu is not an offering component.
		rancherResource(1, "").UUID: {"cpu": "1.75", "ram": "3.50", "storage": "15.00"},
		rancherResource(2, "").UUID: {"cpu": "0.10", "ram": "0.13", "storage": "0.00"},
	}
	awaitFirstReport(t, wsim, month, want)

	// Two more whole cycles with nothing changed: nothing is sent, and each
	// cycle read the same few lists.
	before := len(rsim.Calls())
	unchangedCycles(t, sb, wsim, 2)
	for _, call := range rsim.Calls()[before:] {
		clusterWide := call.Path == "/v3/projects" ||
			(strings.HasPrefix(call.Path, "/k8s/clusters/"+o.ClusterID+"/api/v1/") && !strings.Contains(call.Path, "/namespaces/"))
		if call.Method != http.MethodGet || !clusterWide {
			t.Errorf("usage cycle called %s %s: only cluster-wide lists expected", call.Method, call.Path)
		}
	}

	// More in the project's second namespace: reported.
	createPod(t, dyn, nsA2, "grown", container{"cpu": "2", "memory": "1Gi"})
	want[rancherResource(1, "").UUID] = map[string]string{"cpu": "3.75", "ram": "4.50", "storage": "15.00"}
	awaitUsages(t, wsim, month, "the grown usage reported", want)
	if strings.Contains(sb.Output(), o.SecretKey) {
		t.Error("the Rancher secret key is in the log")
	}
}

// BenchmarkRancherUsageCycle1000Resources measures one Rancher offering's
// report cycle with 1,000 projects (a namespace each with two pods and a
// PVC) on the Rancher simulator over a real kube-apiserver and the Waldur
// simulator: the first cycle (everything submitted) is logged, and each
// iteration is a steady cycle (nothing changed, nothing sent). API calls
// per cycle are reported as rancher-calls/op and waldur-calls/op.
//
//	go test -run '^$' -bench RancherUsageCycle1000 -benchtime 5x ./usage/
func BenchmarkRancherUsageCycle1000Resources(b *testing.B) {
	const n = 1000
	c := cluster(b)
	dyn := c.Dynamic()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rsim := ranchersim.NewTestServer(b, ranchersim.Options{Kube: c.RESTConfig(), Logger: quiet})
	prefix := fmt.Sprintf("bench-rancher-%d", time.Now().UnixNano()%1e6)
	resources := make([]waldursim.Resource, n)
	setup := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // the API server is shared; 16 at a time keeps setup under a minute
	for i := range n {
		ns := fmt.Sprintf("%s-r%04d", prefix, i)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resources[i] = rancherResource(i+1, rancherProject(b, rsim, ns, ns))
			createBenchWorkload(b, dyn, ns)
		})
	}
	wg.Wait()
	b.Logf("setup: %d projects and namespaces, %d pods, %d PVCs in %s", n, 2*n, n, time.Since(setup).Round(time.Millisecond))

	fx := fixture(b, resources)
	wsim := waldursim.NewTestServer(b, waldursim.Config{Fixture: fx, Logger: quiet})
	rancherCalls := &countingTransport{}
	o := rsim.Options()
	s, err := rancher.DecodeSettings(map[string]any{"backend_url": rsim.URL(), "username": o.AccessKey, "password": o.SecretKey, "cluster_id": o.ClusterID})
	if err != nil {
		b.Fatal(err)
	}
	components := map[string]config.BackendComponent{
		"cpu": {UnitFactor: 1, Extra: map[string]any{"type": "cpu"}}, "ram": {UnitFactor: 1, Extra: map[string]any{"type": "ram"}},
		"storage": {UnitFactor: 1, Extra: map[string]any{"type": "storage"}},
	}
	be, err := rancher.New(s, components, rancher.Options{Logger: quiet,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { rancherCalls.rt = rt; return rancherCalls }})
	if err != nil {
		b.Fatal(err)
	}
	cycle := benchCycle(b, wsim, fx, components, be, rancherCalls, quiet)
	d, r, w := cycle()
	month := thisMonth()
	// Each project: 0.5+0.25+1 cores, 1+0.25+2 GiB, 10 GiB claimed.
	wantEach := map[string]string{"cpu": "1.75", "ram": "3.25", "storage": "10.00"}
	got := usages(wsim, month)
	for _, res := range resources {
		if !maps.Equal(got[res.UUID], wantEach) {
			b.Fatalf("first cycle submitted %v for %s, want %v", got[res.UUID], res.BackendID, wantEach)
		}
	}
	sets := len(setUsageCalls(b, wsim))
	if sets != n {
		b.Fatalf("first cycle made %d set_usage calls, want %d", sets, n)
	}
	// The backend's share of a cycle, apart from Waldur's.
	r0 := rancherCalls.n.Load()
	start := time.Now()
	if _, err := be.UsageAll(context.Background(), backendIDs(resources)); err != nil {
		b.Fatal(err)
	}
	b.Logf("UsageAll of %d projects alone: %s, %d Rancher calls", n, time.Since(start).Round(time.Millisecond), rancherCalls.n.Load()-r0)
	b.Logf("first cycle (%d Rancher projects, all submitted): %s, %d Rancher calls, %d Waldur calls (%d set_usage)", n, d.Round(time.Millisecond), r, w, sets)

	d, r, w = steadyCycles(b, "rancher", cycle)
	b.Logf("steady cycle (%d Rancher projects, nothing changed): last %s, %d Rancher calls, %d Waldur calls", n, d.Round(time.Millisecond), r, w)
}

func backendIDs(rs []waldursim.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.BackendID
	}
	return out
}
