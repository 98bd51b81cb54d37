package vcluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
)

func importSettings() map[string]any {
	return map[string]any{"host_cluster_id": "c-m-host1", "backend_url": "https://rancher.example.com",
		"username": "token-x", "password": "s3cret"}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestDecodeSettings(t *testing.T) {
	tests := []struct {
		name    string
		raw     map[string]any
		wantErr string
		check   func(t *testing.T, s Settings)
	}{
		{name: "defaults with the Rancher import", raw: importSettings(), check: func(t *testing.T, s Settings) {
			if s.Driver != DriverExternal || !s.ImportToRancher || s.SecretKey != "config" || s.KubeconfigWait != DefaultKubeconfigWait || !s.VerifyCert {
				t.Errorf("defaults: %+v", s)
			}
		}},
		{name: "no import needs no Rancher", raw: map[string]any{"import_to_rancher": false}},
		{name: "import without Rancher names the keys", raw: map[string]any{},
			wantErr: "backend_settings.host_cluster_id: is required when import_to_rancher is true"},
		{name: "helm is a driver", raw: with(importSettings(), "driver", "helm"), check: func(t *testing.T, s Settings) {
			if s.Driver != DriverHelm {
				t.Errorf("driver %q, want helm", s.Driver)
			}
		}},
		{name: "platform needs its project and template", raw: with(importSettings(), "driver", "platform"),
			wantErr: "backend_settings.platform_project: is required with driver platform\nbackend_settings.platform_template: is required with driver platform"},
		{name: "platform with project and template takes the platform's cluster name", raw: with(importSettings(), "driver", "platform",
			"platform_project", "waldur", "platform_template", "small", "platform_owner", "admin"), check: func(t *testing.T, s Settings) {
			if s.Driver != DriverPlatform || s.PlatformProject != "waldur" || s.PlatformTemplate != "small" ||
				s.PlatformCluster != DefaultPlatformCluster || s.PlatformOwner != "admin" || s.PlatformKubeconfigPath != "" {
				t.Errorf("platform settings: %+v", s)
			}
		}},
		{name: "a platform name that is not a Kubernetes name is refused", raw: with(importSettings(), "driver", "platform",
			"platform_project", "Waldur Project", "platform_template", "small"),
			wantErr: `backend_settings.platform_project: "Waldur Project" is not a vCluster Platform name`},
		{name: "rancher_project_map places a project's or a customer's namespaces", raw: with(importSettings(), "rancher_project_id", "p-default",
			"rancher_project_map", map[string]any{"0123456789abcdef0123456789abcdef": "p-proj", "fedcba98-7654-3210-fedc-ba9876543210": "c-m-host1:p-cust"}),
			check: func(t *testing.T, s Settings) {
				for _, c := range []struct{ project, customer, want string }{
					{"01234567-89ab-cdef-0123-456789abcdef", "fedcba9876543210fedcba9876543210", "c-m-host1:p-proj"},
					{"11111111111111111111111111111111", "FEDCBA9876543210FEDCBA9876543210", "c-m-host1:p-cust"},
					{"11111111111111111111111111111111", "22222222222222222222222222222222", "c-m-host1:p-default"},
				} {
					if got := s.ProjectIDFor(c.project, c.customer); got != c.want {
						t.Errorf("ProjectIDFor(%s, %s) = %q, want %q", c.project, c.customer, got, c.want)
					}
				}
			}},
		{name: "rancher_project_map refuses one UUID spelt twice", raw: with(importSettings(),
			"rancher_project_map", map[string]any{"0123456789abcdef0123456789abcdef": "p-a", "01234567-89AB-cdef-0123-456789abcdef": "p-b"}),
			wantErr: "backend_settings.rancher_project_map.0123456789abcdef0123456789abcdef: is the UUID of another key, spelt differently"},
		{name: "rancher_project_map keys are Waldur UUIDs and its values project ids", raw: with(importSettings(),
			"rancher_project_map", map[string]any{"physics": "p-a", "0123456789abcdef0123456789abcdef": "Project A"}),
			wantErr: "backend_settings.rancher_project_map.0123456789abcdef0123456789abcdef: \"Project A\" is not a Rancher project id (such as p-abcd1)\nbackend_settings.rancher_project_map.physics: \"physics\" is not a Waldur project or customer UUID"},
		{name: "an unknown driver", raw: with(importSettings(), "driver", "capi"), wantErr: `"capi" is not a driver (supported: external, helm, platform)`},
		{name: "project needs the host cluster id", raw: map[string]any{"import_to_rancher": false, "rancher_project_id": "p-abc"},
			wantErr: "backend_settings.host_cluster_id: is required with rancher_project_id"},
		{name: "project id with its cluster", raw: with(importSettings(), "rancher_project_id", "c-m-host1:p-abc"), check: func(t *testing.T, s Settings) {
			if s.ProjectID() != "c-m-host1:p-abc" {
				t.Errorf("ProjectID = %q", s.ProjectID())
			}
		}},
		{name: "project id alone gets the host's", raw: with(importSettings(), "rancher_project_id", "p-abc"), check: func(t *testing.T, s Settings) {
			if s.ProjectID() != "c-m-host1:p-abc" {
				t.Errorf("ProjectID = %q", s.ProjectID())
			}
		}},
		{name: "server must be https", raw: with(importSettings(), "vcluster_server", "http://x"), wantErr: "backend_settings.vcluster_server"},
		{name: "waits are durations", raw: with(importSettings(), "kubeconfig_wait", "30s", "ready_wait", "2m"), check: func(t *testing.T, s Settings) {
			if s.KubeconfigWait != 30*time.Second || s.ReadyWait != 2*time.Minute {
				t.Errorf("waits: %v %v", s.KubeconfigWait, s.ReadyWait)
			}
		}},
		{name: "a bad duration names its key", raw: with(importSettings(), "ready_wait", "soon"), wantErr: `backend_settings.ready_wait: must be a duration such as 10m, not "soon"`},
		{name: "a wrong type names its key", raw: with(importSettings(), "import_to_rancher", "yes"), wantErr: "backend_settings.import_to_rancher: must be a boolean"},
		{name: "the fleet workspace defaults to Rancher's", raw: importSettings(), check: func(t *testing.T, s Settings) {
			if s.FleetWorkspace != "fleet-default" {
				t.Errorf("fleet workspace %q", s.FleetWorkspace)
			}
		}},
		{name: "a fleet workspace of the offering's", raw: with(importSettings(), "fleet_workspace", "fleet-vc"), check: func(t *testing.T, s Settings) {
			if s.FleetWorkspace != "fleet-vc" {
				t.Errorf("fleet workspace %q", s.FleetWorkspace)
			}
		}},
		{name: "a fleet workspace is a namespace name", raw: with(importSettings(), "fleet_workspace", "Fleet_VC"), wantErr: `backend_settings.fleet_workspace: "Fleet_VC" is not a fleet workspace`},
		{name: "unknown keys are warnings", raw: with(importSettings(), "drivr", "external"), check: func(t *testing.T, s Settings) {
			if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0].Error(), "drivr") {
				t.Errorf("warnings: %v", s.Warnings)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := DecodeSettings(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the password is quoted: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestNamespaceName(t *testing.T) {
	tests := []struct {
		name, slug, want, wantErr string
	}{
		{name: "prefixed slug", slug: "my-cluster", want: "vc-my-cluster"},
		{name: "no slug", slug: "", wantErr: "has no slug"},
		{name: "over 63 characters is refused, not cut", slug: strings.Repeat("a", 61), wantErr: "exceeds 63 characters (64)"},
		{name: "upper case is refused, not lowered", slug: "My", wantErr: "not a valid RFC 1123 label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NamespaceName(backend.Resource{UUID: "u1", Slug: tt.slug})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, backend.ErrInvalid) {
					t.Fatalf("err = %v, want invalid %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDecodeAttributes(t *testing.T) {
	tests := []struct {
		name, raw, wantErr string
		want               map[string]float64
		version            string
	}{
		{name: "all attributes", raw: `{"name":"a","cpu":2,"ram":4.5,"storage":10,"kubernetes_version":"v1.31.2"}`,
			want: map[string]float64{"cpu": 2, "ram": 4.5, "storage": 10}, version: "v1.31.2"},
		{name: "none", raw: ``, want: map[string]float64{}},
		{name: "extra form fields are ignored", raw: `{"name":"a","plan":"x"}`, want: map[string]float64{}},
		{name: "negative cpu", raw: `{"cpu":-1}`, wantErr: "cpu: Ensure this value is a number greater than or equal to 0."},
		{name: "string ram", raw: `{"ram":"4"}`, wantErr: "ram: A valid number is required."},
		{name: "bad version", raw: `{"kubernetes_version":"latest"}`, wantErr: "kubernetes_version:"},
		{name: "not an object", raw: `[1]`, wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := DecodeAttributes([]byte(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, backend.ErrInvalid) {
					t.Fatalf("err = %v, want invalid %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := a.Limits()
			if len(got) != len(tt.want) {
				t.Fatalf("limits %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("limits %v, want %v", got, tt.want)
				}
			}
			if a.KubernetesVersion != tt.version {
				t.Fatalf("version %q", a.KubernetesVersion)
			}
		})
	}
}
