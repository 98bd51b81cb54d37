package bus_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// BenchmarkClusterOrderingReplicas measures how throughput grows with
// replicas in cluster ordering when handlers wait on Waldur (50 ms each):
// every replica handles Concurrency messages at once, the slots bound the
// whole. Run with a fixed count, e.g.
//
//	go test -run '^$' -bench ClusterOrderingReplicas -benchtime 400x ./bus/
//
// msgs/s is the throughput, x1 its ratio to one replica's (reported once
// the one-replica case has run).
func BenchmarkClusterOrderingReplicas(b *testing.B) {
	const (
		latency     = 50 * time.Millisecond
		concurrency = 4
		slots       = bus.DefaultSlots
		keys        = 200
	)
	var oneReplica float64
	for _, replicas := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			s := bustest.Server(b)
			ord := bus.Ordering{Mode: bus.OrderingCluster, Slots: slots}
			pub := bustest.On(b, s, bus.Config{Ordering: ord})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			for i := range b.N {
				key := resourceKey(i % keys)
				subject, err := bus.EventSubject(orderingOffering, "resource", key)
				if err != nil {
					b.Fatal(err)
				}
				id := fmt.Sprintf("%s#%d", key, i)
				if _, err := pub.Publish(ctx, subject, &sitebusv1.WaldurEvent{MessageId: id}, bus.WithMsgID(id), bus.WithOrderingKey(key)); err != nil {
					b.Fatal(err)
				}
			}
			buses := make([]*bus.Bus, replicas)
			for i := range buses {
				buses[i] = bustest.On(b, s, bus.Config{Ordering: ord})
			}
			var handled atomic.Int64
			done, gate := make(chan struct{}), make(chan struct{})
			cfg := orderedConsumer()
			cfg.Concurrency = concurrency
			// Every replica's consumers are made before the clock starts;
			// the first deliveries wait at the gate.
			for _, rb := range buses {
				sub, err := bus.Subscribe(ctx, rb, cfg, func(context.Context, *sitebusv1.WaldurEvent) error {
					<-gate
					time.Sleep(latency) // Waldur answering
					if handled.Add(1) == int64(b.N) {
						close(done)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { sub.Stop(context.Background()) })
			}
			b.ResetTimer()
			start := time.Now()
			close(gate)
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatalf("%d of %d messages handled", handled.Load(), b.N)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "msgs/s")
			if replicas == 1 {
				oneReplica = rate
			}
			if oneReplica > 0 {
				b.ReportMetric(rate/oneReplica, "x1")
			}
		})
	}
}
