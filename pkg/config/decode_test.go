package config

import (
	"strings"
	"testing"
)

func TestEveryPythonKeyIsAccepted(t *testing.T) {
	r := mustParse(t, conf(nil,
		"    oidc_token_url: https://sso.example.com/token",
		"    oidc_client_id: agent",
		"    oidc_client_secret: s",
		"    backend_settings: {}",
		"    backend_components: {}",
		"    order_processing_backend: k8s-ut-namespace",
		"    membership_sync_backend: k8s-ut-namespace",
		"    reporting_backend: k8s-ut-namespace",
		"    username_management_backend: base",
		"    websocket_use_tls: true",
		"    stomp_enabled: true",
		"    stomp_membership_sync_enabled: false",
		"    stomp_ws_host: mq.example.com",
		"    stomp_ws_port: 443",
		"    stomp_ws_path: /rmqws-stomp",
		"    resource_import_enabled: true",
		"    username_reconciliation_enabled: true",
		"    verify_ssl: false",
		"    preserve_unmanaged_backend_users: true",
		"    omit_anomalous_usage_components: true",
		"    mqtt_enabled: false",
		"sentry_dsn: https://key@sentry.example.com/1",
		"elastic_apm_server_url: http://apm.example.com:8200",
		"timezone: Europe/Tallinn",
		"global_proxy: http://proxy.example.com:3128",
		"log_level: debug",
		"reporting_periods: 12",
		"expose_backend_error_details: false",
		"log_shipping: {enabled: true, ship_interval_seconds: 10, buffer_size_mb: 1, log_level: warning}",
	), noEnv)
	o := r.Offerings[0]
	eq(t, "stomp membership", *o.StompMembershipSyncEnabled, false)
	eq(t, "reconciliation", o.UsernameReconciliationEnabled, true)
	eq(t, "preserve", o.PreserveUnmanagedBackendUsers, true)
	eq(t, "omit", o.OmitAnomalousUsageComponents, true)
	eq(t, "proxy", r.GlobalProxy, "http://proxy.example.com:3128")
	eq(t, "apm", r.ElasticAPMServerURL, "http://apm.example.com:8200")
	eq(t, "level", r.LogLevel, "DEBUG")
	eq(t, "shipping level", r.LogShipping.LogLevel, "WARNING")
}

// The Python agent ignores keys it does not know, so a file with them must
// load; they are warnings (logged by run, printed by config check) so that
// a typo does not pass unseen.
func TestUnknownKeysAreWarnings(t *testing.T) {
	tests := map[string]struct {
		data []byte
		want []string
	}{
		"top-level typo suggests the key": {
			data: conf(nil, "log_levle: DEBUG"),
			want: []string{`config.yaml:7: warning: log_levle: unknown key "log_levle" is ignored (did you mean "log_level"?)`},
		},
		"offering typo suggests the key": {
			data: conf(nil, "    verfy_ssl: false"),
			want: []string{`config.yaml:7: warning: offerings[0] ("k8s-prod").verfy_ssl: unknown key "verfy_ssl" is ignored (did you mean "verify_ssl"?)`},
		},
		"offering key with no near match lists the known keys": {
			data: conf(nil, "    cluster_id: c-m-1"),
			want: []string{`config.yaml:7: warning: offerings[0] ("k8s-prod").cluster_id: unknown key "cluster_id" is ignored; known keys here: KNOWN`},
		},
		"log_shipping typo": {
			data: conf(nil, "log_shipping:", "  enable: true"),
			want: []string{`config.yaml:8: warning: log_shipping.enable: unknown key "enable" is ignored (did you mean "enabled"?)`},
		},
		"sitebus typo": {
			data: conf(nil, "sitebus:", "  nats_ulr: nats://x"),
			want: []string{`config.yaml:8: warning: sitebus.nats_ulr: unknown key "nats_ulr" is ignored (did you mean "nats_url"?)`},
		},
		"unknown component key is kept and passed on": {
			data: conf(nil, "    backend_components:", "      cpu: {measured_unit: c, label: C, accounting_type: usage, colour: red}"),
			want: []string{`config.yaml:8: warning: offerings[0] ("k8s-prod").backend_components.cpu.colour: unknown key "colour" is passed to Waldur as it is; known keys here: KNOWNC`},
		},
		"x- keys only at top level": {
			data: conf(nil, "    x-note: hi", "x-anchors: {a: 1}"),
			want: []string{`config.yaml:7: warning: offerings[0] ("k8s-prod").x-note: unknown key "x-note" is ignored; known keys here: KNOWN`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := mustParse(t, tc.data, noEnv)
			var got []string
			for _, w := range r.Warnings() {
				got = append(got, w.Error())
			}
			want := strings.Join(tc.want, "\n")
			want = strings.ReplaceAll(want, "KNOWNC", knownComponentKeys)
			want = strings.ReplaceAll(want, "KNOWN", knownOfferingKeys)
			if strings.Join(got, "\n") != want {
				t.Fatalf("warnings\n got: %s\nwant: %s", strings.Join(got, "\n"), want)
			}
		})
	}
}

const (
	knownOfferingKeys  = "backend_components, backend_settings, backend_type, membership_sync_backend, mqtt_enabled, name, oidc_client_id, oidc_client_secret, oidc_client_secret_file, oidc_token_url, omit_anomalous_usage_components, order_processing_backend, preserve_unmanaged_backend_users, reporting_backend, resource_import_enabled, stomp_enabled, stomp_membership_sync_enabled, stomp_ws_host, stomp_ws_path, stomp_ws_port, username_management_backend, username_reconciliation_enabled, verify_ssl, waldur_api_token, waldur_api_token_file, waldur_api_url, waldur_offering_uuid, websocket_use_tls"
	knownComponentKeys = "accounting_type, article_code, default_limit, description, is_boolean, is_prepaid, k8s_resource, label, limit, limit_period, max_available_limit, max_prepaid_duration, max_renewal_duration, max_value, measured_unit, min_prepaid_duration, min_renewal_duration, min_value, prepaid_duration_step, renewal_duration_step, type, unit_factor, unit_factor_reporting"
)

// Next to an error, a warning is part of the error: a misspelt key often
// explains why another one is "required".
func TestWarningsAccompanyErrors(t *testing.T) {
	_, err := Parse(conf(map[string]string{"backend_type": ""}, "    backend_typ: okd"), "config.yaml", noEnv)
	wantProblems(t, err,
		`config.yaml:2: offerings[0] ("k8s-prod").backend_type: is required`,
		`config.yaml:7: warning: offerings[0] ("k8s-prod").backend_typ: unknown key "backend_typ" is ignored (did you mean "backend_type"?)`,
	)
}

func TestPluginKeysArePreserved(t *testing.T) {
	r := mustParse(t, conf(nil,
		"    backend_settings:",
		"      anything_goes: 1",
		"      nested: {deeper: [1, two, {three: 3}]}",
		"      quoted_yes: 'yes'",
		"      plain_off: off",
		"      1: numeric key",
		"    backend_components:",
		"      gpu:",
		"        measured_unit: GPUs",
		"        accounting_type: limit",
		"        label: GPU",
		"        k8s_resource: nvidia.com/gpu",
		"        is_boolean: no",
		"        future_field: {a: b}",
	), noEnv)
	o := r.Offerings[0]
	eq(t, "settings", o.BackendSettings, map[string]any{
		"anything_goes": 1,
		"nested":        map[string]any{"deeper": []any{1, "two", map[string]any{"three": 3}}},
		"quoted_yes":    "yes",
		"plain_off":     false,
		"1":             "numeric key",
	})
	eq(t, "extra", o.BackendComponents["gpu"].Extra, map[string]any{
		"k8s_resource": "nvidia.com/gpu",
		"is_boolean":   false,
		"future_field": map[string]any{"a": "b"},
	})
}

func TestDecodeProblems(t *testing.T) {
	tests := map[string]struct {
		data []byte
		want []string
	}{
		"duplicate offering key": {
			data: conf(nil, "    backend_type: okd"),
			want: []string{`config.yaml:7: offerings[0] ("k8s-prod").backend_type: duplicate key (first set on line 6)`},
		},
		"duplicate top-level key": {
			data: conf(nil, "timezone: UTC", "timezone: Europe/Tallinn"),
			want: []string{`config.yaml:8: timezone: duplicate key (first set on line 7)`},
		},
		"bool that is not a bool": {
			data: conf(nil, "    stomp_enabled: sometimes"),
			want: []string{`config.yaml:7: offerings[0] ("k8s-prod").stomp_enabled: "sometimes" is not true or false`},
		},
		"list where a bool belongs": {
			data: conf(nil, "    verify_ssl: [true]"),
			want: []string{`config.yaml:7: offerings[0] ("k8s-prod").verify_ssl: must be true or false, not a list`},
		},
		"integer that is not an integer": {
			data: conf(nil, "reporting_periods: two"),
			want: []string{`config.yaml:7: reporting_periods: "two" is not an integer`},
		},
		"number that is not a number": {
			data: conf(nil, "    backend_components:", "      cpu:", "        measured_unit: c", "        label: C",
				"        accounting_type: usage", "        unit_factor: lots"),
			want: []string{`config.yaml:12: offerings[0] ("k8s-prod").backend_components.cpu.unit_factor: "lots" is not a number`},
		},
		"component that is not a mapping": {
			data: conf(nil, "    backend_components:", "      cpu: 4"),
			want: []string{`config.yaml:8: offerings[0] ("k8s-prod").backend_components.cpu: must be a mapping, not a scalar`},
		},
		"backend_settings that is a list": {
			data: conf(nil, "    backend_settings: [a, b]"),
			want: []string{`config.yaml:7: offerings[0] ("k8s-prod").backend_settings: must be a mapping, not a list`},
		},
		"offering that is a scalar": {
			data: []byte("offerings:\n  - just-a-name\n"),
			want: []string{`config.yaml:2: offerings[0]: must be a mapping, not a scalar`},
		},
		"root that is a list": {
			data: []byte("- a\n- b\n"),
			want: []string{`config.yaml:1: the top level must be a mapping with an offerings key, not a list`},
		},
		"yaml syntax error": {
			data: []byte("offerings:\n\t- name: a\n"),
			want: []string{`config.yaml: yaml: line 2: found character that cannot start any token`},
		},
		"several documents": {
			data: append(conf(nil), []byte("---\nofferings: []\n")...),
			want: []string{`config.yaml: line 7: a second YAML document; the config must be a single document`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.data, "config.yaml", noEnv)
			wantProblems(t, err, tc.want...)
		})
	}
}

func TestLenientScalarsLikePydantic(t *testing.T) {
	r := mustParse(t, conf(nil,
		`    verify_ssl: "false"`,
		`    stomp_enabled: "yes"`,
		`    websocket_use_tls: 0`,
		`    stomp_ws_port: "8443"`,
		`reporting_periods: 3.0`,
	), noEnv)
	o := r.Offerings[0]
	eq(t, "verify_ssl", o.VerifySSL, false)
	eq(t, "stomp", o.StompEnabled, true)
	eq(t, "tls", o.WebsocketUseTLS, false)
	eq(t, "port", o.StompWSPort, 8443)
	eq(t, "periods", r.ReportingPeriods, 3)
}

func TestMergeKeysAndAnchors(t *testing.T) {
	data := []byte(strings.Join([]string{
		"x-common: &common",
		"  waldur_api_url: https://waldur.example.com/api",
		"  waldur_api_token: shared-token",
		"  backend_type: rancher",
		"  verify_ssl: false",
		"offerings:",
		"  - <<: *common",
		"    name: a",
		"    waldur_offering_uuid: 7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8",
		"  - <<: *common",
		"    name: b",
		"    verify_ssl: true",
		"    waldur_offering_uuid: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d",
	}, "\n"))
	r := mustParse(t, data, noEnv)
	eq(t, "a url", r.Offerings[0].WaldurAPIURL, "https://waldur.example.com/api/")
	eq(t, "a token", r.Offerings[0].WaldurAPIToken.Reveal(), "shared-token")
	eq(t, "a verify", r.Offerings[0].VerifySSL, false)
	eq(t, "b explicit key wins", r.Offerings[1].VerifySSL, true)
	eq(t, "b type", r.Offerings[1].BackendType, "rancher")
}
