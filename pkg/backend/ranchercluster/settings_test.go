package ranchercluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/vault"
)

// As the other backends: only a missing (or null) key takes the default;
// "", 0, false and [] are kept, and refused when they cannot work.
func TestDecodeSettings(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(tmpl, []byte("#cloud-config\nruncmd: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		raw   map[string]any
		check func(t *testing.T, s Settings)
	}{
		"missing keys take Mastermind's defaults": {
			raw: selfManagedRaw(),
			check: func(t *testing.T, s Settings) {
				if s.DeploymentMode != ModeSelfManaged || s.K8sVersion != "v1.31.7+rke2r1" || !s.VerifyCert ||
					s.NodeDiskDriver != "sd" || s.Vault.Port != 8200 || !s.Vault.TLSVerify || s.Vault.Enabled() ||
					s.ReadOnlyMode || s.AllocateFloatingIPToAllNodes || s.KeycloakEnabled || s.FlavorsRegex != nil ||
					s.CloudInitTemplate != "" || len(s.Warnings) != 0 || s.TenantMax != (TenantMax{}) {
					t.Errorf("got %+v", s)
				}
				if strings.Join(s.ClusterRoles, ",") != "cluster-owner,cluster-member" || strings.Join(s.AdminAllowedCIDRs, ",") != "0.0.0.0/0" {
					t.Errorf("roles %v cidrs %v", s.ClusterRoles, s.AdminAllowedCIDRs)
				}
			},
		},
		"zones take distinct default CIDRs by position and fixed storage": {
			raw: managedRaw(),
			check: func(t *testing.T, s Settings) {
				var got []string
				for _, az := range s.OpenStackOfferings {
					got = append(got, az.SubnetCIDR+" "+az.StorageMode)
				}
				if strings.Join(got, ",") != "192.168.42.0/24 fixed,192.168.43.0/24 fixed,192.168.44.0/24 fixed" {
					t.Errorf("zones %v", got)
				}
			},
		},
		"an inline application credential and a clouds.yaml name are both clouds": {
			raw: managedRaw(),
			check: func(t *testing.T, s Settings) {
				a, b := s.OpenStackOfferings[0].Cloud, s.OpenStackOfferings[1].Cloud
				if !a.ApplicationCredential() || a.ApplicationCredentialID != "ac-id" || a.ApplicationCredentialSecret.Reveal() != "ac-s3cret" ||
					a.AuthURL != "https://keystone.example.com:5000/v3" || a.RegionName != "RegionOne" || !a.Verify || a.Name != "" {
					t.Errorf("inline cloud %+v", a)
				}
				if b.Name != "site-b" || b.AuthURL != "" {
					t.Errorf("named cloud %+v", b)
				}
			},
		},
		"explicit false, empty and zero values are kept": {
			raw: managedRaw("verify_cert", false, "vault_tls_verify", false, "cluster_roles", []any{},
				"managed_rancher_load_balancer_data_volume_size_gb", 0, "managed_rancher_tenant_max_cpu", 0),
			check: func(t *testing.T, s Settings) {
				if s.VerifyCert || s.Vault.TLSVerify || s.ClusterRoles == nil || len(s.ClusterRoles) != 0 ||
					s.LoadBalancer.DataVolumeSizeGB != 0 || s.TenantMax.CPU != 0 {
					t.Errorf("got %+v", s)
				}
			},
		},
		"vault_port may be a string, as Mastermind keeps it": {
			raw: managedRaw("vault_host", "vault.example.com", "vault_port", "8300", "vault_token", "hvs.x"),
			check: func(t *testing.T, s Settings) {
				if vaultAddr(s) != "https://vault.example.com:8300" {
					t.Errorf("vault address %q", vaultAddr(s))
				}
			},
		},
		"nulls are unset": {
			raw: managedRaw("k8s_version", nil, "vault_port", nil),
			check: func(t *testing.T, s Settings) {
				if s.K8sVersion != DefaultK8sVersion || s.Vault.Port != vault.DefaultPort {
					t.Errorf("got %+v", s)
				}
			},
		},
		"access_key and secret_key stand for username and password": {
			raw: managedRaw("username", nil, "password", nil, "access_key", "token-xyz", "secret_key", "other-secret"),
			check: func(t *testing.T, s Settings) {
				if s.Username != "token-xyz" || s.Password.Reveal() != "other-secret" {
					t.Errorf("credentials %q", s.Username)
				}
			},
		},
		"a cloud-init template given as a path is read from the file": {
			raw: managedRaw("cloud_init_template", tmpl),
			check: func(t *testing.T, s Settings) {
				if s.CloudInitTemplate != "#cloud-config\nruncmd: []\n" || s.CloudInitTemplatePath != tmpl {
					t.Errorf("template %q from %q", s.CloudInitTemplate, s.CloudInitTemplatePath)
				}
			},
		},
		"a cloud-init template given inline is kept as it is": {
			raw: managedRaw("cloud_init_template", "#cloud-config\nruncmd: []\n"),
			check: func(t *testing.T, s Settings) {
				if s.CloudInitTemplate != "#cloud-config\nruncmd: []\n" || s.CloudInitTemplatePath != "" {
					t.Errorf("template %q from %q", s.CloudInitTemplate, s.CloudInitTemplatePath)
				}
			},
		},
		"every key of the seed's tables is read": {
			raw: managedRaw("k8s_version", "v1.32.1+rke2r1", "private_registry_url", "registry.example.com:5000",
				"private_registry_user", "puller", "private_registry_password", "pw",
				"allocate_floating_ip_to_all_nodes", true, "vault_host", "vault.example.com", "vault_port", 8201,
				"vault_token", "hvs.x", "argocd_k8s_kubeconfig", "apiVersion: v1\nkind: Config\n", "argocd_k8s_namespace", "argocd",
				"read_only_mode", true, "flavors_regex", `m1\.(large|xlarge)`,
				"managed_rancher_server_system_volume_type_name", "ssd", "managed_rancher_server_data_volume_type_name", "ssd",
				"managed_rancher_worker_system_volume_type_name", "hdd", "managed_rancher_load_balancer_data_volume_size_gb", 10,
				"managed_rancher_load_balancer_system_volume_type_name", "hdd", "managed_rancher_load_balancer_data_volume_type_name", "hdd",
				"managed_rancher_load_balancer_cloud_init_template", "#cloud-config\n", "managed_rancher_tenant_max_cpu", 100,
				"managed_rancher_tenant_max_ram", 256, "managed_rancher_tenant_max_disk", 4096,
				"keycloak_enabled", true, "keycloak", map[string]any{"keycloak_username": "svc", "keycloak_password": "pw"}),
			check: func(t *testing.T, s Settings) {
				if s.K8sVersion != "v1.32.1+rke2r1" || s.PrivateRegistryURL != "registry.example.com:5000" || s.PrivateRegistryPassword.Reveal() != "pw" ||
					!s.AllocateFloatingIPToAllNodes || vaultAddr(s) != "https://vault.example.com:8201" || s.Vault.Token.Reveal() != "hvs.x" ||
					s.ArgoCDNamespace != "argocd" || !s.ReadOnlyMode || !s.FlavorsRegex.MatchString("m1.large") || s.FlavorsRegex.MatchString("m1.small") {
					t.Errorf("got %+v", s)
				}
				want := NodeProfile{FlavorName: "m1.medium", SystemVolumeSizeGB: 20, SystemVolumeTypeName: "hdd", DataVolumeSizeGB: 10, DataVolumeTypeName: "hdd"}
				if s.LoadBalancer != want || s.Server.SystemVolumeTypeName != "ssd" || s.Worker.SystemVolumeTypeName != "hdd" {
					t.Errorf("profiles %+v %+v %+v", s.Server, s.Worker, s.LoadBalancer)
				}
				if s.TenantMax != (TenantMax{CPU: 100, RAMGB: 256, DiskGB: 4096}) || s.Keycloak == nil || s.Keycloak.Username != "svc" {
					t.Errorf("max %+v keycloak %+v", s.TenantMax, s.Keycloak)
				}
			},
		},
		"unknown keys, also inside a zone and its cloud, are warnings naming the key": {
			raw: func() map[string]any {
				z := zoneRaw("a")
				z["storage_mod"] = "fixed"
				z["cloud"].(map[string]any)["auth"].(map[string]any)["projet_name"] = "x"
				return managedRaw("k8s_verison", "v1", "periodic_limits", map[string]any{}, "openstack_offering_uuid_list", []any{z})
			}(),
			check: func(t *testing.T, s Settings) {
				var got []string
				for _, w := range s.Warnings {
					got = append(got, w.Error())
				}
				want := []string{
					`warning: backend_settings.k8s_verison: unknown key "k8s_verison" is ignored (did you mean "k8s_version"?)`,
					`warning: backend_settings.openstack_offering_uuid_list[0].cloud.auth.projet_name: unknown key "projet_name" is ignored (did you mean "project_name"?)`,
					`warning: backend_settings.openstack_offering_uuid_list[0].storage_mod: unknown key "storage_mod" is ignored (did you mean "storage_mode"?)`,
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSettings(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func TestDecodeSettingsRefuses(t *testing.T) {
	zone := func(kv ...any) []any {
		z := zoneRaw("b")
		for i := 0; i < len(kv); i += 2 {
			z[kv[i].(string)] = kv[i+1]
		}
		return []any{z}
	}
	tests := map[string]struct {
		raw  map[string]any
		want string // the whole error
	}{
		"a wrong type names the key and what it must be": {
			raw:  managedRaw("verify_cert", "no", "vault_port", true, "cluster_roles", "owner"),
			want: "backend_settings.verify_cert: must be a boolean, not a string\nbackend_settings.vault_port: must be a port number, not a boolean\nbackend_settings.cluster_roles: must be a list of strings, not a string",
		},
		"a fractional size is no integer": {
			raw:  managedRaw("managed_rancher_server_system_volume_size_gb", 80.5),
			want: "backend_settings.managed_rancher_server_system_volume_size_gb: must be an integer, not a number",
		},
		"nothing at all names every required key": {
			raw: map[string]any{},
			want: "backend_settings.backend_url: required (Rancher's URL, e.g. https://rancher.example.com)\n" +
				"backend_settings.username: the Rancher API key's access key (username) and secret key (password) are required\n" +
				"backend_settings.base_image_name: required (the Glance image every VM boots from)\n" +
				"backend_settings.openstack_offering_uuid_list: required: at least one availability zone (uuid, slug, cloud, ...)",
		},
		"managed mode without flavors and sizes names each, never quoting a secret": {
			raw: managedRaw("managed_rancher_server_flavor_name", nil, "managed_rancher_server_data_volume_size_gb", nil,
				"managed_rancher_worker_system_volume_size_gb", 0, "managed_rancher_load_balancer_flavor_name", ""),
			want: "backend_settings.managed_rancher_server_flavor_name: required in managed mode\n" +
				"backend_settings.managed_rancher_worker_system_volume_size_gb: must be a positive number of GB in managed mode, not 0\n" +
				"backend_settings.managed_rancher_load_balancer_flavor_name: required in managed mode\n" +
				"backend_settings.managed_rancher_server_data_volume_size_gb: must be a positive number of GB in managed mode (the servers' /opt/rke2_storage)",
		},
		"an unknown deployment mode": {
			raw:  managedRaw("deployment_mode", "hybrid"),
			want: `backend_settings.deployment_mode: "hybrid" is not "managed" or "self_managed"`,
		},
		"half a private registry": {
			raw:  managedRaw("private_registry_url", "https://registry.example.com"),
			want: "backend_settings.private_registry_url: private_registry_url, private_registry_user and private_registry_password go together: set all three or none\nbackend_settings.private_registry_url: \"https://registry.example.com\" is not a registry host[:port] (no scheme)",
		},
		"vault without token": {
			raw:  managedRaw("vault_host", "vault.example.com"),
			want: "backend_settings.vault_token: required when vault_host is set",
		},
		"argocd kubeconfig without namespace": {
			raw:  managedRaw("argocd_k8s_kubeconfig", "apiVersion: v1\n"),
			want: "backend_settings.argocd_k8s_namespace: argocd_k8s_kubeconfig and argocd_k8s_namespace go together: set both or neither",
		},
		"a cloud-init template file that does not exist": {
			raw:  managedRaw("cloud_init_template", "/nonexistent/node.yaml"),
			want: "backend_settings.cloud_init_template: cannot read the file: open /nonexistent/node.yaml: no such file or directory",
		},
		"Mastermind's flat keycloak keys say where they go": {
			raw:  managedRaw("keycloak_url", "https://kc.example.com"),
			want: "backend_settings.keycloak_url: goes in the keycloak block (backend_settings.keycloak.keycloak_url), with keycloak_enabled: true",
		},
		"both spellings of the Rancher key": {
			raw:  managedRaw("access_key", "token-xyz", "secret_key", "x"),
			want: "backend_settings.access_key: set either username/password or access_key/secret_key (the same Rancher API key), not both",
		},
		"a bad flavors_regex": {
			raw:  managedRaw("flavors_regex", "m1.("),
			want: "backend_settings.flavors_regex: is not a regular expression: error parsing regexp: missing closing ): `m1.(`",
		},
		"a zone given as a bare UUID, as in Mastermind's plugin_options": {
			raw:  managedRaw("openstack_offering_uuid_list", []any{zoneUUID["a"]}),
			want: "backend_settings.openstack_offering_uuid_list[0]: must be a mapping describing the availability zone (uuid, slug, cloud, ...); a bare offering UUID, as in Mastermind's plugin_options, does not say how to reach it",
		},
		"zones with the same uuid, slug and overlapping CIDRs": {
			raw: managedRaw("openstack_offering_uuid_list", []any{zoneRaw("a"),
				func() map[string]any {
					z := zoneRaw("a")
					z["cloud"], z["subnet_cidr"] = "site-a", "192.168.0.0/16"
					return z
				}()}),
			want: "backend_settings.openstack_offering_uuid_list[1].uuid: 11111111-1111-4111-8111-111111111111 is also the uuid of openstack_offering_uuid_list[0]\n" +
				"backend_settings.openstack_offering_uuid_list[1].slug: \"az-a\" is also the slug of openstack_offering_uuid_list[0]: tenant names would collide\n" +
				"backend_settings.openstack_offering_uuid_list[1].subnet_cidr: 192.168.0.0/16 overlaps 192.168.42.0/24 of openstack_offering_uuid_list[0]: the cluster's nodes span the zones, so their addresses must differ",
		},
		"a zone's bad values each name their key": {
			raw: managedRaw("openstack_offering_uuid_list", zone("uuid", "not-a-uuid", "slug", "AZ B", "subnet_cidr", "10.0.0.0/25",
				"dns_nameservers", []any{"dns.example.com"}, "storage_mode", "thin", "external_network_id", "public")),
			want: `backend_settings.openstack_offering_uuid_list[0].uuid: "not-a-uuid" is not a UUID` + "\n" +
				`backend_settings.openstack_offering_uuid_list[0].slug: "AZ B" is not a slug (lower-case letters, digits, '-' and '_', at most 50)` + "\n" +
				`backend_settings.openstack_offering_uuid_list[0].external_network_id: "public" is not a Neutron network id (a UUID)` + "\n" +
				`backend_settings.openstack_offering_uuid_list[0].subnet_cidr: 10.0.0.0/25 is smaller than a /24: the load balancer takes .10 and nodes .11-.200` + "\n" +
				`backend_settings.openstack_offering_uuid_list[0].dns_nameservers[0]: "dns.example.com" is not an IP address` + "\n" +
				`backend_settings.openstack_offering_uuid_list[0].storage_mode: "thin" is not "fixed" or "dynamic"`,
		},
		"a CIDR with host bits": {
			raw:  managedRaw("openstack_offering_uuid_list", zone("subnet_cidr", "10.1.2.3/24")),
			want: "backend_settings.openstack_offering_uuid_list[0].subnet_cidr: 10.1.2.3/24 has host bits set (did you mean 10.1.2.0/24?)",
		},
		"a zone without cloud": {
			raw:  managedRaw("openstack_offering_uuid_list", zone("cloud", nil)),
			want: "backend_settings.openstack_offering_uuid_list[0].cloud: required: a clouds.yaml entry name, or the entry inline (auth: {auth_url, ...})",
		},
		"an inline cloud without credentials or project": {
			raw: managedRaw("openstack_offering_uuid_list", zone("cloud", map[string]any{
				"auth": map[string]any{"auth_url": "keystone:5000"}, "interface": "private"})),
			want: `backend_settings.openstack_offering_uuid_list[0].cloud.auth.auth_url: "keystone:5000" is not an http(s) URL without credentials` + "\n" +
				"backend_settings.openstack_offering_uuid_list[0].cloud.auth.username: required: username or user_id (or an application credential)\n" +
				"backend_settings.openstack_offering_uuid_list[0].cloud.auth.password: required with username/password authentication\n" +
				"backend_settings.openstack_offering_uuid_list[0].cloud.auth.project_name: required: the project (project_name or project_id) the token is scoped to\n" +
				`backend_settings.openstack_offering_uuid_list[0].cloud.interface: "private" is not public, internal or admin`,
		},
		"an application credential by name without its user": {
			raw: managedRaw("openstack_offering_uuid_list", zone("cloud", map[string]any{"auth": map[string]any{
				"auth_url": "https://keystone.example.com/v3", "application_credential_name": "sitebus", "application_credential_secret": "x"}})),
			want: "backend_settings.openstack_offering_uuid_list[0].cloud.auth.username: an application credential given by name needs its user (username or user_id)",
		},
		"floating IPs for all nodes need an external network in every zone": {
			raw:  managedRaw("allocate_floating_ip_to_all_nodes", true, "openstack_offering_uuid_list", zone("external_network_id", "")),
			want: "backend_settings.openstack_offering_uuid_list[0].external_network_id: required with allocate_floating_ip_to_all_nodes: the floating IPs come from it",
		},
		"negative maxima": {
			raw:  managedRaw("managed_rancher_tenant_max_ram", -1),
			want: "backend_settings.managed_rancher_tenant_max_ram: -1 is negative (0 or no key is no maximum)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeSettings(tc.raw)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant  %s", err, tc.want)
			}
			var se *config.SettingError
			if !errors.As(err, &se) {
				t.Errorf("%T is no *config.SettingError", err)
			}
			for _, secret := range []string{"s3cret-key", "ac-s3cret", "hvs.x"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("a secret is in the error")
				}
			}
		})
	}
}

// vaultAddr is the settings' Vault address, "" when it has none.
func vaultAddr(s Settings) string {
	a, err := s.Vault.Address()
	if err != nil {
		return ""
	}
	return a
}

// role_mapping is merged over DefaultRoleMapping; "" takes a role's
// access away, and a configured role template without a group is refused,
// since its users would silently be in no group.
func TestRoleMapping(t *testing.T) {
	tests := map[string]struct {
		mapping map[string]any
		roles   []any
		want    map[string]string
		err     string
	}{
		"no role_mapping: admins and managers own, members are members": {
			want: map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-owner", "PROJECT.MEMBER": "cluster-member"},
		},
		"an override and an exclusion are merged over the defaults": {
			mapping: map[string]any{"PROJECT.MANAGER": "cluster-member", "PROJECT.MEMBER": ""},
			want:    map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-member", "PROJECT.MEMBER": ""},
		},
		"a role template outside cluster_roles is refused": {
			mapping: map[string]any{"PROJECT.MEMBER": "projects-view"},
			err:     `backend_settings.role_mapping.PROJECT.MEMBER: "projects-view" is not one of cluster_roles`,
		},
		"a configured role cluster_roles drops is refused": {
			mapping: map[string]any{"PROJECT.MEMBER": "cluster-member"}, roles: []any{"cluster-owner"},
			err: `backend_settings.role_mapping.PROJECT.MEMBER: "cluster-member" is not one of cluster_roles`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw := managedRaw()
			if tc.mapping != nil {
				raw["role_mapping"] = tc.mapping
			}
			if tc.roles != nil {
				raw["cluster_roles"] = tc.roles
			}
			s, err := DecodeSettings(raw)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.RoleMapping) != len(tc.want) {
				t.Fatalf("mapping %v, want %v", s.RoleMapping, tc.want)
			}
			for k, v := range tc.want {
				if got, ok := s.RoleMapping[k]; !ok || got != v {
					t.Errorf("%s → %q, want %q", k, got, v)
				}
			}
		})
	}
}
