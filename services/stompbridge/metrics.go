package stompbridge

import (
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/telemetry"
)

type metrics struct {
	frames        *prometheus.CounterVec
	connected     *prometheus.GaugeVec
	reconnects    *prometheus.CounterVec
	ingestLatency prometheus.Histogram
	reconciled    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_stomp_frames_total", Help: "STOMP frames acked, by object type and outcome (published, duplicate, dead_lettered).",
		}, []string{"object_type", "outcome"}),
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sitebus_stomp_connected", Help: "1 while the STOMP subscription of an offering and object type is active.",
		}, []string{"offering", "object_type"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_stomp_reconnects_total", Help: "STOMP sessions that ended and were retried.",
		}, []string{"object_type"}),
		ingestLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sitebus_stomp_ingest_seconds", Help: "From frame received to frame acked (after the JetStream PubAck).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		reconciled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_reconciler_orders_total", Help: "Pending orders found by polling Waldur, by outcome (published, duplicate).",
		}, []string{"outcome"}),
	}
	m.frames = telemetry.Register(reg, m.frames)
	m.connected = telemetry.Register(reg, m.connected)
	m.reconnects = telemetry.Register(reg, m.reconnects)
	m.ingestLatency = telemetry.Register(reg, m.ingestLatency)
	m.reconciled = telemetry.Register(reg, m.reconciled)
	return m
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err) // only our own well-formed messages get here
	}
	return b
}
