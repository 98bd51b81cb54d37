package app

import (
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
)

const planBase = `offerings:
  - name: k8s
    waldur_api_url: https://waldur.example.com/api/
    waldur_api_token: t
    waldur_offering_uuid: 7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8
    backend_type: k8s-ut-namespace
    order_processing_backend: k8s-ut-namespace
`

func parsePlan(t *testing.T, extra string) (*Plan, error) {
	t.Helper()
	cfg, err := config.Parse([]byte(planBase+extra), "config.yaml", nil)
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	return NewPlan(cfg)
}

func TestNewPlan(t *testing.T) {
	tests := map[string]struct {
		extra   string
		check   func(t *testing.T, p *Plan)
		wantErr string // the whole error
	}{
		"settings are parsed once, as run uses them": {
			extra: "    backend_settings: {namespace_prefix: \"\", cr_namespace: sys}\n",
			check: func(t *testing.T, p *Plan) {
				s := p.Offerings[0].ManagedNS
				if s.NamespacePrefix != "" || s.CRNamespace != "sys" || p.Offerings[0].Keycloak != nil {
					t.Errorf("got %+v", p.Offerings[0])
				}
				if p.Offerings[0].Waldur.Token != "t" {
					t.Error("the Waldur client settings lack the token")
				}
			},
		},
		"keycloak is parsed when enabled": {
			extra: "    backend_settings:\n      keycloak_enabled: true\n      keycloak: {keycloak_username: u, keycloak_password: p, keycloak_realm: hpc}\n",
			check: func(t *testing.T, p *Plan) {
				if kc := p.Offerings[0].Keycloak; kc == nil || kc.Realm != "hpc" {
					t.Errorf("keycloak %+v", kc)
				}
			},
		},
		"a key both parsers read is reported once": {
			extra:   "    backend_settings: {keycloak_enabled: maybe}\n",
			wantErr: `config.yaml:8: offerings[0] ("k8s").backend_settings.keycloak_enabled: must be a boolean, not a string`,
		},
		"an unsupported username backend is refused": {
			extra:   "    username_management_backend: custom\n",
			wantErr: `config.yaml:8: offerings[0] ("k8s").username_management_backend: "custom" is not supported (supported: base)`,
		},
		"an explicit empty username backend is base's no-op": {
			extra: "    username_management_backend: \"\"\n",
			check: func(t *testing.T, p *Plan) {},
		},
		"a vcluster offering's settings are checked": {
			extra: "  - name: vc\n    waldur_api_url: https://waldur.example.com/api/\n    waldur_api_token: t\n    waldur_offering_uuid: 8f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8\n    backend_type: vcluster\n    order_processing_backend: vcluster\n    backend_settings: {driver: platform, import_to_rancher: false}\n",
			wantErr: `config.yaml:14: offerings[1] ("vc").backend_settings.platform_project: is required with driver platform` +
				"\n" + `config.yaml:14: offerings[1] ("vc").backend_settings.platform_template: is required with driver platform`,
		},
		"config check accepts the helm driver": {
			extra: "  - name: vc\n    waldur_api_url: https://waldur.example.com/api/\n    waldur_api_token: t\n    waldur_offering_uuid: 8f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8\n    backend_type: vcluster\n    order_processing_backend: vcluster\n    backend_settings: {driver: helm, import_to_rancher: false}\n",
			check: func(t *testing.T, p *Plan) {
				if s := p.Offerings[1].VCluster; s.Driver != "helm" {
					t.Errorf("got %+v", s)
				}
			},
		},
		"a vcluster offering is parsed": {
			extra: "  - name: vc\n    waldur_api_url: https://waldur.example.com/api/\n    waldur_api_token: t\n    waldur_offering_uuid: 8f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8\n    backend_type: vcluster\n    order_processing_backend: vcluster\n    backend_settings: {import_to_rancher: false, rancher_project_id: p-1, host_cluster_id: local}\n",
			check: func(t *testing.T, p *Plan) {
				if s := p.Offerings[1].VCluster; s.ProjectID() != "local:p-1" || s.Driver != "external" {
					t.Errorf("got %+v", s)
				}
			},
		},
		"warnings come along": {
			extra: "    backend_settings: {colour: red}\n",
			check: func(t *testing.T, p *Plan) {
				if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Error(), `config.yaml:8: warning: offerings[0] ("k8s").backend_settings.colour: unknown key "colour" is ignored`) {
					t.Errorf("warnings %v", p.Warnings)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := parsePlan(t, tc.extra)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

// The repository's Rancher sample is what a Python Rancher site runs: run
// and config check (both LoadPlan) accept it and hand the backend the one
// parsed keycloak block.
func TestPlanAcceptsTheRancherSample(t *testing.T) {
	p, err := LoadPlan("../../pkg/config/testdata/rancher.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op := p.Offerings[0]
	rs := op.Rancher
	if rs.ClusterID != "c-m-1234abcd" || rs.ProjectPrefix != "waldur-" || rs.KeycloakUseUserID || rs.NamespaceLabels["team"] != "platform" {
		t.Errorf("rancher settings %+v", rs)
	}
	if op.Keycloak == nil || rs.Keycloak != op.Keycloak || op.Keycloak.Realm != "waldur" {
		t.Errorf("keycloak block: plan %p, backend %p", op.Keycloak, rs.Keycloak)
	}
}

func TestNewPlanRancher(t *testing.T) {
	base := strings.NewReplacer("backend_type: k8s-ut-namespace", "backend_type: rancher",
		"order_processing_backend: k8s-ut-namespace", "order_processing_backend: rancher")
	tests := map[string]struct {
		settings string
		wantErr  string
	}{
		"rancher settings are decoded for a rancher offering": {
			settings: "    backend_settings: {backend_url: https://r.example.com, cluster_id: c-m-1, project_prefix: \"\"}\n",
		},
		"a missing cluster_id is refused as run would refuse it": {
			settings: "    backend_settings: {backend_url: https://r.example.com}\n",
			wantErr:  `config.yaml:8: offerings[0] ("k8s").backend_settings.cluster_id: required (the Rancher cluster id, e.g. c-m-1234abcd)`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(base.Replace(planBase)+tc.settings), "config.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(cfg)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := p.Offerings[0].Rancher; s.ClusterID != "c-m-1" || s.ProjectPrefix != "" || s.DefaultRole != "workloads-manage" {
				t.Errorf("settings %+v", s)
			}
		})
	}
}

// The repository's OKD sample passes the plan (so config check and run
// accept it) with its settings decoded for the backend.
func TestPlanAcceptsTheOKDSample(t *testing.T) {
	p, err := LoadPlan("../../pkg/config/testdata/okd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op := p.Offerings[0]
	s := op.OKD
	if s.APIURL != "https://api.okd.example.com:6443" || s.NamespacePrefix != "waldur-" || s.DefaultRole != "edit" || s.ClusterRole("PROJECT.MEMBER") != "view" {
		t.Errorf("okd settings %+v", s)
	}
	b, err := op.NewBackend("okd", BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Type() != "okd" {
		t.Errorf("backend type %q", b.Type())
	}
}
