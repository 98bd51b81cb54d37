package config

import "gopkg.in/yaml.v3"

// sitebus decodes the sitebus-only section.
func (d *decoder) sitebus(n *yaml.Node, s scope, sb *Sitebus) {
	d.fields(n, s, map[string]setter{
		"nats_url":   d.str(&sb.NATSURL),
		"data_dir":   d.str(&sb.DataDir),
		"http_addr":  d.str(&sb.HTTPAddr),
		"log_format": d.str(&sb.LogFormat),
		"services":   d.stringList(&sb.Services),
		"stomp": func(n *yaml.Node, s scope) {
			st := &sb.Stomp
			d.fields(n, s, map[string]setter{
				"transport":      d.str(&st.Transport),
				"tcp_host":       d.str(&st.TCPHost),
				"tcp_port":       d.integer(&st.TCPPort),
				"prefetch_count": d.integer(&st.PrefetchCount),
				"reconnect_max":  d.duration(&st.ReconnectMax),
				"heartbeat":      d.duration(&st.Heartbeat),
			})
		},
		"periods": func(n *yaml.Node, s scope) {
			p := &sb.Periods
			d.fields(n, s, map[string]setter{
				"order_process_period":    d.duration(&p.OrderProcess),
				"report_period":           d.duration(&p.Report),
				"membership_sync_period":  d.duration(&p.MembershipSync),
				"reconciliation_period":   d.duration(&p.Reconciliation),
				"keycloak_pending_period": d.duration(&sb.KeycloakPendingPeriod),
				"saga_lease":              d.duration(&sb.SagaLease),
			})
		},
		"streams": func(n *yaml.Node, s scope) {
			st := &sb.Streams
			d.fields(n, s, map[string]setter{
				"events_max_age":   d.duration(&st.EventsMaxAge),
				"duplicate_window": d.duration(&st.DuplicateWindow),
				"dlq_max_age":      d.duration(&st.DLQMaxAge),
			})
		},
	})
}
