package bus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/telemetry"
)

type metrics struct {
	published    *prometheus.CounterVec
	publishErrs  *prometheus.CounterVec
	handled      *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	wait         *prometheus.HistogramVec
	leasesLost   prometheus.Counter
}

// newMetrics registers the bus metrics on reg (nil: not exported). A second
// Bus on the same registry reuses the collectors already there.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_bus_published_total", Help: "Messages published to JetStream, by stream subject root.",
		}, []string{"root"}),
		publishErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_bus_publish_errors_total", Help: "Failed JetStream publishes, by stream subject root.",
		}, []string{"root"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_bus_handled_total", Help: "Handled messages by consumer and outcome (ack, retry, dead_letter).",
		}, []string{"consumer", "outcome"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_bus_dead_lettered_total", Help: "Messages parked in the dead-letter stream, by source.",
		}, []string{"source"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sitebus_bus_handler_duration_seconds", Help: "Handler latency by consumer.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"consumer"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sitebus_bus_wait_seconds", Help: "Time a delivered message waited for its ordering key and a handler slot, by consumer.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"consumer"}),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sitebus_bus_leases_lost_total", Help: "Key leases that expired and were taken by another process while held (work under them may have overlapped).",
		}),
	}
	m.published = telemetry.Register(reg, m.published)
	m.leasesLost = telemetry.Register(reg, m.leasesLost)
	m.wait = telemetry.Register(reg, m.wait)
	m.publishErrs = telemetry.Register(reg, m.publishErrs)
	m.handled = telemetry.Register(reg, m.handled)
	m.deadLettered = telemetry.Register(reg, m.deadLettered)
	m.latency = telemetry.Register(reg, m.latency)
	return m
}
