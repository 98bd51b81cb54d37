package config

import (
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	r := mustParse(t, conf(nil), noEnv)
	o := r.Offerings[0]
	tests := map[string]struct{ got, want any }{
		"timezone is UTC":                          {r.Timezone, "UTC"},
		"log_level is INFO":                        {r.LogLevel, "INFO"},
		"reporting_periods is 2":                   {r.ReportingPeriods, 2},
		"expose_backend_error_details is true":     {r.ExposeBackendErrorDetails, true},
		"sentry_dsn is unset":                      {r.SentryDSN, ""},
		"global_proxy is unset":                    {r.GlobalProxy, ""},
		"log shipping is off with Python defaults": {r.LogShipping, LogShipping{ShipIntervalSeconds: 60, BufferSizeMB: 1, LogLevel: "WARNING"}},
		"websocket_use_tls is true":                {o.WebsocketUseTLS, true},
		"verify_ssl is true":                       {o.VerifySSL, true},
		"stomp_enabled is false":                   {o.StompEnabled, false},
		"stomp_membership_sync_enabled is null":    {o.StompMembershipSyncEnabled == nil, true},
		"username_management_backend is base":      {o.UsernameManagementBackend, "base"},
		"stomp_ws_path is /rmqws-stomp":            {o.StompWSPath, "/rmqws-stomp"},
		"stomp_ws_host is unset":                   {o.StompWSHost, ""},
		"stomp_ws_port is unset":                   {o.StompWSPort, 0},
		"mode backends are empty":                  {o.OrderProcessingBackend + o.MembershipSyncBackend + o.ReportingBackend, ""},
		"resource_import_enabled is false":         {o.ResourceImportEnabled, false},
		"username_reconciliation_enabled is false": {o.UsernameReconciliationEnabled, false},
		"backend_settings is an empty map":         {o.BackendSettings, map[string]any{}},
		"backend_components is an empty map":       {o.BackendComponents, map[string]BackendComponent{}},
		"order period is 5m":                       {r.Periods.OrderProcess, 5 * time.Minute},
		"report period is 30m":                     {r.Periods.Report, 30 * time.Minute},
		"membership period is 5m":                  {r.Periods.MembershipSync, 5 * time.Minute},
		"reconciliation period is 60m":             {r.Periods.Reconciliation, time.Hour},
		"sitebus nats is embedded":                 {r.Sitebus.NATSURL, ""},
		"sitebus data dir":                         {r.Sitebus.DataDir, "./sitebus-data"},
		"sitebus http addr":                        {r.Sitebus.HTTPAddr, "127.0.0.1:9090"},
		"sitebus log format":                       {r.Sitebus.LogFormat, "json"},
		"sitebus stomp settings":                   {r.Sitebus.Stomp, StompSettings{Transport: "websocket", TCPPort: 61613, PrefetchCount: 256, ReconnectMax: 120 * time.Second, Heartbeat: 10 * time.Second, MaxFrameBody: 1 << 20}},
		"sitebus streams":                          {r.Sitebus.Streams, Streams{EventsMaxAge: 168 * time.Hour, DuplicateWindow: 15 * time.Minute, DLQMaxAge: 720 * time.Hour, SagaRetention: 720 * time.Hour, Replicas: 1}},
		"sitebus period overrides are unset":       {r.Sitebus.Periods, Periods{}},
		"sitebus runs all services":                {len(r.Sitebus.Services), 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { eq(t, name, tc.got, tc.want) })
	}
}

func TestComponentDefaults(t *testing.T) {
	r := mustParse(t, conf(nil,
		"    backend_components:",
		"      cpu:",
		"        measured_unit: cores",
		"        accounting_type: usage",
		"        label: CPU",
	), noEnv)
	eq(t, "component", r.Offerings[0].BackendComponents["cpu"], BackendComponent{
		MeasuredUnit: "cores", UnitFactor: 1.0, AccountingType: "usage", Label: "CPU",
	})
}

func TestNullValuesKeepDefaults(t *testing.T) {
	r := mustParse(t, conf(nil,
		"    stomp_ws_host: null",
		"    stomp_ws_port: ~",
		"    verify_ssl:",
		"    backend_settings:",
		"    oidc_token_url: null",
		"sentry_dsn: null",
		"timezone:",
	), noEnv)
	o := r.Offerings[0]
	eq(t, "host", o.StompWSHost, "")
	eq(t, "port", o.StompWSPort, 0)
	eq(t, "verify_ssl", o.VerifySSL, true)
	eq(t, "settings", o.BackendSettings, map[string]any{})
	eq(t, "timezone", r.Timezone, "UTC")
}
