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
)

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
			createPod(b, dyn, id, "web", container{"cpu": "500m", "memory": "1Gi"}, container{"cpu": "250m", "memory": "256Mi"})
			createPod(b, dyn, id, "worker", container{"cpu": "1", "memory": "2Gi"})
			createPVC(b, dyn, id, "data", "10Gi")
		})
	}
	wg.Wait()
	b.Logf("setup: %d namespaces, %d pods, %d PVCs in %s", n, 2*n, n, time.Since(setup).Round(time.Millisecond))

	fx := fixture(b, resources)
	sim := waldursim.NewTestServer(b, waldursim.Config{Fixture: fx, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	kubeCalls, waldurCalls := &countingTransport{}, &countingTransport{}
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
	wc, err := waldur.New(waldur.Config{APIURL: sim.URL() + "/api/", Token: fx.Users[0].Token,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { waldurCalls.rt = rt; return waldurCalls }})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := usage.New(usage.Config{
		Offerings: []usage.Offering{{Config: &config.Offering{Name: "bench", WaldurOfferingUUID: offeringUUID, BackendComponents: components}, Waldur: wc, Backend: be}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}

	cycle := func() (time.Duration, int64, int64) {
		k0, w0 := kubeCalls.n.Load(), waldurCalls.n.Load()
		start := time.Now()
		svc.Cycle(context.Background())
		return time.Since(start), kubeCalls.n.Load() - k0, waldurCalls.n.Load() - w0
	}
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

	b.ResetTimer()
	var kTotal, wTotal int64
	for b.Loop() {
		d, k, w = cycle()
		kTotal += k
		wTotal += w
	}
	b.ReportMetric(float64(kTotal)/float64(b.N), "kube-calls/op")
	b.ReportMetric(float64(wTotal)/float64(b.N), "waldur-calls/op")
	b.Logf("steady cycle (%d resources, nothing changed): last %s, %d Kubernetes calls, %d Waldur calls", n, d.Round(time.Millisecond), k, w)
}
