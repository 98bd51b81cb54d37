package distributed_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// waldurLatency is how long the simulated Waldur takes to answer each call
// in the throughput figure.
const waldurLatency = 50 * time.Millisecond

// TestReplicaThroughput measures how many create orders per second 1, 2
// and 4 order-service replicas settle on the distributed topology, against
// a Waldur that answers every call after 50 ms. The order processes are
// stopped while SITEBUS_BENCH_ORDERS (default 1,000: with 300 the run is over in
// 2-4 s and the replicas' start-up skew weighs on it) create orders are
// delivered and stored on the events stream, then started: the clock runs
// from the first order call to Waldur to the last set_state_done, so it
// measures the order service, not the bridge's ingestion or process start.
// It is a measurement, not a check of make test: it runs when
// SITEBUS_BENCH_REPLICAS=1 (make bench-replicas). SITEBUS_BENCH_ORDERING
// =process measures the process ordering mode instead of cluster.
func TestReplicaThroughput(t *testing.T) {
	if os.Getenv("SITEBUS_BENCH_REPLICAS") == "" {
		t.Skip("a measurement; run it with SITEBUS_BENCH_REPLICAS=1 (make bench-replicas)")
	}
	n := envInt(t, "SITEBUS_BENCH_ORDERS", 1000)
	ordering := os.Getenv("SITEBUS_BENCH_ORDERING") // default: the topology's (cluster)
	var lines []string
	var base float64
	for _, replicas := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d order replicas", replicas), func(t *testing.T) {
			rate := measureThroughput(t, replicas, n, ordering)
			if base == 0 {
				base = rate
			}
			lines = append(lines, fmt.Sprintf("  %d order replica(s): %6.1f orders/s  (×%.2f of 1 replica)", replicas, rate, rate/base))
		})
	}
	if ordering == "" {
		ordering = "cluster"
	}
	out := fmt.Sprintf("create orders per second, %d orders, ordering mode %s, Waldur answering in %s:\n%s\n", n, ordering, waldurLatency, strings.Join(lines, "\n"))
	t.Log(out)
	fmt.Print(out)
}

// measureThroughput runs n create orders through a site with `replicas`
// order processes and returns orders per second.
func measureThroughput(t *testing.T, replicas, n int, ordering string) float64 {
	s := newSite(t, siteOptions{replicas: map[string]int{"order": replicas}, waldurLatency: waldurLatency, env: noPolling, ordering: ordering})
	ctx := harness.Context(t, 20*time.Minute)
	orders := make([]string, n)
	for i := range orders {
		res, err := s.Admin.CreateOrder(ctx, waldursim.CreateOrderRequest{ResourceName: fmt.Sprintf("tp-%04d", i),
			ProjectUUID: s.projects[0], Limits: map[string]int{"cpu": 1, "ram": 1, "storage": 10}, Silent: true})
		if err != nil {
			t.Fatal(err)
		}
		orders[i] = res.Order.UUID
	}
	orderProcs := s.Distributed.Service("order")
	for _, p := range orderProcs {
		s.Distributed.Stop(p)
	}
	deliver := make(chan string)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range 16 {
		wg.Go(func() {
			for uuid := range deliver {
				if err := harness.PublishOrderEvent(ctx, s.Admin, s.OfferingHex, uuid, "deliver-"+uuid); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, uuid := range orders {
		deliver <- uuid
	}
	close(deliver)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	reader := harness.NewReader(t, s.nats.URL())
	harness.Eventually(t, 2*time.Minute, fmt.Sprintf("%d order events stored", n), func() bool {
		return len(reader.Events(t, "waldur."+s.OfferingHex+".order.*")) >= n // every partition
	})

	start := time.Now()
	var started sync.WaitGroup
	for _, p := range orderProcs {
		started.Go(func() {
			if err := s.Distributed.Start(p, 2*time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	started.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, uuid := range orders {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		o, err := s.Admin.WaitOrder(wctx, uuid, "done", "erred")
		cancel()
		if err != nil || o.State != "done" {
			t.Fatalf("order %s: %v %+v", uuid, err, o)
		}
	}
	// The call log's times are when the answers went out: the first
	// order call began one latency earlier.
	var first, last time.Time
	for _, c := range s.Waldur.Calls() {
		if c.Time.Before(start) || !strings.HasPrefix(c.Path, "/api/marketplace-orders/") {
			continue
		}
		if first.IsZero() || c.Time.Before(first) {
			first = c.Time
		}
		if strings.HasSuffix(strings.TrimRight(c.Path, "/"), "/set_state_done") && c.Time.After(last) {
			last = c.Time
		}
	}
	elapsed := last.Sub(first.Add(-waldurLatency))
	rate := float64(n) / elapsed.Seconds()
	t.Logf("%d order replica(s): %d orders in %s from the first order call (%s from the start of the processes), %.1f orders/s",
		replicas, n, elapsed.Round(time.Millisecond), last.Sub(start).Round(time.Millisecond), rate)
	return rate
}
