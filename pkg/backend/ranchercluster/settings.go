package ranchercluster

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/vault"
)

// Type is the backend_type of the offering.
const Type = "rancher-cluster"

// Deployment modes (Mastermind's marketplace_rancher/const.py).
const (
	ModeManaged     = "managed"
	ModeSelfManaged = "self_managed"
)

// Defaults of backend_settings, as Mastermind's.
const (
	DefaultK8sVersion     = "v1.31.7+rke2r1"
	DefaultDeploymentMode = ModeSelfManaged
	// DefaultNodeDiskDriver names the data disks in cloud-init
	// (/dev/sdb, /dev/sdc, ...), Mastermind's node_disk_driver default.
	DefaultNodeDiskDriver = "sd"
	// DefaultSubnetCIDR is Waldur's tenant subnet default; see
	// AZ.SubnetCIDR for how several zones get distinct ones.
	DefaultSubnetCIDR = "192.168.42.0/24"
)

// DefaultClusterRoles are the Rancher cluster role templates that get a
// Keycloak child group: Mastermind's user sync maps customer owners and
// project managers to cluster-owner and project admins to cluster-member.
var DefaultClusterRoles = []string{"cluster-owner", "cluster-member"}

// DefaultRoleMapping maps a Waldur project role to the cluster role
// template whose group its members join: managers and admins own the
// cluster, members are its members. role_mapping is merged over it; a role
// mapped to "" (or not named) gets no access to the cluster.
func DefaultRoleMapping() map[string]string {
	return map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-owner", "PROJECT.MEMBER": "cluster-member"}
}

// NodeProfile is what the offering fixes for one kind of VM
// (managed_rancher_<kind>_*): flavor and volumes, sizes in GB.
type NodeProfile struct {
	FlavorName           string `json:"flavor_name,omitempty"`
	SystemVolumeSizeGB   int    `json:"system_volume_size_gb,omitempty"`
	SystemVolumeTypeName string `json:"system_volume_type_name,omitempty"`
	DataVolumeSizeGB     int    `json:"data_volume_size_gb,omitempty"`
	DataVolumeTypeName   string `json:"data_volume_type_name,omitempty"`
}

// TenantMax bounds what one cluster may take over all its tenants
// (managed_rancher_tenant_max_*); 0 is no bound, as Mastermind skips a
// falsy maximum. RAM and disk are in GB.
type TenantMax struct {
	CPU    int
	RAMGB  int
	DiskGB int
}

// Settings are the backend_settings of a rancher-cluster offering: what
// Mastermind keeps in the Rancher service settings, the offering's
// plugin_options and secret_options, in one mapping, under the same key
// names, plus the OpenStack side Mastermind reaches through its own
// OpenStack offerings (OpenStackOfferings).
type Settings struct {
	// BackendURL is Rancher's base URL; Username and Password are the API
	// key's access and secret key (Mastermind's username/password;
	// access_key/secret_key are accepted for them).
	BackendURL string
	Username   string
	Password   config.Secret
	VerifyCert bool

	BaseImageName string
	K8sVersion    string
	// CloudInitTemplate is the nodes' cloud-init template; "" is the
	// built-in one. CloudInitTemplatePath is the file it was read from,
	// when cloud_init_template named one.
	CloudInitTemplate     string
	CloudInitTemplatePath string
	NodeDiskDriver        string

	PrivateRegistryURL      string
	PrivateRegistryUser     string
	PrivateRegistryPassword config.Secret

	AllocateFloatingIPToAllNodes bool

	// Vault hands each node its registration token (pkg/vault's keys,
	// decoded and validated by pkg/vault).
	Vault vault.Settings

	// KeycloakEnabled turns on the cluster's Keycloak groups; Keycloak is
	// the parsed keycloak block then (the same block every backend reads).
	KeycloakEnabled bool
	Keycloak        *keycloak.Config
	// ClusterRoles are the role templates that get a child group,
	// strongest first (a user with two project roles joins the first).
	ClusterRoles []string
	// RoleMapping maps Waldur project roles to ClusterRoles: the membership
	// service puts each resource's team into its cluster's groups by it.
	RoleMapping map[string]string
	// ConfiguredRoleMapping is role_mapping as configured: only its roles
	// must name one of ClusterRoles (a default role whose template
	// cluster_roles leaves out gets no group, like any unnamed role).
	ConfiguredRoleMapping map[string]string

	// ArgoCDKubeconfig (content: it holds a credential) and
	// ArgoCDNamespace say where the cluster's ArgoCD Secret goes; ""
	// leaves ArgoCD out.
	ArgoCDKubeconfig     config.Secret
	ArgoCDKubeconfigPath string
	ArgoCDNamespace      string

	DeploymentMode string
	ReadOnlyMode   bool
	// FlavorsRegex, when set, limits the flavors an order may choose.
	FlavorsRegex *regexp.Regexp

	Server, Worker, LoadBalancer      NodeProfile
	LoadBalancerCloudInitTemplate     string
	LoadBalancerCloudInitTemplatePath string
	TenantMax                         TenantMax

	// AdminAllowedCIDRs are the sources the k8s_admin group opens SSH and
	// the Kubernetes API to (default anywhere, as Mastermind's intent).
	AdminAllowedCIDRs []string

	// OpenStackOfferings are the availability zones orders choose from
	// (openstack_offering_uuid_list), in the configured order.
	OpenStackOfferings []AZ
	// CloudsYAML is the clouds.yaml that string cloud entries name; ""
	// is gophercloud's usual search (OS_CLIENT_CONFIG_FILE, ./, ~/.config/openstack, /etc/openstack).
	CloudsYAML string

	// Warnings are the keys DecodeSettings did not know and ignored (each
	// a *config.SettingError).
	Warnings []error
}

// DefaultSettings are the settings of an empty backend_settings.
func DefaultSettings() Settings {
	return Settings{
		VerifyCert:        true,
		K8sVersion:        DefaultK8sVersion,
		NodeDiskDriver:    DefaultNodeDiskDriver,
		Vault:             vault.DefaultSettings(),
		ClusterRoles:      DefaultClusterRoles,
		RoleMapping:       DefaultRoleMapping(),
		DeploymentMode:    DefaultDeploymentMode,
		AdminAllowedCIDRs: []string{"0.0.0.0/0"},
	}
}

// Managed reports whether orders build the whole infrastructure.
func (s *Settings) Managed() bool { return s.DeploymentMode == ModeManaged }

// Offering returns the availability zone with the given UUID (any
// spelling Python's uuid.UUID accepts).
func (s *Settings) Offering(uuid string) (AZ, bool) {
	h := hexUUID(uuid)
	for _, az := range s.OpenStackOfferings {
		if h != "" && hexUUID(az.UUID) == h {
			return az, true
		}
	}
	return AZ{}, false
}

const settingsPrefix = "backend_settings."

// DecodeSettings decodes backend_settings onto DefaultSettings and
// validates the result, as the other backends do: only a missing (or
// null) key takes its default, so "" / 0 / false / [] are kept (and
// refused when they cannot work); a wrongly typed value is an error
// naming its key; unknown keys are warnings. Every problem is reported at
// once, each a *config.SettingError; secrets are never quoted.
func DecodeSettings(raw map[string]any) (Settings, error) {
	s := DefaultSettings()
	d := config.SettingsDecoder{Raw: raw, Prefix: settingsPrefix}
	var password, accessKey, secretKey, registryPassword string
	var kc map[string]any

	d.Str("backend_url", &s.BackendURL)
	d.Str("username", &s.Username)
	d.Str("password", &password)
	d.Str("access_key", &accessKey)
	d.Str("secret_key", &secretKey)
	d.Bool("verify_cert", &s.VerifyCert)
	d.Str("base_image_name", &s.BaseImageName)
	d.Str("k8s_version", &s.K8sVersion)
	var cloudInit, lbCloudInit, argoKubeconfig string
	d.Str("cloud_init_template", &cloudInit)
	d.Str("node_disk_driver", &s.NodeDiskDriver)
	d.Str("private_registry_url", &s.PrivateRegistryURL)
	d.Str("private_registry_user", &s.PrivateRegistryUser)
	d.Str("private_registry_password", &registryPassword)
	d.Bool("allocate_floating_ip_to_all_nodes", &s.AllocateFloatingIPToAllNodes)
	s.Vault = vault.Decode(&d)
	d.Bool("keycloak_enabled", &s.KeycloakEnabled)
	d.Map("keycloak", &kc)
	settingStrList(&d, "cluster_roles", &s.ClusterRoles)
	d.StrMap("role_mapping", &s.ConfiguredRoleMapping, false)
	maps.Copy(s.RoleMapping, s.ConfiguredRoleMapping)
	d.Str("argocd_k8s_kubeconfig", &argoKubeconfig)
	d.Str("argocd_k8s_namespace", &s.ArgoCDNamespace)
	d.Str("deployment_mode", &s.DeploymentMode)
	d.Bool("read_only_mode", &s.ReadOnlyMode)
	var flavorsRegex string
	d.Str("flavors_regex", &flavorsRegex)
	profile(&d, "server", &s.Server, true)
	profile(&d, "worker", &s.Worker, false)
	profile(&d, "load_balancer", &s.LoadBalancer, true)
	d.Str("managed_rancher_load_balancer_cloud_init_template", &lbCloudInit)
	settingInt(&d, "managed_rancher_tenant_max_cpu", &s.TenantMax.CPU)
	settingInt(&d, "managed_rancher_tenant_max_ram", &s.TenantMax.RAMGB)
	settingInt(&d, "managed_rancher_tenant_max_disk", &s.TenantMax.DiskGB)
	settingStrList(&d, "admin_allowed_cidrs", &s.AdminAllowedCIDRs)
	d.Str("clouds_yaml", &s.CloudsYAML)
	var sub nested
	s.OpenStackOfferings = decodeOfferings(&d, &sub, d.Value("openstack_offering_uuid_list"))
	// Read by the agent itself for every backend (config.Offering).
	d.Known("periodic_limits")

	// Mastermind's flat Keycloak options: sitebus reads the keycloak block
	// (as every backend does, and keycloak-sync with them), so say where
	// they go rather than ignore them.
	for _, k := range []string{"keycloak_url", "keycloak_realm", "keycloak_user_realm", "keycloak_username",
		"keycloak_password", "keycloak_sync_frequency", "keycloak_ssl_verify"} {
		if _, ok := raw[k]; ok {
			d.Errorf(k, "goes in the keycloak block (backend_settings.keycloak.%s), with keycloak_enabled: true", k)
		}
	}

	s.Password = config.Secret(password)
	s.PrivateRegistryPassword = config.Secret(registryPassword)
	if accessKey != "" || secretKey != "" {
		if s.Username != "" || password != "" {
			d.Errorf("access_key", "set either username/password or access_key/secret_key (the same Rancher API key), not both")
		}
		s.Username, s.Password = accessKey, config.Secret(secretKey)
	}
	s.CloudInitTemplate, s.CloudInitTemplatePath = inlineOrFile(&d, "cloud_init_template", cloudInit)
	s.LoadBalancerCloudInitTemplate, s.LoadBalancerCloudInitTemplatePath =
		inlineOrFile(&d, "managed_rancher_load_balancer_cloud_init_template", lbCloudInit)
	kubeconfig, kubeconfigPath := inlineOrFile(&d, "argocd_k8s_kubeconfig", argoKubeconfig)
	s.ArgoCDKubeconfig, s.ArgoCDKubeconfigPath = config.Secret(kubeconfig), kubeconfigPath
	if flavorsRegex != "" {
		re, err := regexp.Compile(flavorsRegex)
		if err != nil {
			d.Errorf("flavors_regex", "is not a regular expression: %v", err)
		} else {
			s.FlavorsRegex = re
		}
	}

	errs := append([]error{d.Err()}, sub.errs...)
	if s.KeycloakEnabled && d.Err() == nil {
		c, err := keycloak.ParseSettings(kc)
		errs = append(errs, err)
		if err == nil {
			s.Keycloak = &c
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	s.Warnings = append(d.Warnings(), sub.warns...)
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// profile reads managed_rancher_<kind>_*; the worker's flavor and data
// volume come from the order, so it has only the system volume.
func profile(d *config.SettingsDecoder, kind string, p *NodeProfile, full bool) {
	k := "managed_rancher_" + kind + "_"
	settingInt(d, k+"system_volume_size_gb", &p.SystemVolumeSizeGB)
	d.Str(k+"system_volume_type_name", &p.SystemVolumeTypeName)
	if !full {
		return
	}
	d.Str(k+"flavor_name", &p.FlavorName)
	settingInt(d, k+"data_volume_size_gb", &p.DataVolumeSizeGB)
	d.Str(k+"data_volume_type_name", &p.DataVolumeTypeName)
}

// inlineOrFile reads a setting that holds either a document or the
// absolute path of a file holding it: one line starting with "/" is a
// path (no cloud-init or kubeconfig is that), anything else the document.
func inlineOrFile(d *config.SettingsDecoder, key, v string) (content, path string) {
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, "\n\r") {
		return v, ""
	}
	b, err := os.ReadFile(v)
	if err != nil {
		d.Errorf(key, "cannot read the file: %v", err)
		return "", v
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		d.Errorf(key, "the file %s is empty", v)
	}
	return string(b), v
}

var (
	// k8sVersionRe: RKE2 versions as Rancher lists them (v1.31.7+rke2r1).
	k8sVersionRe = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(\+rke2r[0-9]+)?$`)
	// registryRe: a registry host[:port][/path], as containerd's
	// registries.yaml keys it; no scheme, no spaces.
	registryRe = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._/-]*)?$`)
	// roleTemplateRe: Rancher role template ids.
	roleTemplateRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	// diskDriverRe: the letters before the drive letter (sd, vd, xvd).
	diskDriverRe = regexp.MustCompile(`^[a-z]{1,4}$`)
)

// Validate checks settings for values that would make every order fail,
// and returns every problem at once, each naming its key.
func (s *Settings) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: settingsPrefix + key, Msg: fmt.Sprintf(format, args...)})
	}
	if u, err := url.Parse(s.BackendURL); s.BackendURL == "" {
		bad("backend_url", "required (Rancher's URL, e.g. https://rancher.example.com)")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		bad("backend_url", "%q is not an http(s) URL without credentials, query or fragment", s.BackendURL)
	}
	if s.Username == "" || s.Password == "" {
		bad("username", "the Rancher API key's access key (username) and secret key (password) are required")
	}
	if s.BaseImageName == "" {
		bad("base_image_name", "required (the Glance image every VM boots from)")
	} else if err := checkOpenStackName(s.BaseImageName); err != nil {
		bad("base_image_name", "%v", err)
	}
	if !k8sVersionRe.MatchString(s.K8sVersion) {
		bad("k8s_version", "%q is not an RKE2 version (e.g. %s)", s.K8sVersion, DefaultK8sVersion)
	}
	if !diskDriverRe.MatchString(s.NodeDiskDriver) {
		bad("node_disk_driver", "%q is not a disk device prefix (sd, vd, xvd)", s.NodeDiskDriver)
	}
	set := 0
	for _, v := range []string{s.PrivateRegistryURL, s.PrivateRegistryUser, string(s.PrivateRegistryPassword)} {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		// Mastermind silently leaves the registry out unless all three are
		// set; a half-configured registry is a mistake to show.
		bad("private_registry_url", "private_registry_url, private_registry_user and private_registry_password go together: set all three or none")
	}
	if s.PrivateRegistryURL != "" && !registryRe.MatchString(s.PrivateRegistryURL) {
		bad("private_registry_url", "%q is not a registry host[:port] (no scheme)", s.PrivateRegistryURL)
	}
	if err := s.Vault.Validate(settingsPrefix); err != nil {
		errs = append(errs, err)
	}
	if s.KeycloakEnabled && s.Keycloak == nil {
		bad("keycloak", "keycloak_enabled needs the keycloak settings")
	}
	for i, r := range s.ClusterRoles {
		if !roleTemplateRe.MatchString(r) {
			bad(fmt.Sprintf("cluster_roles[%d]", i), "%q is not a Rancher role template id", r)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.ConfiguredRoleMapping)) {
		// A role template with no group would put its users nowhere
		// without a word; "" says so on purpose.
		if r := s.ConfiguredRoleMapping[k]; r != "" && !slices.Contains(s.ClusterRoles, r) {
			bad("role_mapping."+k, "%q is not one of cluster_roles %v (\"\" gives the role no access)", r, s.ClusterRoles)
		}
	}
	if (s.ArgoCDKubeconfig != "") != (s.ArgoCDNamespace != "") {
		// Mastermind raises only once a cluster is built; refuse it here.
		bad("argocd_k8s_namespace", "argocd_k8s_kubeconfig and argocd_k8s_namespace go together: set both or neither")
	}
	switch s.DeploymentMode {
	case ModeManaged:
		s.validateManaged(bad)
	case ModeSelfManaged:
	default:
		bad("deployment_mode", "%q is not %q or %q", s.DeploymentMode, ModeManaged, ModeSelfManaged)
	}
	for _, m := range []struct {
		key string
		v   int
	}{{"managed_rancher_tenant_max_cpu", s.TenantMax.CPU}, {"managed_rancher_tenant_max_ram", s.TenantMax.RAMGB},
		{"managed_rancher_tenant_max_disk", s.TenantMax.DiskGB}} {
		if m.v < 0 {
			bad(m.key, "%d is negative (0 or no key is no maximum)", m.v)
		}
	}
	for i, c := range s.AdminAllowedCIDRs {
		if _, n, err := net.ParseCIDR(c); err != nil || n.IP.To4() == nil {
			bad(fmt.Sprintf("admin_allowed_cidrs[%d]", i), "%q is not an IPv4 CIDR", c)
		}
	}
	errs = append(errs, validateOfferings(s.OpenStackOfferings)...)
	if s.AllocateFloatingIPToAllNodes && s.Managed() {
		for i, az := range s.OpenStackOfferings {
			if az.ExternalNetworkID == "" {
				bad(fmt.Sprintf("openstack_offering_uuid_list[%d].external_network_id", i),
					"required with allocate_floating_ip_to_all_nodes: the floating IPs come from it")
			}
		}
	}
	if len(s.OpenStackOfferings) == 0 {
		bad("openstack_offering_uuid_list", "required: at least one availability zone (uuid, slug, cloud, ...)")
	}
	return errors.Join(errs...)
}

// validateManaged checks what managed mode builds every VM from; Mastermind
// reads these keys with plugin_options[key] and fails mid-order without them.
func (s *Settings) validateManaged(bad func(key, format string, args ...any)) {
	for _, p := range []struct {
		kind string
		np   NodeProfile
		full bool
	}{{"server", s.Server, true}, {"worker", s.Worker, false}, {"load_balancer", s.LoadBalancer, true}} {
		k := "managed_rancher_" + p.kind + "_"
		if p.np.SystemVolumeSizeGB <= 0 {
			bad(k+"system_volume_size_gb", "must be a positive number of GB in managed mode, not %d", p.np.SystemVolumeSizeGB)
		}
		if p.full && p.np.FlavorName == "" {
			bad(k+"flavor_name", "required in managed mode")
		}
		if p.np.DataVolumeSizeGB < 0 {
			bad(k+"data_volume_size_gb", "%d is negative", p.np.DataVolumeSizeGB)
		}
		for _, n := range [][2]string{{"flavor_name", p.np.FlavorName},
			{"system_volume_type_name", p.np.SystemVolumeTypeName}, {"data_volume_type_name", p.np.DataVolumeTypeName}} {
			if n[1] != "" {
				if err := checkOpenStackName(n[1]); err != nil {
					bad(k+n[0], "%v", err)
				}
			}
		}
	}
	// The servers' data volume is /opt/rke2_storage, where RKE2 keeps etcd.
	if s.Server.DataVolumeSizeGB == 0 {
		bad("managed_rancher_server_data_volume_size_gb", "must be a positive number of GB in managed mode (the servers' /opt/rke2_storage)")
	}
}
