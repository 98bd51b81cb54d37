package config

import (
	"strings"
	"testing"
	"time"
)

func TestSitebusSection(t *testing.T) {
	r := mustParse(t, conf(nil,
		"sitebus:",
		"  nats_url: nats://nats.sitebus.svc:4222",
		"  data_dir: /var/lib/sitebus",
		"  http_addr: 0.0.0.0:8080",
		"  log_format: text",
		"  services: [stomp-bridge, orders]",
		"  stomp:",
		"    transport: tcp",
		"    tcp_host: rabbit.example.com",
		"    tcp_port: 61614",
		"    prefetch_count: 8",
		"    reconnect_max: 1m",
		"    heartbeat: 5s",
		"    max_frame_body: 65536",
		"  periods:",
		"    membership_sync_period: 90s",
		"    report_period: 1h",
		"    keycloak_cleanup_period: 10s",
		"  streams:",
		"    events_max_age: 24h",
		"    duplicate_window: 10m",
		"    dlq_max_age: 48h",
		"    replicas: 3",
		"  ordering: {mode: cluster, slots: 32}",
	), noEnv)
	eq(t, "sitebus", r.Sitebus, Sitebus{
		NATSURL: "nats://nats.sitebus.svc:4222", DataDir: "/var/lib/sitebus", HTTPAddr: "0.0.0.0:8080", LogFormat: "text",
		Stomp:             StompSettings{Transport: "tcp", TCPHost: "rabbit.example.com", TCPPort: 61614, PrefetchCount: 8, ReconnectMax: time.Minute, Heartbeat: 5 * time.Second, MaxFrameBody: 65536},
		Periods:           Periods{MembershipSync: 90 * time.Second, Report: time.Hour},
		ClusterPullPeriod: 15 * time.Minute, ClusterReadyTimeout: time.Hour,
		Streams:               Streams{EventsMaxAge: 24 * time.Hour, DuplicateWindow: 10 * time.Minute, DLQMaxAge: 48 * time.Hour, SagaRetention: 720 * time.Hour, Replicas: 3},
		Ordering:              Ordering{Mode: OrderingCluster, Slots: 32},
		Services:              []string{"stomp-bridge", "orders"},
		KeycloakCleanupPeriod: 10 * time.Second,
		DriftPeriod:           30 * time.Minute,
		ClusterVMConcurrency:  5,
		StatusPage:            StatusPage{CheckPeriod: time.Minute},
	})
	eq(t, "effective membership period", r.Periods.MembershipSync, 90*time.Second)
	host, port := r.Sitebus.Stomp.TCPEndpoint(&r.Offerings[0])
	eq(t, "tcp host", host, "rabbit.example.com")
	eq(t, "tcp port", port, 61614)
}

func TestSitebusTCPEndpointDefaultsToOfferingHost(t *testing.T) {
	r := mustParse(t, conf(nil, "sitebus:", "  stomp:", "    transport: tcp"), noEnv)
	host, port := r.Sitebus.Stomp.TCPEndpoint(&r.Offerings[0])
	eq(t, "host", host, "waldur.example.com")
	eq(t, "port", port, 61613)
}

func TestSitebusErrors(t *testing.T) {
	tests := map[string]struct {
		lines []string
		want  []string
	}{
		"duration without unit": {
			lines: []string{"sitebus:", "  stomp:", "    heartbeat: 10"},
			want:  []string{`config.yaml:9: sitebus.stomp.heartbeat: "10" is not a duration (use a unit, e.g. "30s", "15m", "168h")`},
		},
		"bad period duration": {
			lines: []string{"sitebus:", "  periods:", "    order_process_period: soon"},
			want:  []string{`config.yaml:9: sitebus.periods.order_process_period: "soon" is not a duration (use a unit, e.g. "30s", "15m", "168h")`},
		},
		"negative period": {
			lines: []string{"sitebus:", "  periods:", "    report_period: -1m"},
			want:  []string{`config.yaml:9: sitebus.periods.report_period: -1m0s must be positive (leave the key out for the default)`},
		},
		"duplicate window below ten minutes": {
			lines: []string{"sitebus:", "  streams:", "    duplicate_window: 2m"},
			want:  []string{`config.yaml:9: sitebus.streams.duplicate_window: 2m0s is shorter than the minimum of 10m0s`},
		},
		"saga retention shorter than the events it dedupes": {
			lines: []string{"sitebus:", "  streams:", "    events_max_age: 200h", "    saga_retention: 100h"},
			want:  []string{`config.yaml:10: sitebus.streams.saga_retention: 100h0m0s is shorter than events_max_age (200h0m0s): an order replayed from the events stream would run its saga again`},
		},
		"negative stream ages": {
			lines: []string{"sitebus:", "  streams:", "    events_max_age: -1h", "    dlq_max_age: -1h"},
			want: []string{
				`config.yaml:9: sitebus.streams.events_max_age: -1h0m0s must be positive`,
				`config.yaml:10: sitebus.streams.dlq_max_age: -1h0m0s must be positive`,
			},
		},
		"unknown enums and bad numbers": {
			lines: []string{
				"sitebus:",
				"  log_format: xml",
				"  http_addr: localhost",
				"  stomp:",
				"    transport: amqp",
				"    tcp_port: 0x1ffff",
				"    prefetch_count: -3",
				"    reconnect_max: -1s",
			},
			want: []string{
				`config.yaml:8: sitebus.log_format: "xml" is not one of json, text`,
				`config.yaml:9: sitebus.http_addr: "localhost" is not a host:port address`,
				`config.yaml:11: sitebus.stomp.transport: "amqp" is not one of websocket, tcp`,
				`config.yaml:12: sitebus.stomp.tcp_port: 131071 is not a TCP port`,
				`config.yaml:13: sitebus.stomp.prefetch_count: -3 must be at least 1`,
				`config.yaml:14: sitebus.stomp.reconnect_max: -1s must be positive`,
			},
		},
		"services with blanks and duplicates": {
			lines: []string{"sitebus:", "  services:", `    - orders`, `    - ""`, `    - orders`},
			want: []string{
				`config.yaml:10: sitebus.services[1]: must not be empty`,
				`config.yaml:11: sitebus.services[2]: "orders" is listed twice`,
			},
		},
		"services not a list": {
			lines: []string{"sitebus:", "  services: orders"},
			want:  []string{`config.yaml:8: sitebus.services: must be a list of strings, not a scalar`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(conf(nil, tc.lines...), "config.yaml", noEnv)
			wantProblems(t, err, tc.want...)
		})
	}
}

// TestPeriodMinimums checks every sitebus period that has a default and a
// minimum: unset is the default, the minimum and a day are taken, and under
// the minimum, zero (not taken for unset) or not a duration is refused at the
// key.
func TestPeriodMinimums(t *testing.T) {
	periods := []struct {
		section, key   string
		byDefault, min time.Duration
		got            func(*Root) time.Duration
	}{
		{"periods", "keycloak_cleanup_period", time.Hour, 10 * time.Second, func(r *Root) time.Duration { return r.Sitebus.KeycloakCleanupPeriod }},
		{"periods", "cluster_pull_period", 15 * time.Minute, 10 * time.Second, func(r *Root) time.Duration { return r.Sitebus.ClusterPullPeriod }},
		{"periods", "cluster_ready_timeout", time.Hour, 10 * time.Second, func(r *Root) time.Duration { return r.Sitebus.ClusterReadyTimeout }},
		{"periods", "drift_period", 30 * time.Minute, 10 * time.Second, func(r *Root) time.Duration { return r.Sitebus.DriftPeriod }},
		{"status_page", "check_period", time.Minute, 10 * time.Second, func(r *Root) time.Duration { return r.Sitebus.StatusPage.CheckPeriod }},
	}
	for _, pd := range periods {
		path := "sitebus." + pd.section + "." + pd.key
		under := pd.min - time.Second
		tests := map[string]struct {
			value   string // "" leaves the key out
			want    time.Duration
			wantErr string
		}{
			"unset is the default":                 {want: pd.byDefault},
			"the minimum is accepted":              {value: pd.min.String(), want: pd.min},
			"a day is accepted":                    {value: "24h", want: 24 * time.Hour},
			"under the minimum is refused":         {value: under.String(), wantErr: path + ": " + under.String() + " is shorter than the minimum of " + pd.min.String()},
			"zero is refused, not taken for unset": {value: "0s", wantErr: path + ": 0s is shorter than the minimum of " + pd.min.String()},
			"not a duration is refused":            {value: "often", wantErr: path},
		}
		for name, tc := range tests {
			t.Run(path+"/"+name, func(t *testing.T) {
				// report_period keeps the periods section present when the key is left out.
				lines := []string{"sitebus:", "  " + pd.section + ":"}
				if pd.section == "periods" {
					lines = append(lines, "    report_period: 1h")
				}
				if tc.value != "" {
					lines = append(lines, "    "+pd.key+": "+tc.value)
				}
				r, err := Parse(conf(nil, lines...), "config.yaml", noEnv)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("err = %v, want %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				eq(t, pd.key, pd.got(r), tc.want)
			})
		}
	}
}

func TestStatusPage(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "STATUS_TOKEN" {
			return "from-the-environment", true
		}
		return "", false
	}
	tests := map[string]struct {
		lines     []string
		wantToken string
		wantCheck time.Duration
		wantErr   string
	}{
		"unset is no token, checks every minute": {wantCheck: time.Minute},
		"a literal token":                        {lines: []string{"    token: s3cret"}, wantToken: "s3cret", wantCheck: time.Minute},
		"a token from the environment":           {lines: []string{"    token: ${STATUS_TOKEN}"}, wantToken: "from-the-environment", wantCheck: time.Minute},
		"an unset variable is refused":           {lines: []string{"    token: ${NO_SUCH_TOKEN}"}, wantErr: "environment variable NO_SUCH_TOKEN is not set"},
		"a token and a token file are not both":  {lines: []string{"    token: a", "    token_file: /nonexistent"}, wantErr: "set either token or token_file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lines := append([]string{"sitebus:", "  status_page:"}, tc.lines...)
			if len(tc.lines) == 0 {
				lines = nil
			}
			r, err := Parse(conf(nil, lines...), "config.yaml", env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "from-the-environment") {
					t.Errorf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "token", r.Sitebus.StatusPage.Token.Reveal(), tc.wantToken)
			eq(t, "check period", r.Sitebus.StatusPage.CheckPeriod, tc.wantCheck)
		})
	}
}

func TestClusterVMConcurrency(t *testing.T) {
	tests := map[string]struct {
		value   string // "" leaves the key out
		want    int
		wantErr string
	}{
		"unset is five":                    {want: 5},
		"one makes VMs one after another":  {value: "1", want: 1},
		"fifty is the most":                {value: "50", want: 50},
		"zero is refused":                  {value: "0", wantErr: "sitebus.cluster_vm_concurrency: 0 is out of range 1..50"},
		"more than fifty is refused":       {value: "51", wantErr: "sitebus.cluster_vm_concurrency: 51 is out of range 1..50"},
		"not a number is refused":          {value: "many", wantErr: "sitebus.cluster_vm_concurrency"},
		"negative is refused, not clamped": {value: "-2", wantErr: "sitebus.cluster_vm_concurrency: -2 is out of range 1..50"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lines := []string{"sitebus:", "  log_format: json"}
			if tc.value != "" {
				lines = append(lines, "  cluster_vm_concurrency: "+tc.value)
			}
			r, err := Parse(conf(nil, lines...), "config.yaml", noEnv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "cluster_vm_concurrency", r.Sitebus.ClusterVMConcurrency, tc.want)
		})
	}
}
