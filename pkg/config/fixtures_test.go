package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestLoadPythonConfigsUnchanged(t *testing.T) {
	tests := map[string]struct {
		file  string
		check func(t *testing.T, r *Root)
	}{
		"k8s-ut-namespace offering in event mode": {
			file: "k8s-ut-namespace.yaml",
			check: func(t *testing.T, r *Root) {
				o := r.Offerings[0]
				eq(t, "timezone", r.Timezone, "Europe/Tallinn")
				eq(t, "log_level upper-cased", r.LogLevel, "INFO")
				eq(t, "reporting_periods", r.ReportingPeriods, 3)
				eq(t, "sentry_dsn empty is null", r.SentryDSN, "")
				eq(t, "api url gains trailing slash", o.WaldurAPIURL, "https://waldur.hpc.ut.ee/api/")
				eq(t, "backend_type lower-cased", o.BackendType, "k8s-ut-namespace")
				eq(t, "token", o.WaldurAPIToken.Reveal(), "0123456789abcdef0123456789abcdef01234567")
				eq(t, "uuid kept as written", o.WaldurOfferingUUID, "7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8")
				eq(t, "uuid hex", o.OfferingUUIDHex(), "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8")
				eq(t, "stomp", o.StompEnabled, true)
				eq(t, "component order", o.ComponentOrder, []string{"cpu", "ram", "storage", "gpu"})
				eq(t, "plain yes is a YAML 1.1 bool", o.BackendSettings["keycloak_enabled"], true)
				kc := o.BackendSettings["keycloak"].(map[string]any)
				eq(t, "nested settings", kc["keycloak_realm"], "hpc")
				eq[any](t, "labels", o.BackendSettings["namespace_labels"], map[string]any{"hpc.ut.ee/managed-by": "waldur"})
				cpu := o.BackendComponents["cpu"]
				eq(t, "cpu unit factor", cpu.UnitFactor, 1.0)
				eq(t, "cpu extras", cpu.Extra, map[string]any{"type": "cpu", "min_value": 1, "max_value": 64, "default_limit": 2})
				eq(t, "ram limit_period", o.BackendComponents["ram"].Extra["limit_period"], "month")
				eq(t, "gpu limit", *o.BackendComponents["gpu"].Limit, 4.0)
				eq(t, "storage has no limit", o.BackendComponents["storage"].Limit == nil, true)
				eq(t, "object types", o.ObservableObjectTypes(), []string{
					"order", "resource_api_key_rotation",
					"user_role", "resource", "service_account", "course_account", "offering_user", "offering_resources_sync",
					"resource_periodic_limits",
				})
			},
		},
		"rancher offering with keycloak settings": {
			file: "rancher.yaml",
			check: func(t *testing.T, r *Root) {
				o := r.Offerings[0]
				eq(t, "uuid without dashes", o.OfferingUUIDHex(), "12345678123456789abc123456789012")
				eq(t, "verify_ssl", o.VerifySSL, false)
				eq(t, "websocket_use_tls", o.WebsocketUseTLS, false)
				eq(t, "cluster", o.BackendSettings["cluster_id"], "c-m-1234abcd")
				eq(t, "keycloak by username", o.BackendSettings["keycloak_use_user_id"], false)
				eq(t, "k8s_resource kept", o.BackendComponents["gpu"].Extra["k8s_resource"], "nvidia.com/gpu")
				eq(t, "type kept", o.BackendComponents["memory"].Extra["type"], "ram")
				eq(t, "membership polled", o.MembershipViaSTOMP(), false)
			},
		},
		"okd offering sharing components through merge keys": {
			file: "okd.yaml",
			check: func(t *testing.T, r *Root) {
				o := r.Offerings[0]
				eq(t, "expose_backend_error_details", r.ExposeBackendErrorDetails, false)
				eq(t, "log shipping", r.LogShipping, LogShipping{Enabled: true, ShipIntervalSeconds: 120, BufferSizeMB: 4, LogLevel: "ERROR"})
				eq(t, "upper-case uuid", o.OfferingUUIDHex(), "123e4567e89b12d3a456426614174000")
				eq(t, "merged accounting type", o.BackendComponents["pods"].AccountingType, "limit")
				eq(t, "unit_factor_reporting", *o.BackendComponents["pods"].UnitFactorReporting, 1.0)
				eq(t, "component order", o.ComponentOrder, []string{"cpu", "memory", "storage", "pods"})
				eq(t, "token config", o.BackendSettings["token_config"].(map[string]any)["token_type"], "service_account")
				eq(t, "no membership types", o.ObservableObjectTypes(), []string{"order", "resource_api_key_rotation"})
			},
		},
		"offering authenticating with OIDC": {
			file: "oidc.yaml",
			check: func(t *testing.T, r *Root) {
				o := r.Offerings[0]
				eq(t, "no static token", o.WaldurAPIToken.Reveal(), "")
				eq(t, "client secret", o.OIDCClientSecret.Reveal(), "oidc-client-secret-value")
				eq(t, "client id", o.OIDCClientID, "site-agent")
				eq(t, "braced uuid", o.OfferingUUIDHex(), "0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d")
				eq(t, "empty components", len(o.BackendComponents), 0)
				eq(t, "membership kept on polling", o.ObservableObjectTypes(), []string{"order", "resource_api_key_rotation"})
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Load(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(r.Offerings) != 1 {
				t.Fatalf("want 1 offering, got %d", len(r.Offerings))
			}
			tc.check(t, r)
		})
	}
}

func TestExampleConfigParses(t *testing.T) {
	data, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := mustParse(t, data, envOf(map[string]string{"WALDUR_API_TOKEN": "example-token"}))
	o := r.Offerings[0]
	eq(t, "token from env", o.WaldurAPIToken.Reveal(), "example-token")
	eq(t, "stomp", o.StompEnabled, true)
	eq(t, "membership via stomp", o.MembershipViaSTOMP(), true)
	eq(t, "components", o.ComponentOrder, []string{"cpu", "ram", "storage"})
	eq(t, "reconnect max", r.Sitebus.Stomp.ReconnectMax, 2*time.Minute)
	eq(t, "reconciliation", r.Periods.Reconciliation, time.Hour)
	eq(t, "services", len(r.Sitebus.Services), 0)

	if _, err := Parse(data, "example.yaml", noEnv); err == nil {
		t.Fatal("example.yaml without WALDUR_API_TOKEN set: want an error")
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "absent.yaml")); err == nil {
		t.Fatal("want an error for a missing file")
	}
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %#v, want %#v", what, got, want)
	}
}
