package keycloaksync

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/telemetry"
)

type metrics struct {
	commands *prometheus.CounterVec
	pending  prometheus.Gauge
	removed  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		commands: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_keycloak_commands_total",
			Help: "keycloak-sync commands handled, by command and outcome (ok, retry, terminal).",
		}, []string{"command", "outcome"})),
		pending: telemetry.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sitebus_keycloak_pending_memberships",
			Help: "Memberships waiting for their user to appear in Keycloak.",
		})),
		removed: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sitebus_keycloak_leftover_groups_removed_total",
			Help: "Managed groups removed because their resource is gone.",
		})),
	}
}
