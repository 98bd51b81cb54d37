package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/stompbridge"
)

const vclusterOffering = `offerings:
  - name: vclusters
    waldur_api_url: https://waldur.example.com/api/
    waldur_api_token: t
    waldur_offering_uuid: 6e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b
    backend_type: vcluster
    order_processing_backend: vcluster
    membership_sync_backend: vcluster
    reporting_backend: vcluster
    backend_settings:
      host_kubeconfig_path: KUBECONFIG
      host_cluster_id: c-m-host
      rancher_project_id: p-abc
      backend_url: https://rancher.example.com
      username: token-abc
      password: s3cret
      member_source: rancher_project
`

func TestVClusterOrdersGoToTheProvisionerAndItsObjectsToQuotaAndUsage(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster: {server: \"https://127.0.0.1:1\"}\n"+
		"users:\n- name: u\n  user: {token: x}\ncontexts:\n- name: c\n  context: {cluster: h, user: u}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := vclusterDeps(t, strings.ReplaceAll(vclusterOffering, "KUBECONFIG", kc))
	vcs, err := d.vclusterOfferings()
	if err != nil {
		t.Fatal(err)
	}
	if o := vcs["6e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b"]; o == nil || o.Rancher == nil || o.Host == nil || o.Settings.ProjectID() != "c-m-host:p-abc" {
		t.Fatalf("vcluster offerings %v", vcs)
	}
	for svc, tc := range map[string]struct {
		list func() (int, error)
		want int
	}{
		"order":      {func() (int, error) { l, err := d.orderOfferings(); return len(l), err }, 0},
		"quota":      {func() (int, error) { l, err := d.quotaOfferings(); return len(l), err }, 1},
		"membership": {func() (int, error) { l, err := d.membershipOfferings(); return len(l), err }, 1},
		"usage":      {func() (int, error) { l, err := d.usageOfferings(); return len(l), err }, 1},
	} {
		if n, err := tc.list(); n != tc.want || err != nil {
			t.Errorf("%s service gets %d offerings (%v), want %d", svc, n, err, tc.want)
		}
	}
	// member_source rancher_project: the Rancher project's bindings are the
	// members, so membership keeps the cluster's bindings and no groups.
	mos, err := d.membershipOfferings()
	if err != nil || len(mos) != 1 || mos[0].Access == nil || mos[0].Groups != nil || mos[0].Backend == nil {
		t.Errorf("membership offering %+v (%v), want one keeping access without groups", mos, err)
	}
}

// config check refuses a vcluster member sync that would do nothing: one
// without the Rancher import its bindings go on, or a Waldur team source
// without the Keycloak its groups live in.
func TestVClusterMembershipNeedsTheImportAndForTheTeamKeycloak(t *testing.T) {
	keycloak := "      keycloak_enabled: true\n      keycloak: {keycloak_url: https://kc.example.com/, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: admin, keycloak_password: pw}\n"
	tests := map[string]struct {
		from, to string
		wantErr  string
	}{
		"rancher_project needs no Keycloak": {},
		"waldur_team with Keycloak":         {from: "      member_source: rancher_project\n", to: keycloak},
		"waldur_team without Keycloak": {from: "      member_source: rancher_project\n", to: "",
			wantErr: "backend_settings.keycloak_enabled: must be true with member_source waldur_team"},
		"no import": {from: "      member_source: rancher_project\n", to: "      member_source: rancher_project\n      import_to_rancher: false\n",
			wantErr: "backend_settings.import_to_rancher: must be true with membership_sync_backend vcluster"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw := vclusterOffering
			if tc.from != "" {
				raw = strings.Replace(raw, tc.from, tc.to, 1)
			}
			cfg, err := config.Parse([]byte(raw), "config.yaml", nil)
			if err != nil {
				t.Fatalf("config.Parse: %v", err)
			}
			_, err = NewPlan(cfg)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// member_source waldur_team: the team goes into the resource's cluster role
// groups c_<uuid hex>_<role> under c_<uuid hex>, by role_mapping.
func TestVClusterWaldurTeamMembershipUsesTheClusterRoleGroups(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster: {server: \"https://127.0.0.1:1\"}\n"+
		"users:\n- name: u\n  user: {token: x}\ncontexts:\n- name: c\n  context: {cluster: h, user: u}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := strings.ReplaceAll(vclusterOffering, "KUBECONFIG", kc)
	raw = strings.Replace(raw, "      member_source: rancher_project\n", "      keycloak_enabled: true\n"+
		"      keycloak: {keycloak_url: https://kc.example.com/, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: admin, keycloak_password: pw}\n"+
		"      role_mapping: {PROJECT.MEMBER: \"\"}\n", 1)
	d := vclusterDeps(t, raw)
	mos, err := d.membershipOfferings()
	if err != nil || len(mos) != 1 || mos[0].Access == nil || mos[0].Groups == nil {
		t.Fatalf("membership offerings %+v (%v), want one with groups and access", mos, err)
	}
	mo := mos[0]
	hex := "0a0a0a0a0a0a4a0a8a0a0a0a0a0a0a0a"
	groups := mo.Groups(&waldur.Resource{UUID: hex})
	if len(groups) != 1 || groups[0].Name != "c_"+hex+"_cluster-owner" || groups[0].Parent != "c_"+hex || groups[0].Role != "cluster-owner" {
		t.Errorf("groups %+v, want the owner group alone (members excluded)", groups)
	}
	if mo.RoleMapping["PROJECT.MEMBER"] != "" || mo.RoleMapping["PROJECT.ADMIN"] != "cluster-owner" || len(mo.Roles) != 1 {
		t.Errorf("mapping %v roles %v", mo.RoleMapping, mo.Roles)
	}
}

// vclusterDeps is what run builds from the configuration raw (one
// offering), before it builds the services.
func vclusterDeps(t *testing.T, raw string) *deps {
	t.Helper()
	cfg, err := config.Parse([]byte(raw), "config.yaml", nil)
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	p, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &deps{cfg: cfg, plan: p, log: slog.New(slog.DiscardHandler), offerings: []stompbridge.Offering{{Config: &cfg.Offerings[0]}}}
	d.backends.d = d
	return d
}
