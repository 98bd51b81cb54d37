package tools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// Secrets of the rancher-cluster site, none of which may be printed.
const (
	osPassword      = "os-TOPSECRET-pw-3f9a"
	wrongOSPassword = "os-TOPSECRET-wrong-81c0"
	wrongVaultToken = "hvs.TOPSECRET-wrong-vault-7e"
	clusterRancher  = "rancher-TOPSECRET-cl-4d2b"
)

// clusterSite is a rancher-cluster offering's world: Waldur, Rancher and
// OpenStack simulators and a real Vault.
type clusterSite struct {
	ws    *waldursim.Server
	fx    *waldursim.Fixture
	rs    *ranchersim.Server
	os    *openstacksim.Server
	vault *harness.Vault
}

type clusterConfig struct {
	osPassword, vaultURL, vaultToken string
}

func newClusterSite(t *testing.T) *clusterSite {
	t.Helper()
	fx := harness.Fixture(t)
	return &clusterSite{
		ws: waldursim.NewTestServer(t, waldursim.Config{Fixture: fx}), fx: fx,
		rs: ranchersim.NewTestServer(t, ranchersim.Options{SecretKey: clusterRancher}),
		os: openstacksim.NewTestServer(t, openstacksim.Options{
			AdminPassword: osPassword, AvailabilityZones: []string{"nova-a"},
			Flavors: []openstacksim.Flavor{{ID: "f-large", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
				{ID: "f-medium", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40}},
			Images:          []openstacksim.Image{{ID: "5b0c1a2e-0000-4000-8000-000000000001", Name: "SLE Micro 6.1"}},
			ExternalNetwork: openstacksim.ExternalNetwork{Name: "public", CIDR: "172.24.4.0/24", NetworkID: "9e8d7c6b-5a49-4838-a271-605f4e3d2c1b"},
		}),
		vault: harness.StartVault(t),
	}
}

func (s *clusterSite) defaults() clusterConfig {
	return clusterConfig{osPassword: osPassword, vaultURL: s.vault.URL, vaultToken: s.vault.RootToken}
}

func (s *clusterSite) write(t *testing.T, c clusterConfig) string {
	t.Helper()
	o := s.rs.Options()
	yaml := fmt.Sprintf(`offerings:
  - name: clusters
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: rancher-cluster
    order_processing_backend: rancher-cluster
    stomp_enabled: false
    backend_settings:
      backend_url: %s
      username: %s
      password: %s
      base_image_name: SLE Micro 6.1
      deployment_mode: managed
      managed_rancher_server_flavor_name: m1.large
      managed_rancher_load_balancer_flavor_name: m1.medium
      managed_rancher_server_system_volume_size_gb: 80
      managed_rancher_server_data_volume_size_gb: 100
      managed_rancher_worker_system_volume_size_gb: 40
      managed_rancher_load_balancer_system_volume_size_gb: 20
      vault_host: %s
      vault_token: %s
      openstack_offering_uuid_list:
        - uuid: 11111111-1111-4111-8111-111111111111
          slug: az-a
          availability_zone: nova-a
          external_network_id: 9e8d7c6b-5a49-4838-a271-605f4e3d2c1b
          cloud:
            auth: {auth_url: %s, username: admin, password: %s, project_name: admin, user_domain_name: Default, project_domain_name: Default}
            region_name: RegionOne
sitebus:
  data_dir: %q
`, s.ws.URL(), s.fx.Users[0].Token, s.fx.Offerings[0].UUID, s.rs.URL(), o.AccessKey, clusterRancher,
		c.vaultURL, c.vaultToken, s.os.AuthURL(), c.osPassword, t.TempDir())
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type diagCheck struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// TestClusterDiagnostics runs `sitebus diagnostics` for a rancher-cluster
// offering: Rancher's login, the zone's OpenStack login and catalog, the
// base image and flavors, and Vault's health and token; each broken piece
// fails its own check with the fix, and no secret is printed.
func TestClusterDiagnostics(t *testing.T) {
	s := newClusterSite(t)
	clusterChecks := []string{"rancher login", "openstack az-a", "image az-a", "flavors az-a", "vault health", "vault token"}
	tests := map[string]struct {
		edit func(*clusterConfig)
		// failing are the cluster checks that fail, with a part of their fix.
		failing map[string]string
	}{
		"a working site passes every cluster check": {},
		"a wrong OpenStack password fails the zone's login, naming the key": {
			edit:    func(c *clusterConfig) { c.osPassword = wrongOSPassword },
			failing: map[string]string{"openstack az-a": "openstack_offering_uuid_list[0].cloud: username and password"},
		},
		"an unreachable Vault fails its health": {
			edit:    func(c *clusterConfig) { c.vaultURL = fmt.Sprintf("http://127.0.0.1:%d", harness.FreePort(t)) },
			failing: map[string]string{"vault health": "check backend_settings.vault_host"},
		},
		"a token Vault does not know fails the token check": {
			edit:    func(c *clusterConfig) { c.vaultToken = wrongVaultToken },
			failing: map[string]string{"vault token": "check backend_settings.vault_token"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := s.defaults()
			if tc.edit != nil {
				tc.edit(&c)
			}
			out, code := sitebus(t, "diagnostics", "-c", s.write(t, c), "--timeout", "20s", "--output", "json")
			for _, secret := range []string{osPassword, wrongOSPassword, wrongVaultToken, clusterRancher, s.vault.RootToken} {
				if strings.Contains(out, secret) {
					t.Errorf("a secret was printed:\n%s", out)
				}
			}
			start := strings.Index(out, "{")
			if start < 0 {
				t.Fatalf("exit %d, no JSON:\n%s", code, out)
			}
			var res struct {
				Checks []diagCheck `json:"checks"`
			}
			if err := json.NewDecoder(strings.NewReader(out[start:])).Decode(&res); err != nil {
				t.Fatalf("exit %d, %v:\n%s", code, err, out)
			}
			got := map[string]diagCheck{}
			for _, ch := range res.Checks {
				got[ch.Check] = ch
			}
			// A check that needs a failed one is not run.
			after := map[string]string{"image az-a": "openstack az-a", "flavors az-a": "openstack az-a", "vault token": "vault health"}
			for _, name := range clusterChecks {
				ch, ok := got[name]
				fix, wantFail := tc.failing[name]
				_, skipped := tc.failing[after[name]]
				switch {
				case skipped && ok:
					t.Errorf("%s ran after %s failed", name, after[name])
				case skipped:
				case !ok:
					t.Errorf("no %q check:\n%s", name, out)
				case ch.OK == wantFail:
					t.Errorf("%s: ok=%v (%s), want ok=%v", name, ch.OK, ch.Detail, !wantFail)
				case wantFail && !strings.Contains(ch.Fix, fix):
					t.Errorf("%s: fix %q, want one with %q", name, ch.Fix, fix)
				}
			}
			if len(tc.failing) > 0 && code != 1 {
				t.Errorf("exit %d with a failing check, want 1", code)
			}
		})
	}
}
