package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestValidationErrors(t *testing.T) {
	const off = `config.yaml:%d: offerings[0] ("k8s-prod").`
	at := func(line int, rest string) string { return strings.Replace(off, "%d", strconv.Itoa(line), 1) + rest }
	tests := map[string]struct {
		data []byte
		want []string
	}{
		"offerings missing": {
			data: []byte("log_level: INFO\n"),
			want: []string{"config.yaml: offerings: at least one offering is required"},
		},
		"offerings empty": {
			data: []byte("offerings: []\n"),
			want: []string{"config.yaml:1: offerings: at least one offering is required"},
		},
		"empty file": {
			data: []byte(""),
			want: []string{"config.yaml: offerings: at least one offering is required"},
		},
		"offerings not a list": {
			data: []byte("offerings:\n  name: x\n"),
			want: []string{"config.yaml:2: offerings: must be a list of offerings, not a mapping"},
		},
		"name missing": {
			data: []byte(strings.Join([]string{
				"offerings:",
				"  - waldur_api_url: https://waldur.example.com/api/",
				"    waldur_api_token: t",
				"    waldur_offering_uuid: 7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8",
				"    backend_type: okd",
			}, "\n")),
			want: []string{"config.yaml:2: offerings[0].name: is required"},
		},
		"waldur_api_url missing": {
			data: conf(map[string]string{"waldur_api_url": ""}),
			want: []string{at(2, "waldur_api_url: is required")},
		},
		"waldur_api_url without scheme": {
			data: conf(map[string]string{"waldur_api_url": "waldur.example.com/api/"}),
			want: []string{at(3, `waldur_api_url: "waldur.example.com/api/" must start with http:// or https://`)},
		},
		"waldur_api_url without host": {
			data: conf(map[string]string{"waldur_api_url": "https:///api/"}),
			want: []string{at(3, `waldur_api_url: "https:///api/" has no host`)},
		},
		"neither token nor oidc": {
			data: conf(map[string]string{"waldur_api_token": ""}),
			want: []string{at(2, "waldur_api_token: either waldur_api_token or all of oidc_token_url, oidc_client_id, oidc_client_secret must be set")},
		},
		"empty token and no oidc": {
			data: conf(map[string]string{"waldur_api_token": `""`}),
			want: []string{at(4, "waldur_api_token: either waldur_api_token or all of oidc_token_url, oidc_client_id, oidc_client_secret must be set")},
		},
		"partial oidc": {
			data: conf(map[string]string{"waldur_api_token": ""}, "    oidc_client_id: agent"),
			want: []string{at(2, "oidc_token_url: oidc_token_url, oidc_client_id and oidc_client_secret must be set together; missing oidc_token_url, oidc_client_secret")},
		},
		"stomp with oidc only": {
			data: conf(map[string]string{"waldur_api_token": ""},
				"    stomp_enabled: true",
				"    oidc_token_url: https://sso.example.com/token",
				"    oidc_client_id: agent",
				"    oidc_client_secret: s3cret"),
			want: []string{at(7, "stomp_enabled: STOMP needs waldur_api_token (it is the broker password); with OIDC only, set stomp_enabled: false and orders are polled")},
		},
		"oidc token url without scheme": {
			data: conf(nil,
				"    oidc_token_url: sso.example.com/token",
				"    oidc_client_id: agent",
				"    oidc_client_secret: s"),
			want: []string{at(7, `oidc_token_url: "sso.example.com/token" must start with http:// or https://`)},
		},
		"offering uuid missing": {
			data: conf(map[string]string{"waldur_offering_uuid": ""}),
			want: []string{at(2, "waldur_offering_uuid: is required")},
		},
		"offering uuid not a uuid": {
			data: conf(map[string]string{"waldur_offering_uuid": "xyz"}),
			want: []string{at(5, `waldur_offering_uuid: "xyz" is not a UUID`)},
		},
		"offering uuid too short": {
			data: conf(map[string]string{"waldur_offering_uuid": "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b"}),
			want: []string{at(5, `waldur_offering_uuid: "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b" is not a UUID`)},
		},
		"backend_type missing": {
			data: conf(map[string]string{"backend_type": ""}),
			want: []string{at(2, "backend_type: is required")},
		},
		"stomp_ws_port out of range": {
			data: conf(nil, "    stomp_ws_port: 70000"),
			want: []string{at(7, "stomp_ws_port: 70000 is not a TCP port")},
		},
		"log_level unknown": {
			data: conf(nil, "log_level: verbose"),
			want: []string{`config.yaml:7: log_level: "verbose" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`},
		},
		"reporting_periods too high": {
			data: conf(nil, "reporting_periods: 13"),
			want: []string{"config.yaml:7: reporting_periods: 13 is out of range 1..12"},
		},
		"reporting_periods zero": {
			data: conf(nil, "reporting_periods: -1"),
			want: []string{"config.yaml:7: reporting_periods: -1 is out of range 1..12"},
		},
		"timezone unknown": {
			data: conf(nil, "timezone: Mars/Olympus_Mons"),
			want: []string{`config.yaml:7: timezone: unknown timezone "Mars/Olympus_Mons"`},
		},
		"sentry_dsn not a url": {
			data: conf(nil, "sentry_dsn: not a url"),
			want: []string{`config.yaml:7: sentry_dsn: is not a URL`}, // a DSN holds a key: never quoted
		},
		"elastic apm url not a url": {
			data: conf(nil, "elastic_apm_server_url: apm:8200"),
			want: []string{`config.yaml:7: elastic_apm_server_url: "apm:8200" is not a URL`},
		},
		"log shipping below minimums": {
			data: conf(nil,
				"log_shipping:",
				"  ship_interval_seconds: 5",
				"  buffer_size_mb: -1",
				"  log_level: loud"),
			want: []string{
				"config.yaml:8: log_shipping.ship_interval_seconds: 5 is below the minimum of 10",
				"config.yaml:9: log_shipping.buffer_size_mb: -1 is below the minimum of 1",
				`config.yaml:10: log_shipping.log_level: "loud" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`,
			},
		},
		"component missing required keys": {
			data: conf(nil,
				"    backend_components:",
				"      cpu:",
				"        unit_factor: 1000"),
			want: []string{
				at(8, "backend_components.cpu.measured_unit: is required"),
				at(8, "backend_components.cpu.label: is required"),
				at(8, "backend_components.cpu.accounting_type: is required (one of usage, limit, one)"),
			},
		},
		"component accounting type unknown": {
			data: conf(nil,
				"    backend_components:",
				"      cpu:",
				"        measured_unit: cores",
				"        label: CPU",
				"        accounting_type: fixed"),
			want: []string{at(11, `backend_components.cpu.accounting_type: "fixed" is not one of usage, limit, one`)},
		},
		"component limit period unknown": {
			data: conf(nil,
				"    backend_components:",
				"      cpu:",
				"        measured_unit: cores",
				"        label: CPU",
				"        accounting_type: limit",
				"        limit_period: weekly"),
			want: []string{at(12, "backend_components.cpu.limit_period: weekly is not one of annual, month, quarterly, total")},
		},
		"duplicate offering uuid in another spelling": {
			data: conf(nil,
				"  - name: k8s-staging",
				"    waldur_api_url: https://waldur.example.com/api/",
				"    waldur_api_token: t2",
				"    waldur_offering_uuid: 7F3A1C2E9B4D4E8FA1B2C3D4E5F6A7B8",
				"    backend_type: okd"),
			want: []string{`config.yaml:10: offerings[1] ("k8s-staging").waldur_offering_uuid: "7F3A1C2E9B4D4E8FA1B2C3D4E5F6A7B8" is also the UUID of offerings[0] ("k8s-prod")`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Parse(tc.data, "config.yaml", noEnv)
			if err == nil {
				t.Fatal("want an error, got none")
			}
			if r != nil {
				t.Error("want a nil Root on error")
			}
			wantProblems(t, err, tc.want...)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Error("problems should be *FieldError")
			}
		})
	}
}

func TestAllProblemsReportedTogether(t *testing.T) {
	data := []byte(strings.Join([]string{
		"log_level: chatty", // 1
		"reporting_periods: 99",
		"offerings:",
		"  - name: first",
		"    waldur_api_url: ftp://waldur.example.com", // 5
		"    waldur_offering_uuid: nope",
		"    backend_type: rancher",
		"    verify_ssl: perhaps",
		"  - name: second",
		"    waldur_api_url: https://waldur.example.com/", // 10
		"    waldur_api_token: t",
		"    waldur_offering_uuid: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d",
		"    backend_typ: okd",
	}, "\n"))
	_, err := Parse(data, "multi.yaml", noEnv)
	wantProblems(t, err,
		`multi.yaml:1: log_level: "chatty" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`,
		"multi.yaml:2: reporting_periods: 99 is out of range 1..12",
		`multi.yaml:4: offerings[0] ("first").waldur_api_token: either waldur_api_token or all of oidc_token_url, oidc_client_id, oidc_client_secret must be set`,
		`multi.yaml:5: offerings[0] ("first").waldur_api_url: "ftp://waldur.example.com" must start with http:// or https://`,
		`multi.yaml:6: offerings[0] ("first").waldur_offering_uuid: "nope" is not a UUID`,
		`multi.yaml:8: offerings[0] ("first").verify_ssl: "perhaps" is not true or false`,
		`multi.yaml:9: offerings[1] ("second").backend_type: is required`,
		`multi.yaml:13: warning: offerings[1] ("second").backend_typ: unknown key "backend_typ" is ignored (did you mean "backend_type"?)`,
	)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Source != "multi.yaml" || fe.Line != 1 || fe.Path != "log_level" {
		t.Errorf("first problem as FieldError: %+v", fe)
	}
}

func TestFieldErrorCarriesOffering(t *testing.T) {
	_, err := Parse(conf(map[string]string{"waldur_offering_uuid": "xyz"}), "config.yaml", noEnv)
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a *FieldError, got %T", err)
	}
	eq(t, "field error", *fe, FieldError{
		Source: "config.yaml", Line: 5, Offering: "k8s-prod",
		Path: `offerings[0] ("k8s-prod").waldur_offering_uuid`, Msg: `"xyz" is not a UUID`,
		canon: "offerings[0].waldur_offering_uuid",
	})
}

func TestValidateRootBuiltInCode(t *testing.T) {
	r := &Root{
		LogLevel: "INFO", ReportingPeriods: 2, Timezone: "UTC",
		LogShipping: LogShipping{ShipIntervalSeconds: 60, BufferSizeMB: 1, LogLevel: "WARNING"},
		Offerings: []Offering{{
			Name: "code", WaldurAPIURL: "https://w.example.com/", WaldurAPIToken: "t",
			WaldurOfferingUUID: "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8", BackendType: "okd",
			BackendComponents: map[string]BackendComponent{"cpu": {MeasuredUnit: "c", Label: "CPU", AccountingType: "bogus"}},
		}},
	}
	r.Sitebus = newSitebus()
	r.Periods.setDefaults()
	wantProblems(t, r.Validate(),
		`offerings[0] ("code").backend_components.cpu.accounting_type: "bogus" is not one of usage, limit, one`)

	r.Offerings[0].BackendComponents["cpu"] = BackendComponent{MeasuredUnit: "c", Label: "CPU", AccountingType: "one"}
	if err := r.Validate(); err != nil {
		t.Fatalf("valid Root: %v", err)
	}
}
