package stompbridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// batch is how many events one benchmark iteration moves through each path.
const batch = 2000

// BenchmarkIngest measures events/s from a received STOMP frame to the
// handler's ack through the bus (decode, validate, publish with dedupe id,
// durable consumer, typed handler, ack), and in the same iteration the
// ceiling: raw nats.go JetStream async publish + pull consume + ack of the
// same payloads on the same server. It reports both rates and their ratio.
// The broker's own delivery and the STOMP ack frame are outside both paths.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	// Tracing as sitebus runs it when no collector is configured
	// (telemetry.SetupTracing installs the no-op provider). Left nil, both
	// would take OpenTelemetry's global stand-in, which sitebus never runs
	// with and which still builds a span per call: about 2% of this benchmark's
	// CPU, all of it on the bus path.
	tp := noop.NewTracerProvider()
	bs := bustest.New(b, bus.Config{Logger: slog.New(slog.DiscardHandler), TracerProvider: tp})
	// The raw path gets a stream of its own with the events stream's
	// settings (storage, retention, limits, duplicate window, replicas), so
	// both paths store alike; only the subjects differ. The events stream's
	// subject transform is left out: it rewrites only subjects without a
	// partition, which the bridge never publishes.
	js := bs.JetStream()
	events, err := js.Stream(ctx, bus.EventsStream)
	if err != nil {
		b.Fatal(err)
	}
	rawCfg := events.CachedInfo().Config
	rawCfg.Name, rawCfg.Description, rawCfg.Subjects, rawCfg.SubjectTransform = "RAW", "", []string{"raw.>"}, nil
	if _, err := js.CreateOrUpdateStream(ctx, rawCfg); err != nil {
		b.Fatal(err)
	}

	var handled atomic.Int64
	sub, err := bus.Subscribe(ctx, bs, bus.ConsumerConfig{Name: "bench", Stream: bus.EventsStream, FilterSubjects: []string{"waldur.*.order"}, Partitioned: true, Concurrency: 32},
		func(_ context.Context, ev *sitebusv1.WaldurEvent) error { handled.Add(1); return nil })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sub.Stop(ctx) })
	var rawAcked atomic.Int64
	rawCons, err := js.CreateOrUpdateConsumer(ctx, "RAW", jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := rawCons.Consume(func(m jetstream.Msg) { _ = m.Ack(); rawAcked.Add(1) }, jetstream.PullMaxMessages(500))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)

	br, err := New(bs, Config{Logger: slog.New(slog.DiscardHandler), TracerProvider: tp, Stomp: config.StompSettings{PrefetchCount: config.DefaultPrefetchCount}})
	if err != nil {
		b.Fatal(err)
	}
	s := newSubscription(Offering{Config: &config.Offering{WaldurOfferingUUID: off}}, "order")
	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"order_uuid": "%032x", "order_state": "pending-provider", "offering_uuid": "%s"}`, i, off)
	}
	dest := "/amq/queue/" + queueName(sub0, off, "order")

	var rawTotal, busTotal time.Duration
	next := 0
	b.ResetTimer()
	for range b.N {
		// Raw ceiling.
		start := time.Now()
		target := rawAcked.Load() + batch
		for i := range batch {
			if _, err := js.PublishAsync("raw.order", body(next+i), jetstream.WithMsgID(fmt.Sprint("raw", next+i))); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		for rawAcked.Load() < target {
			time.Sleep(100 * time.Microsecond)
		}
		rawTotal += time.Since(start)

		// Through the bridge and the bus, as many frames in flight as the
		// default prefetch lets the broker send.
		start = time.Now()
		target = handled.Load() + batch
		sem := make(chan struct{}, config.DefaultPrefetchCount)
		var wg sync.WaitGroup
		for i := range batch {
			sem <- struct{}{}
			wg.Add(1)
			f := Frame{Destination: dest, MessageID: fmt.Sprint("f", next+i), Body: body(next + i)}
			go func() {
				defer func() { <-sem; wg.Done() }()
				br.ingest(ctx, s, f, func() error { return nil })
			}()
		}
		wg.Wait()
		for handled.Load() < target {
			time.Sleep(100 * time.Microsecond)
		}
		busTotal += time.Since(start)
		next += batch
	}
	b.StopTimer()
	n := float64(b.N * batch)
	raw, viaBus := n/rawTotal.Seconds(), n/busTotal.Seconds()
	b.ReportMetric(raw, "raw-events/s")
	b.ReportMetric(viaBus, "bus-events/s")
	b.ReportMetric(viaBus/raw, "ratio")
}

const sub0 = "fedcba9876543210fedcba9876543210"
