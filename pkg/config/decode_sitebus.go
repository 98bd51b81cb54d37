package config

import "gopkg.in/yaml.v3"

// sitebus decodes the sitebus-only section onto its defaults (newSitebus).
// The periods stay zero when unset, meaning "the environment's or the
// service's default", so an explicit zero is refused as it is decoded.
func (d *decoder) sitebus(n *yaml.Node, s scope, sb *Sitebus) {
	d.fields(n, s, map[string]setter{
		"nats_url":   d.str(&sb.NATSURL),
		"data_dir":   d.str(&sb.DataDir),
		"http_addr":  d.str(&sb.HTTPAddr),
		"log_format": d.str(&sb.LogFormat),
		"services":   d.stringList(&sb.Services),
		// VMs one cluster create makes at once (cluster-provisioner).
		"cluster_vm_concurrency": d.integer(&sb.ClusterVMConcurrency),
		"stomp": func(n *yaml.Node, s scope) {
			st := &sb.Stomp
			d.fields(n, s, map[string]setter{
				"transport":      d.str(&st.Transport),
				"tcp_host":       d.str(&st.TCPHost),
				"tcp_port":       d.integer(&st.TCPPort),
				"prefetch_count": d.integer(&st.PrefetchCount),
				"reconnect_max":  d.duration(&st.ReconnectMax),
				"heartbeat":      d.duration(&st.Heartbeat),
				"max_frame_body": d.integer(&st.MaxFrameBody),
			})
		},
		"periods": func(n *yaml.Node, s scope) {
			p := &sb.Periods
			d.fields(n, s, map[string]setter{
				"order_process_period":    d.optDuration(&p.OrderProcess, 0),
				"report_period":           d.optDuration(&p.Report, 0),
				"membership_sync_period":  d.optDuration(&p.MembershipSync, 0),
				"reconciliation_period":   d.optDuration(&p.Reconciliation, 0),
				"keycloak_pending_period": d.optDuration(&sb.KeycloakPendingPeriod, minKeycloakPendingPeriod),
				"keycloak_cleanup_period": d.duration(&sb.KeycloakCleanupPeriod),
				"cluster_pull_period":     d.duration(&sb.ClusterPullPeriod),
				"cluster_ready_timeout":   d.duration(&sb.ClusterReadyTimeout),
				"drift_period":            d.duration(&sb.DriftPeriod),
				"saga_lease":              d.optDuration(&sb.SagaLease, minSagaLease),
			})
		},
		"streams": func(n *yaml.Node, s scope) {
			st := &sb.Streams
			d.fields(n, s, map[string]setter{
				"events_max_age":   d.duration(&st.EventsMaxAge),
				"duplicate_window": d.duration(&st.DuplicateWindow),
				"dlq_max_age":      d.duration(&st.DLQMaxAge),
				"saga_retention":   d.duration(&st.SagaRetention),
				"replicas":         d.integer(&st.Replicas),
			})
		},
		"status_page": func(n *yaml.Node, s scope) {
			var token, tokenFile *yaml.Node
			keep := func(p **yaml.Node) setter { return func(n *yaml.Node, _ scope) { *p = n } }
			d.fields(n, s, map[string]setter{
				"token":        keep(&token),
				"token_file":   keep(&tokenFile),
				"check_period": d.duration(&sb.StatusPage.CheckPeriod),
			})
			sb.StatusPage.Token = d.secret(token, tokenFile, s, "token")
		},
		"ordering": func(n *yaml.Node, s scope) {
			o := &sb.Ordering
			d.fields(n, s, map[string]setter{
				"mode":  d.str(&o.Mode),
				"slots": d.integer(&o.Slots),
			})
		},
	})
}
