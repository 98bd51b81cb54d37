package orders_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// BenchmarkCreateOrderLatency measures, over 200 Create orders sent one
// after another through the whole system (simulated Waldur → RabbitMQ →
// sitebus process → kube-apiserver → Waldur), the time from the order's
// STOMP frame being published to Waldur receiving set_state_done, and counts
// the external API calls per order. Run with `make bench-orders`.
func BenchmarkCreateOrderLatency(b *testing.B) {
	const orders = 200
	s := newSite(b)
	if err := s.Admin.ResetCalls(ctx(b)); err != nil {
		b.Fatal(err)
	}
	k8sBefore := s.k8sCalls()
	var samples []harness.OrderStart
	b.ResetTimer()
	for i := range orders {
		start := time.Now()
		u, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: fmt.Sprintf("lat-%03d", i), Limits: map[string]int{"cpu": 1, "ram": 2, "storage": 5}})
		samples = append(samples, harness.OrderStart{UUID: u, Start: start})
		s.WaitOrder(u, "done")
	}
	b.StopTimer()
	doneAt, waldurCalls := doneTimes(b, s)
	lat := harness.Latencies(b, samples, doneAt)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	k8s := s.k8sCalls() - k8sBefore
	b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(waldurCalls)/orders, "waldur-calls/order")
	b.ReportMetric(k8s/orders, "k8s-calls/order")
	fmt.Printf("create order, STOMP frame → set_state_done, %d orders: p50 %s, p99 %s, max %s; per order %.1f Waldur calls, %.1f Kubernetes calls\n",
		orders, p(0.5).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond),
		float64(waldurCalls)/orders, k8s/orders)
	// Where the time goes, from sitebus's own histograms (means).
	_, m := s.Sitebus.Get("/metrics")
	for _, h := range []string{
		"sitebus_stomp_ingest_seconds",
		`sitebus_bus_handler_duration_seconds{consumer="order"}`,
		`sitebus_order_seconds{type="Create"}`,
	} {
		fmt.Printf("  mean %-58s %s\n", h, meanOf(m, h))
	}
}

// doneTimes reads the simulator's call log: when each order (by UUID
// without dashes) got its set_state_done, and how many Waldur API calls
// were made in all.
func doneTimes(b *testing.B, s *site) (doneAt map[string]time.Time, waldurCalls int) {
	b.Helper()
	calls, err := s.Admin.Calls(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	doneAt = map[string]time.Time{}
	for _, c := range calls {
		if !strings.HasPrefix(c.Path, "/api/") {
			continue
		}
		waldurCalls++
		if strings.HasSuffix(c.Path, "/set_state_done/") {
			doneAt[strings.ReplaceAll(strings.Split(c.Path, "/")[3], "-", "")] = c.Time
		}
	}
	return doneAt, waldurCalls
}

// meanOf computes a histogram's mean from its _sum and _count lines.
func meanOf(metrics, name string) string {
	base, labels, _ := strings.Cut(name, "{")
	if labels != "" {
		labels = "{" + labels
	}
	val := func(series string) float64 {
		for _, l := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(l, series+" ") {
				v, _ := strconv.ParseFloat(strings.TrimPrefix(l, series+" "), 64)
				return v
			}
		}
		return 0
	}
	sum, count := val(base+"_sum"+labels), val(base+"_count"+labels)
	if count == 0 {
		return "-"
	}
	return (time.Duration(sum / count * float64(time.Second))).Round(10 * time.Microsecond).String()
}

// k8sCalls sums sitebus's requests to the Kubernetes API so far.
func (s *site) k8sCalls() float64 {
	_, m := s.Sitebus.Get("/metrics")
	total := 0.0
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "sitebus_http_client_requests_total{") && strings.Contains(l, `target="kubernetes"`) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
		}
	}
	return total
}

// BenchmarkCreateOrderBurst puts 200 Create orders for 200 resources on the
// bus at once (the Waldur simulator answering immediately) and measures the
// time until all are done and each order's latency from that moment to
// set_state_done. Run with `make bench-orders`, next to the paced mode.
func BenchmarkCreateOrderBurst(b *testing.B) {
	const orders = 200
	const offeringHex = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	s := newSite(b)
	var uuids []string
	for i := range orders {
		res, err := s.Admin.CreateOrder(ctx(b), waldursim.CreateOrderRequest{ResourceName: fmt.Sprintf("burst-%03d", i), Limits: map[string]int{"cpu": 1, "ram": 2, "storage": 5}, Silent: true})
		if err != nil {
			b.Fatal(err)
		}
		uuids = append(uuids, strings.ReplaceAll(res.Order.UUID, "-", ""))
	}
	bb := harness.NewReader(b, s.Sitebus.NATSURL).Bus()
	if err := s.Admin.ResetCalls(ctx(b)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, u := range uuids {
		wg.Go(func() {
			body := fmt.Sprintf(`{"order_uuid": "%s", "order_state": "pending-provider", "offering_uuid": "%s"}`, u, offeringHex)
			ev := &sitebusv1.WaldurEvent{ObjectType: events.Order, OfferingUuid: offeringHex, Body: []byte(body), MessageId: "burst-" + u,
				ReceivedAt: timestamppb.New(start), Destination: "benchmark"}
			subject, err := bus.EventSubject(offeringHex, events.Order, events.OrderKey(u))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := bb.Publish(context.Background(), subject, ev, bus.WithMsgID(ev.MessageId), bus.WithOrderingKey(events.OrderKey(u))); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	published := time.Since(start)
	for _, u := range uuids {
		s.WaitOrder(u, "done")
	}
	b.StopTimer()
	doneAt, _ := doneTimes(b, s)
	var starts []harness.OrderStart
	for _, u := range uuids {
		starts = append(starts, harness.OrderStart{UUID: u, Start: start})
	}
	lat := harness.Latencies(b, starts, doneAt)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "all-done-ms")
	b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	fmt.Printf("create order burst, %d orders on the bus at once (published in %s): all done after %s; p50 %s, p99 %s\n",
		orders, published.Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond),
		p(0.5).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond))
	_, m := s.Sitebus.Get("/metrics")
	for _, h := range []string{
		`sitebus_bus_wait_seconds{consumer="order"}`,
		`sitebus_bus_handler_duration_seconds{consumer="order"}`,
	} {
		fmt.Printf("  mean %-58s %s\n", h, meanOf(m, h))
	}
}
