package config

import (
	"strings"
	"testing"
)

func TestObservableObjectTypes(t *testing.T) {
	membership := []string{"user_role", "resource", "service_account", "course_account", "offering_user", "offering_resources_sync"}
	orders := []string{"order", "resource_api_key_rotation"}
	no, yes := false, true
	tests := map[string]struct {
		o    Offering
		want []string
	}{
		"nothing configured": {o: Offering{}, want: nil},
		"order processing only": {
			o:    Offering{OrderProcessingBackend: "rancher"},
			want: orders,
		},
		"membership with stomp membership unset": {
			o:    Offering{MembershipSyncBackend: "rancher"},
			want: membership,
		},
		"membership with stomp membership true": {
			o:    Offering{MembershipSyncBackend: "rancher", StompMembershipSyncEnabled: &yes},
			want: membership,
		},
		"membership with stomp membership false": {
			o:    Offering{MembershipSyncBackend: "rancher", StompMembershipSyncEnabled: &no},
			want: nil,
		},
		"reporting backend adds nothing": {
			o:    Offering{ReportingBackend: "rancher"},
			want: nil,
		},
		"resource import": {
			o:    Offering{ResourceImportEnabled: true},
			want: []string{"importable_resources"},
		},
		"periodic limits enabled": {
			o:    Offering{BackendSettings: map[string]any{"periodic_limits": map[string]any{"enabled": true}}},
			want: []string{"resource_periodic_limits"},
		},
		"periodic limits disabled": {
			o:    Offering{BackendSettings: map[string]any{"periodic_limits": map[string]any{"enabled": false}}},
			want: nil,
		},
		"periodic limits not a mapping": {
			o:    Offering{BackendSettings: map[string]any{"periodic_limits": true}},
			want: nil,
		},
		"everything in order": {
			o: Offering{
				OrderProcessingBackend: "k8s-ut-namespace", MembershipSyncBackend: "k8s-ut-namespace",
				ResourceImportEnabled: true,
				BackendSettings:       map[string]any{"periodic_limits": map[string]any{"enabled": true}},
			},
			want: append(append(append([]string{}, orders...), membership...), "importable_resources", "resource_periodic_limits"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { eq(t, "types", tc.o.ObservableObjectTypes(), tc.want) })
	}
}

func TestPeriodicLimitsFromYAML(t *testing.T) {
	r := mustParse(t, conf(nil,
		"    order_processing_backend: k8s-ut-namespace",
		"    backend_settings:",
		"      periodic_limits:",
		"        enabled: on",
	), noEnv)
	eq(t, "types", r.Offerings[0].ObservableObjectTypes(), []string{"order", "resource_api_key_rotation", "resource_periodic_limits"})
}

func TestMembershipViaSTOMP(t *testing.T) {
	no, yes := false, true
	tests := map[string]struct {
		o    Offering
		want bool
	}{
		"follows stomp_enabled when unset (on)":  {Offering{StompEnabled: true}, true},
		"follows stomp_enabled when unset (off)": {Offering{StompEnabled: false}, false},
		"false keeps polling despite stomp":      {Offering{StompEnabled: true, StompMembershipSyncEnabled: &no}, false},
		"true wins over stomp_enabled":           {Offering{StompEnabled: false, StompMembershipSyncEnabled: &yes}, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { eq(t, "via stomp", tc.o.MembershipViaSTOMP(), tc.want) })
	}
}

func TestSTOMPEndpoint(t *testing.T) {
	type endpoint struct {
		host string
		port int
		path string
		tls  bool
	}
	tests := map[string]struct {
		lines []string
		want  endpoint
	}{
		"defaults from api url with tls": {
			want: endpoint{"waldur.example.com", 443, "/rmqws-stomp", true},
		},
		"port follows websocket_use_tls, not verify_ssl": {
			lines: []string{"    websocket_use_tls: false", "    verify_ssl: true"},
			want:  endpoint{"waldur.example.com", 80, "/rmqws-stomp", false},
		},
		"tls with verify_ssl off still uses 443": {
			lines: []string{"    verify_ssl: false"},
			want:  endpoint{"waldur.example.com", 443, "/rmqws-stomp", true},
		},
		"host of an api url with a port": {
			lines: []string{"    waldur_api_url: http://waldur.internal:8000/api/"},
			want:  endpoint{"waldur.internal", 443, "/rmqws-stomp", true},
		},
		"explicit host, port and path": {
			lines: []string{"    stomp_ws_host: mq.example.com", `    stomp_ws_port: "15674"`, "    stomp_ws_path: /ws"},
			want:  endpoint{"mq.example.com", 15674, "/ws", true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			set := map[string]string{}
			var extra []string
			for _, l := range tc.lines {
				if k := keyOf(l); k == "waldur_api_url" {
					set[k] = l[len("    waldur_api_url: "):]
				} else {
					extra = append(extra, l)
				}
			}
			r := mustParse(t, conf(set, extra...), noEnv)
			h, p, path, tls := r.Offerings[0].STOMPEndpoint()
			eq(t, "endpoint", endpoint{h, p, path, tls}, tc.want)
		})
	}
}

func keyOf(line string) string {
	k, _, _ := strings.Cut(strings.TrimSpace(line), ":")
	return k
}

func TestOfferingUUIDHex(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"dashed":     {"7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8", "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8"},
		"hex":        {"7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8", "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8"},
		"upper case": {"7F3A1C2E-9B4D-4E8F-A1B2-C3D4E5F6A7B8", "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8"},
		"braces":     {"{7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8}", "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8"},
		"urn":        {"urn:uuid:7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8", "7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8"},
		"not hex":    {"7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7bz", ""},
		"too long":   {"7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8aa", ""},
		"empty":      {"", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := Offering{WaldurOfferingUUID: tc.in}
			eq(t, "hex", o.OfferingUUIDHex(), tc.want)
		})
	}
}
