package keycloaksync

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/telemetry"
)

type metrics struct {
	commands *prometheus.CounterVec
	pending  prometheus.Gauge
	removed  prometheus.Counter
	adopted  prometheus.Counter
	cleanups *prometheus.CounterVec
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
		adopted: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sitebus_keycloak_groups_adopted_total",
			Help: "Marked groups without an offering (the Python agent's, an older sitebus's) given the offering of the live resource that names them.",
		})),
		cleanups: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_keycloak_cleanup_passes_total",
			Help: "Leftover-group cleanup passes per realm, by outcome: done (groups looked at), skipped (a listing failed or was empty).",
		}, []string{"outcome"})),
	}
}
