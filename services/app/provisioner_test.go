package app

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/provisioner"
	"github.com/sitebus/sitebus/services/stompbridge"
)

const clusterOffering = `offerings:
  - name: clusters
    waldur_api_url: https://waldur.example.com/api/
    waldur_api_token: t
    waldur_offering_uuid: 5e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b
    backend_type: rancher-cluster
    order_processing_backend: rancher-cluster
    backend_settings:
      backend_url: https://rancher.example.com
      username: token-abc
      password: s3cret
      base_image_name: SLE Micro 6.1
      vault_host: http://127.0.0.1:8200
      vault_token: root
      openstack_offering_uuid_list:
        - {uuid: 11111111-1111-4111-8111-111111111111, slug: az-a, cloud: site-a}
`

func TestRancherClusterOfferings(t *testing.T) {
	tests := map[string]struct {
		extra   string
		wantErr string // a part of the error
	}{
		"settings that decode and validate are accepted": {},
		"a setting that cannot work is refused naming its key": {
			extra:   "      deployment_mode: hybrid\n",
			wantErr: "backend_settings.deployment_mode",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(clusterOffering+tc.extra), "config.yaml", nil)
			if err != nil {
				t.Fatalf("config.Parse: %v", err)
			}
			p, err := NewPlan(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := p.Offerings[0].RancherCluster; s.BaseImageName != "SLE Micro 6.1" || !s.Vault.Enabled() {
				t.Errorf("settings %+v", s)
			}
			// The provisioner takes the offering's orders; the order,
			// quota, membership and usage services leave it alone.
			d := &deps{cfg: cfg, plan: p, log: slog.New(slog.DiscardHandler),
				offerings: []stompbridge.Offering{{Config: &cfg.Offerings[0]}}}
			d.backends.d = d
			got, err := d.clusterOfferings()
			if err != nil {
				t.Fatal(err)
			}
			if o := got["5e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b"]; o == nil || o.Rancher == nil || o.Vault == nil || o.Cloud == nil {
				t.Errorf("cluster offerings %v", got)
			}
			for svc, list := range map[string]func() (int, error){
				"order":      func() (int, error) { l, err := d.orderOfferings(); return len(l), err },
				"quota":      func() (int, error) { l, err := d.quotaOfferings(); return len(l), err },
				"membership": func() (int, error) { l, err := d.membershipOfferings(); return len(l), err },
				"usage":      func() (int, error) { l, err := d.usageOfferings(); return len(l), err },
			} {
				if n, err := list(); n != 0 || err != nil {
					t.Errorf("%s service gets %d offerings (%v)", svc, n, err)
				}
			}
		})
	}
}

func TestClusterProvisionerIsAService(t *testing.T) {
	got, err := selectServices("", []string{provisioner.Name}, nil)
	if err != nil || !slices.Equal(got, []string{provisioner.Name}) {
		t.Errorf("selectServices = %v, %v", got, err)
	}
}

// A rancher-cluster offering's membership names each resource's role
// groups by its UUID, under the cluster's group, with the offering's role
// mapping; without Keycloak its clusters have no groups to fill.
func TestClusterMembershipOffering(t *testing.T) {
	keycloak := "      keycloak_enabled: true\n" +
		"      keycloak: {keycloak_url: https://kc.example.com/, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: admin, keycloak_password: pw}\n" +
		"      role_mapping: {PROJECT.MANAGER: \"\"}\n"
	for _, tc := range []struct {
		name, extra string
		ok          bool
	}{{"without Keycloak", "", false}, {"with Keycloak", keycloak, true}} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(clusterOffering, "    order_processing_backend: rancher-cluster\n",
				"    order_processing_backend: rancher-cluster\n    membership_sync_backend: rancher-cluster\n", 1)
			cfg, err := config.Parse([]byte(text+tc.extra), "config.yaml", nil)
			if err != nil {
				t.Fatalf("config.Parse: %v", err)
			}
			p, err := NewPlan(cfg)
			if err != nil {
				t.Fatal(err)
			}
			mo, ok := ClusterMembershipOffering(&p.Offerings[0], nil)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			groups := mo.Groups(&waldur.Resource{UUID: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"})
			var got []string
			for _, g := range groups {
				got = append(got, g.Parent+"/"+g.Name+" "+g.Role)
			}
			want := []string{
				"c_0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d/c_0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d_cluster-owner cluster-owner",
				"c_0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d/c_0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d_cluster-member cluster-member",
			}
			if !slices.Equal(got, want) {
				t.Errorf("groups %q, want %q", got, want)
			}
			if mo.Backend != nil || !slices.Equal(mo.Roles, []string{"cluster-owner", "cluster-member"}) ||
				mo.RoleMapping["PROJECT.ADMIN"] != "cluster-owner" || mo.RoleMapping["PROJECT.MANAGER"] != "" || mo.RoleMapping["PROJECT.MEMBER"] != "cluster-member" {
				t.Errorf("offering: backend %v, roles %v, mapping %v", mo.Backend, mo.Roles, mo.RoleMapping)
			}
		})
	}
}
