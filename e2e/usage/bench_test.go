package usage_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/usage"
	"k8s.io/client-go/dynamic"
)

// createBenchWorkload makes the benchmarks' workload in namespace ns: two pods
// (0.5+0.25+1 cores, 1+0.25+2 GiB requested) and a 10 GiB claim.
func createBenchWorkload(b *testing.B, dyn dynamic.Interface, ns string) {
	createPod(b, dyn, ns, "web", container{"cpu": "500m", "memory": "1Gi"}, container{"cpu": "250m", "memory": "256Mi"})
	createPod(b, dyn, ns, "worker", container{"cpu": "1", "memory": "2Gi"})
	createPVC(b, dyn, ns, "data", "10Gi")
}

// benchCycle is one report cycle of the usage service of one offering
// over be, reporting to sim as fx's first user: how long it took and how
// many calls it made to the backend (counted by platform) and to Waldur.
func benchCycle(b *testing.B, sim *waldursim.Server, fx *waldursim.Fixture, components map[string]config.BackendComponent,
	be usage.Meter, platform *countingTransport, log *slog.Logger) func() (time.Duration, int64, int64) {
	waldurCalls := &countingTransport{}
	wc, err := waldur.New(waldur.Config{APIURL: sim.URL() + "/api/", Token: fx.Users[0].Token,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { waldurCalls.rt = rt; return waldurCalls }})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := usage.New(usage.Config{
		Offerings: []usage.Offering{{Config: &config.Offering{Name: "bench", WaldurOfferingUUID: offeringUUID, BackendComponents: components}, Waldur: wc, Backend: be}},
		Logger:    log,
	})
	if err != nil {
		b.Fatal(err)
	}
	return func() (time.Duration, int64, int64) {
		p0, w0 := platform.n.Load(), waldurCalls.n.Load()
		start := time.Now()
		svc.Cycle(context.Background())
		return time.Since(start), platform.n.Load() - p0, waldurCalls.n.Load() - w0
	}
}

// steadyCycles runs cycle once a benchmark iteration and reports its
// calls per cycle as <platform>-calls/op and waldur-calls/op; it returns
// the last cycle's figures.
func steadyCycles(b *testing.B, platform string, cycle func() (time.Duration, int64, int64)) (d time.Duration, p, w int64) {
	b.ResetTimer()
	var pTotal, wTotal int64
	for b.Loop() {
		d, p, w = cycle()
		pTotal += p
		wTotal += w
	}
	b.ReportMetric(float64(pTotal)/float64(b.N), platform+"-calls/op")
	b.ReportMetric(float64(wTotal)/float64(b.N), "waldur-calls/op")
	return d, p, w
}

// countingTransport counts the requests that reach a server.
type countingTransport struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// BenchmarkUsageCycle1000Resources measures one offering's report cycle
// with 1,000 resources (a namespace each with two pods and a PVC) on a real
// kube-apiserver and the Waldur simulator: the first cycle (everything
// submitted) is logged, and each benchmark iteration is a steady cycle
// (nothing changed, nothing sent). API calls per cycle are reported as
// kube-calls/op and waldur-calls/op.
//
//	go test -run '^$' -bench UsageCycle1000 -benchtime 5x ./usage/
func BenchmarkUsageCycle1000Resources(b *testing.B) {
	const n = 1000
	c := cluster(b)
	dyn := c.Dynamic()
	crNS := fmt.Sprintf("bench-crs-%d", time.Now().UnixNano()%1e6)
	createNamespace(b, dyn, crNS)
	resources := make([]waldursim.Resource, n)
	setup := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		id := fmt.Sprintf("%s-r%04d", crNS, i)
		resources[i] = resource(i+1, id)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			createNamespace(b, dyn, id)
			createCR(b, dyn, crNS, id, id)
			createBenchWorkload(b, dyn, id)
		})
	}
	wg.Wait()
	b.Logf("setup: %d namespaces, %d pods, %d PVCs in %s", n, 2*n, n, time.Since(setup).Round(time.Millisecond))

	fx := fixture(b, resources)
	sim := waldursim.NewTestServer(b, waldursim.Config{Fixture: fx, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	kubeCalls := &countingTransport{}
	s, err := managedns.ParseSettings(map[string]any{"cr_namespace": crNS})
	if err != nil {
		b.Fatal(err)
	}
	components := map[string]config.BackendComponent{"cpu": {UnitFactor: 1}, "ram": {UnitFactor: 1}, "storage": {UnitFactor: 1}}
	be, err := managedns.New(s, components, managedns.Options{RESTConfig: c.RESTConfig(),
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { kubeCalls.rt = rt; return kubeCalls }})
	if err != nil {
		b.Fatal(err)
	}
	cycle := benchCycle(b, sim, fx, components, be, kubeCalls, slog.New(slog.NewTextHandler(io.Discard, nil)))
	d, k, w := cycle()
	sets := 0
	for _, call := range sim.Calls() {
		if call.Method == "POST" {
			sets++
		}
	}
	if sets != n {
		b.Fatalf("first cycle made %d set_usage calls, want %d", sets, n)
	}
	b.Logf("first cycle (%d resources, all submitted): %s, %d Kubernetes calls, %d Waldur calls (%d set_usage)", n, d.Round(time.Millisecond), k, w, sets)

	d, k, w = steadyCycles(b, "kube", cycle)
	b.Logf("steady cycle (%d resources, nothing changed): last %s, %d Kubernetes calls, %d Waldur calls", n, d.Round(time.Millisecond), k, w)
}
