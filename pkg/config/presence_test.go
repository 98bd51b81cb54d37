package config

import (
	"fmt"
	"testing"
	"time"
)

// The Python agent's models and settings.get(key, default) give the
// default only to a missing key: a key set to "", 0, false or [] keeps that
// value. These tables check each decoder for it; where such a value cannot
// work, the file is refused at that key, never quietly given the default.

// presenceCase is a config (baseLines plus extra lines from line 7) and
// either what it decodes to or the problems it has.
type presenceCase struct {
	set   map[string]string // base offering keys replaced, as conf does
	extra []string
	env   map[string]string
	check func(t *testing.T, r *Root)
	want  []string
}

func runPresence(t *testing.T, tests map[string]presenceCase) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data := conf(tc.set, tc.extra...)
			if tc.want != nil {
				_, err := Parse(data, "config.yaml", envOf(tc.env))
				wantProblems(t, err, tc.want...)
				return
			}
			tc.check(t, mustParse(t, data, envOf(tc.env)))
		})
	}
}

const offAt = `offerings[0] ("k8s-prod").`

func TestOfferingKeysMissingOrExplicit(t *testing.T) {
	runPresence(t, map[string]presenceCase{
		"missing username_management_backend is base": {check: func(t *testing.T, r *Root) {
			eq(t, "backend", r.Offerings[0].UsernameManagementBackend, "base")
		}},
		"explicit empty username_management_backend stays empty": {
			extra: []string{`    username_management_backend: ""`},
			check: func(t *testing.T, r *Root) { eq(t, "backend", r.Offerings[0].UsernameManagementBackend, "") },
		},
		"explicit empty stomp_ws_path is kept; the endpoint falls back as Python's `or` does": {
			extra: []string{`    stomp_ws_path: ""`},
			check: func(t *testing.T, r *Root) {
				eq(t, "path", r.Offerings[0].StompWSPath, "")
				_, _, path, _ := r.Offerings[0].STOMPEndpoint()
				eq(t, "endpoint path", path, "/rmqws-stomp")
			},
		},
		"explicit false keeps false for keys that default to true": {
			extra: []string{"    websocket_use_tls: false", "    verify_ssl: false"},
			check: func(t *testing.T, r *Root) {
				eq(t, "tls", r.Offerings[0].WebsocketUseTLS, false)
				eq(t, "verify", r.Offerings[0].VerifySSL, false)
			},
		},
		"explicit false stomp_membership_sync_enabled is not unset": {
			extra: []string{"    stomp_membership_sync_enabled: false", "    stomp_enabled: true"},
			check: func(t *testing.T, r *Root) { eq(t, "via stomp", r.Offerings[0].MembershipViaSTOMP(), false) },
		},
		"explicit empty mode backends disable the modes": {
			extra: []string{`    order_processing_backend: ""`, `    membership_sync_backend: ""`},
			check: func(t *testing.T, r *Root) { eq(t, "types", len(r.Offerings[0].ObservableObjectTypes()), 0) },
		},
		"explicit empty backend_settings and backend_components are empty": {
			extra: []string{"    backend_settings: {}", "    backend_components: {}"},
			check: func(t *testing.T, r *Root) {
				eq(t, "settings", r.Offerings[0].BackendSettings, map[string]any{})
				eq(t, "components", r.Offerings[0].BackendComponents, map[string]BackendComponent{})
			},
		},
		"explicit empty name is accepted as Python's model accepts it": {
			extra: []string{`  - name: ""`, "    waldur_api_url: https://w.example.com/", "    waldur_api_token: t",
				"    waldur_offering_uuid: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", "    backend_type: okd"},
			check: func(t *testing.T, r *Root) { eq(t, "name", r.Offerings[1].Name, "") },
		},
		"a missing name is required": {
			extra: []string{"  - waldur_api_url: https://w.example.com/", "    waldur_api_token: t",
				"    waldur_offering_uuid: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", "    backend_type: okd"},
			want: []string{`config.yaml:7: offerings[1].name: is required`},
		},
		"explicit empty values of required keys are refused": {
			set: map[string]string{"backend_type": `""`, "waldur_offering_uuid": `""`, "waldur_api_url": `""`},
			want: []string{
				`config.yaml:3: ` + offAt + `waldur_api_url: is required`,
				`config.yaml:5: ` + offAt + `waldur_offering_uuid: is required`,
				`config.yaml:6: ` + offAt + `backend_type: is required`,
			},
		},
		"a wrong type names the key and the offering": {
			extra: []string{"    stomp_ws_port: [443]", "    stomp_enabled: {}"},
			want: []string{
				`config.yaml:7: ` + offAt + `stomp_ws_port: must be an integer, not a list`,
				`config.yaml:8: ` + offAt + `stomp_enabled: must be true or false, not a mapping`,
			},
		},
	})
}

func TestRootKeysMissingOrExplicit(t *testing.T) {
	runPresence(t, map[string]presenceCase{
		"missing keys take the Python defaults": {check: func(t *testing.T, r *Root) {
			eq(t, "timezone", r.Timezone, "UTC")
			eq(t, "log level", r.LogLevel, "INFO")
			eq(t, "reporting periods", r.ReportingPeriods, 2)
			eq(t, "shipping", r.LogShipping, LogShipping{ShipIntervalSeconds: 60, BufferSizeMB: 1, LogLevel: "WARNING"})
		}},
		"explicit false and empty values are kept": {
			extra: []string{"expose_backend_error_details: false", `global_proxy: ""`, `sentry_dsn: ""`, "log_shipping: {enabled: false}"},
			check: func(t *testing.T, r *Root) {
				eq(t, "expose", r.ExposeBackendErrorDetails, false)
				eq(t, "proxy", r.GlobalProxy, "")
				eq(t, "shipping keeps its other defaults", r.LogShipping, LogShipping{ShipIntervalSeconds: 60, BufferSizeMB: 1, LogLevel: "WARNING"})
			},
		},
		"explicit empty or zero values that cannot work are refused, not defaulted": {
			extra: []string{`timezone: ""`, `log_level: ""`, "reporting_periods: 0",
				"log_shipping:", "  ship_interval_seconds: 0", "  buffer_size_mb: 0", `  log_level: ""`},
			want: []string{
				`config.yaml:7: timezone: unknown timezone ""`,
				`config.yaml:8: log_level: "" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`,
				`config.yaml:9: reporting_periods: 0 is out of range 1..12`,
				`config.yaml:11: log_shipping.ship_interval_seconds: 0 is below the minimum of 10`,
				`config.yaml:12: log_shipping.buffer_size_mb: 0 is below the minimum of 1`,
				`config.yaml:13: log_shipping.log_level: "" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`,
			},
		},
		"a wrong type names the key": {
			extra: []string{"reporting_periods: [2]", "log_shipping: {enabled: maybe}"},
			want: []string{
				`config.yaml:7: reporting_periods: must be an integer, not a list`,
				`config.yaml:8: log_shipping.enabled: "maybe" is not true or false`,
			},
		},
	})
}

func TestComponentKeysMissingOrExplicit(t *testing.T) {
	comp := func(fields ...string) []string {
		return append([]string{"    backend_components:", "      cpu:"}, fields...)
	}
	const at = `config.yaml:%d: ` + offAt + `backend_components.cpu.`
	runPresence(t, map[string]presenceCase{
		"missing unit_factor is 1 and missing limit is unset": {
			extra: comp("        measured_unit: cores", "        label: CPU", "        accounting_type: limit"),
			check: func(t *testing.T, r *Root) {
				c := r.Offerings[0].BackendComponents["cpu"]
				eq(t, "factor", c.UnitFactor, 1.0)
				eq(t, "limit", c.Limit == nil, true)
			},
		},
		"explicit empty measured_unit and label are kept (Python's model takes any string)": {
			extra: comp(`        measured_unit: ""`, `        label: ""`, "        accounting_type: usage"),
			check: func(t *testing.T, r *Root) {
				c := r.Offerings[0].BackendComponents["cpu"]
				eq(t, "unit", c.MeasuredUnit, "")
				eq(t, "label", c.Label, "")
			},
		},
		"explicit zero unit_factor and limit are kept": {
			extra: comp("        measured_unit: c", "        label: C", "        accounting_type: usage",
				"        unit_factor: 0", "        limit: 0", "        is_boolean: false"),
			check: func(t *testing.T, r *Root) {
				c := r.Offerings[0].BackendComponents["cpu"]
				eq(t, "factor", c.UnitFactor, 0.0)
				eq(t, "limit", *c.Limit, 0.0)
				eq(t, "extra", c.Extra["is_boolean"], false)
			},
		},
		"missing required keys are required": {
			extra: comp("        unit_factor: 2"),
			want: []string{
				sprintf(at, 8) + "measured_unit: is required",
				sprintf(at, 8) + "label: is required",
				sprintf(at, 8) + "accounting_type: is required (one of usage, limit, one)",
			},
		},
		"explicit empty accounting_type is refused": {
			extra: comp("        measured_unit: c", "        label: C", `        accounting_type: ""`),
			want:  []string{sprintf(at, 11) + `accounting_type: "" is not one of usage, limit, one`},
		},
		"a wrong type names the key and the offering": {
			extra: comp("        measured_unit: [c]", "        label: C", "        accounting_type: usage", "        limit: lots"),
			want: []string{
				sprintf(at, 9) + "measured_unit: must be a string, not a list",
				sprintf(at, 12) + `limit: "lots" is not a number`,
			},
		},
	})
}

func TestSitebusKeysMissingOrExplicit(t *testing.T) {
	sb := func(lines ...string) []string { return append([]string{"sitebus:"}, lines...) }
	runPresence(t, map[string]presenceCase{
		"explicit empty values that mean something are kept": {
			extra: sb(`  nats_url: ""`, "  services: []", "  stomp:", `    tcp_host: ""`),
			check: func(t *testing.T, r *Root) {
				eq(t, "nats", r.Sitebus.NATSURL, "")
				eq(t, "services", len(r.Sitebus.Services), 0)
				eq(t, "stomp", r.Sitebus.Stomp, StompSettings{Transport: "websocket", TCPPort: 61613, PrefetchCount: 256, ReconnectMax: 120 * time.Second, Heartbeat: 10 * time.Second, MaxFrameBody: 1 << 20})
			},
		},
		"explicit empty or zero values that cannot work are refused, not defaulted": {
			extra: sb(`  data_dir: ""`, `  http_addr: ""`, `  log_format: ""`,
				"  stomp:", `    transport: ""`, "    tcp_port: 0", "    prefetch_count: 0", "    reconnect_max: 0s", "    heartbeat: 0s", "    max_frame_body: 0",
				"  streams:", "    events_max_age: 0s", "    duplicate_window: 0s", "    dlq_max_age: 0s"),
			want: []string{
				`config.yaml:8: sitebus.data_dir: must not be empty`,
				`config.yaml:9: sitebus.http_addr: "" is not a host:port address`,
				`config.yaml:10: sitebus.log_format: "" is not one of json, text`,
				`config.yaml:12: sitebus.stomp.transport: "" is not one of websocket, tcp`,
				`config.yaml:13: sitebus.stomp.tcp_port: 0 is not a TCP port`,
				`config.yaml:14: sitebus.stomp.prefetch_count: 0 must be at least 1`,
				`config.yaml:15: sitebus.stomp.reconnect_max: 0s must be positive`,
				`config.yaml:16: sitebus.stomp.heartbeat: 0s must be positive`,
				`config.yaml:17: sitebus.stomp.max_frame_body: 0 is not between 1024 and 15728640 bytes`,
				`config.yaml:19: sitebus.streams.events_max_age: 0s must be positive`,
				`config.yaml:20: sitebus.streams.duplicate_window: 0s is shorter than the minimum of 10m0s`,
				`config.yaml:21: sitebus.streams.dlq_max_age: 0s must be positive`,
			},
		},
		"missing periods are unset and null periods too": {
			extra: sb("  periods:", "    saga_lease: null"),
			check: func(t *testing.T, r *Root) {
				eq(t, "lease", r.Sitebus.SagaLease, time.Duration(0))
				eq(t, "pending", r.Sitebus.KeycloakPendingPeriod, time.Duration(0))
				eq(t, "order period", r.Periods.OrderProcess, 5*time.Minute)
			},
		},
		"explicit zero periods are refused, not taken for unset": {
			extra: sb("  periods:", "    order_process_period: 0s", "    membership_sync_period: 0s",
				"    keycloak_pending_period: 0s", "    saga_lease: 100ms"),
			want: []string{
				`config.yaml:9: sitebus.periods.order_process_period: 0s must be positive (leave the key out for the default)`,
				`config.yaml:10: sitebus.periods.membership_sync_period: 0s must be positive (leave the key out for the default)`,
				`config.yaml:11: sitebus.periods.keycloak_pending_period: 0s must be positive (leave the key out for the default)`,
				`config.yaml:12: sitebus.periods.saga_lease: 100ms is shorter than the minimum of 300ms`,
			},
		},
		"explicit periods win over the environment": {
			extra: sb("  periods:", "    keycloak_pending_period: 2s", "    order_process_period: 1m"),
			env:   map[string]string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES": "7"},
			check: func(t *testing.T, r *Root) {
				eq(t, "pending", r.Sitebus.KeycloakPendingPeriod, 2*time.Second)
				eq(t, "order", r.Periods.OrderProcess, time.Minute)
			},
		},
		"a wrong type names the key": {
			extra: sb("  stomp: {prefetch_count: many}", "  periods: {saga_lease: [1s]}"),
			want: []string{
				`config.yaml:8: sitebus.stomp.prefetch_count: "many" is not an integer`,
				`config.yaml:9: sitebus.periods.saga_lease: must be a duration, not a list`,
			},
		},
	})
}

func TestEnvPeriodsMissingOrExplicit(t *testing.T) {
	const report = "WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES"
	runPresence(t, map[string]presenceCase{
		"an unset variable takes the default": {check: func(t *testing.T, r *Root) {
			eq(t, "report", r.Periods.Report, 30*time.Minute)
		}},
		"a variable set to empty is refused, as Python fails on it": {
			env:  map[string]string{report: ""},
			want: []string{`environment variable ` + report + `: is set but empty; unset it for the default of 30 minutes`},
		},
		"a variable set to zero is refused": {
			env:  map[string]string{report: "0"},
			want: []string{`environment variable ` + report + `: "0" must be a positive number of minutes`},
		},
	})
}

func sprintf(format string, line int) string { return fmt.Sprintf(format, line) }
