package saga

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/telemetry"
)

type metrics struct {
	started  *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	parked   *prometheus.GaugeVec
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	expired  *prometheus.CounterVec
}

// newMetrics registers the saga metrics on reg (nil: not exported). A second
// coordinator on the same registry reuses the collectors already there.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_sagas_started_total", Help: "Sagas created by Start, by definition.",
		}, []string{"definition"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_sagas_total", Help: "Sagas that reached an outcome (succeeded, compensated, failed, parked), by definition.",
		}, []string{"definition", "outcome"}),
		parked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sitebus_sagas_parked", Help: "Sagas parked now, waiting for an operator (sitebus sagas retry), by definition.",
		}, []string{"definition"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_saga_step_attempts_total", Help: "Activity attempts by definition, step, phase (action, compensation) and result (ok, retry, failed).",
		}, []string{"definition", "step", "phase", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sitebus_saga_step_duration_seconds", Help: "Activity attempt latency by definition, step and phase.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"definition", "step", "phase"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_sagas_expired_total", Help: "Finished sagas removed from the bucket once older than their retention, by definition.",
		}, []string{"definition"}),
	}
	m.started = telemetry.Register(reg, m.started)
	m.expired = telemetry.Register(reg, m.expired)
	m.outcomes = telemetry.Register(reg, m.outcomes)
	m.parked = telemetry.Register(reg, m.parked)
	m.attempts = telemetry.Register(reg, m.attempts)
	m.duration = telemetry.Register(reg, m.duration)
	return m
}
