package harness

import (
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
)

// The rendered offering is what sitebus reads: the config loader and the
// rancher-cluster decoder accept it, and every field lands on its key.
func TestClusterOfferingDecodesToItsFields(t *testing.T) {
	zone := func(uuid, slug, az string) ClusterZone {
		return ClusterZone{UUID: uuid, Slug: slug, Name: "Zone " + slug, AvailabilityZone: az,
			ExternalNetworkID: "9e8d7c6b-5a49-4838-a271-605f4e3d2c1b", AuthURL: "http://127.0.0.1:5000/v3", Password: "os-pass"}
	}
	base := ClusterOffering{
		Name: "clusters", WaldurURL: "http://127.0.0.1:8000/", Token: "tok", OfferingUUID: "c0a1b2c3d4e54f6a8b7c6d5e4f3a2b1d",
		WebSTOMPAddr: "127.0.0.1:15674", WebSTOMPPath: "/ws",
		RancherURL: "http://127.0.0.1:9443", RancherAccessKey: "token-ab", RancherSecretKey: "secret: with colon",
		Image:        "SLE Micro 6.1",
		Server:       ClusterNodeProfile{Flavor: "m1.large", SystemGB: 80, DataGB: 100},
		Worker:       ClusterNodeProfile{SystemGB: 40},
		LoadBalancer: ClusterNodeProfile{Flavor: "m1.medium", SystemGB: 20},
		Zones: []ClusterZone{
			zone("11111111-1111-4111-8111-111111111111", "az-a", "nova-a"),
			zone("22222222-2222-4222-8222-222222222222", "az-b", "nova-b"),
		},
	}
	withVault := base
	withVault.VaultURL, withVault.VaultToken = "http://127.0.0.1:8200", "hvs.root"
	withKeycloak := base
	withKeycloak.KeycloakURL, withKeycloak.KeycloakPassword = "http://127.0.0.1:8080", "kc-pass"
	withMembership := withKeycloak
	withMembership.MembershipSync, withMembership.RoleMapping = true, map[string]string{"PROJECT.MANAGER": ""}

	for _, tc := range []struct {
		name      string
		offering  ClusterOffering
		vaultHost string
		kcPass    string
		members   bool
	}{
		{"without Vault or Keycloak", base, "", "", false},
		{"with Vault", withVault, "http://127.0.0.1:8200", "", false},
		{"with Keycloak", withKeycloak, "", "kc-pass", false},
		{"with membership and a role mapping", withMembership, "", "kc-pass", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := config.Parse([]byte("offerings:\n"+tc.offering.YAML()), "test.yaml", func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatalf("%v\n%s", err, tc.offering.YAML())
			}
			o := root.Offerings[0]
			if o.Name != "clusters" || o.WaldurAPIURL != "http://127.0.0.1:8000/api/" || o.BackendType != ranchercluster.Type ||
				o.StompWSHost != "127.0.0.1" || o.StompWSPort != 15674 || o.StompWSPath != "/ws" || o.ReportingBackend != ranchercluster.Type {
				t.Fatalf("offering %+v", o)
			}
			s, err := ranchercluster.DecodeSettings(o.BackendSettings)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Warnings) != 0 {
				t.Errorf("warnings %v", s.Warnings)
			}
			if s.BackendURL != base.RancherURL || s.Username != "token-ab" || s.Password.Reveal() != "secret: with colon" ||
				s.BaseImageName != base.Image || !s.Managed() {
				t.Errorf("rancher settings %+v", s)
			}
			if s.Server.FlavorName != "m1.large" || s.Server.SystemVolumeSizeGB != 80 || s.Server.DataVolumeSizeGB != 100 ||
				s.Worker.SystemVolumeSizeGB != 40 || s.LoadBalancer.FlavorName != "m1.medium" || s.LoadBalancer.SystemVolumeSizeGB != 20 {
				t.Errorf("profiles %+v %+v %+v", s.Server, s.Worker, s.LoadBalancer)
			}
			if s.Vault.Host != tc.vaultHost || (tc.vaultHost != "" && s.Vault.Token.Reveal() != "hvs.root") {
				t.Errorf("vault host %q", s.Vault.Host)
			}
			if (tc.kcPass != "") != s.KeycloakEnabled || (s.Keycloak != nil && (s.Keycloak.Password.Reveal() != tc.kcPass || s.Keycloak.Realm != "waldur")) {
				t.Errorf("keycloak enabled %v %+v", s.KeycloakEnabled, s.Keycloak)
			}
			if (o.MembershipSyncBackend == ranchercluster.Type) != tc.members {
				t.Errorf("membership_sync_backend %q", o.MembershipSyncBackend)
			}
			if r, ok := s.RoleMapping["PROJECT.MANAGER"]; tc.members && (!ok || r != "") {
				t.Errorf("role mapping %v", s.RoleMapping)
			}
			var got []string
			for _, az := range s.OpenStackOfferings {
				got = append(got, az.Slug+"/"+az.AvailabilityZone+"/"+az.Name+"/"+az.ExternalNetworkID)
			}
			want := []string{"az-a/nova-a/Zone az-a/9e8d7c6b-5a49-4838-a271-605f4e3d2c1b", "az-b/nova-b/Zone az-b/9e8d7c6b-5a49-4838-a271-605f4e3d2c1b"}
			if !slices.Equal(got, want) {
				t.Errorf("zones %q, want %q", got, want)
			}
		})
	}
}
