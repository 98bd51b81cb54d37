package vcluster

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
)

// Type is the backend_type of a vcluster offering.
const Type = "vcluster"

// Drivers that make the virtual cluster: DriverExternal waits for a
// kubeconfig Secret someone else brings, DriverHelm installs the vCluster
// chart shipped in sitebus (driver_helm.go), DriverPlatform writes a
// vCluster Platform (Loft) VirtualClusterInstance (driver_platform.go).
const (
	DriverExternal = "external"
	DriverHelm     = "helm"
	DriverPlatform = "platform"
)

// SupportedDrivers are the drivers sitebus implements.
var SupportedDrivers = []string{DriverExternal, DriverHelm, DriverPlatform}

// Member sources: where the virtual cluster's access in Rancher comes
// from (member_source).
const (
	// MemberSourceWaldurTeam: the resource's Waldur team goes into the
	// cluster's Keycloak role groups c_<uuid hex>_<role>, each bound to
	// the imported cluster with its role template, as for a
	// rancher-cluster resource.
	MemberSourceWaldurTeam = "waldur_team"
	// MemberSourceRancherProject: the users and groups bound to the
	// Rancher project the host namespace is in get bindings on the
	// imported cluster, as Loft's Rancher integration syncs project
	// members.
	MemberSourceRancherProject = "rancher_project"
)

// MemberSources are the member_source values.
var MemberSources = []string{MemberSourceWaldurTeam, MemberSourceRancherProject}

// DefaultRoleMapping is the role_mapping of a member source, which the
// configured one is merged over: for the Waldur team the rancher-cluster
// offering's (project admins and managers own the cluster, members are
// its members); for a Rancher project, its owners own the cluster and
// its members are the cluster's members. A role mapped to "" (or not
// named) gets no binding.
func DefaultRoleMapping(source string) map[string]string {
	if source == MemberSourceRancherProject {
		return map[string]string{"project-owner": "cluster-owner", "project-member": "cluster-member"}
	}
	return map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-owner", "PROJECT.MEMBER": "cluster-member"}
}

// Defaults of backend_settings.
const (
	DefaultSecretKey      = "config"
	DefaultKubeconfigWait = 10 * time.Minute
	DefaultReadyWait      = 15 * time.Minute
	// DefaultPlatformCluster is the name vCluster Platform gives the
	// cluster it is installed in when it connects it.
	DefaultPlatformCluster = "loft-cluster"
)

// Settings are the backend_settings of a vcluster offering.
type Settings struct {
	// HostKubeconfigPath reaches the host cluster; "" is the in-cluster
	// configuration (sitebus running on the host).
	HostKubeconfigPath string
	// HostClusterID is the host cluster's Rancher id (c-m-…, or local):
	// the namespace's Rancher project label names it.
	HostClusterID string
	// RancherProjectID is the Rancher project (p-…) the host namespace is
	// placed in; "" leaves it outside any project.
	RancherProjectID string
	// RancherProjectMap places the host namespaces of one Waldur project
	// or customer (its UUID, as 32 hex digits) in a Rancher project of
	// their own, as Loft maps each of its projects to a Rancher project; a
	// resource's project wins over its customer, and either over
	// RancherProjectID.
	RancherProjectMap map[string]string
	// Driver makes the virtual cluster (see SupportedDrivers).
	Driver string
	// ImportToRancher imports the virtual cluster into Rancher.
	ImportToRancher bool
	// FleetWorkspace is the Rancher fleet workspace of the imported
	// cluster: the namespace of its v1 provisioning cluster, which
	// Rancher copies into the v3 cluster's spec.fleetWorkspaceName
	// (default fleet-default, Rancher's own).
	FleetWorkspace string
	// Rancher's API, for the import: the URL and an API key.
	BackendURL string
	Username   string
	Password   config.Secret
	VerifyCert bool
	// Server is the address sitebus reaches the virtual cluster's API
	// at; "" keeps the server of the kubeconfig Secret.
	Server string
	// SecretKey is the key of the kubeconfig in the Secret vc-<slug>.
	SecretKey string
	// KubeconfigWait bounds the wait for the Secret and for the virtual
	// cluster's API to answer; ReadyWait the wait for Rancher to report
	// the imported cluster ready.
	KubeconfigWait time.Duration
	ReadyWait      time.Duration

	// MemberSource is where access to the imported cluster comes from
	// (MemberSources); the membership service applies it.
	MemberSource string
	// RoleMapping maps a Waldur project role (waldur_team) or a Rancher
	// project role template (rancher_project) to the cluster role
	// template its users get: role_mapping merged over
	// DefaultRoleMapping(MemberSource); "" excludes the role.
	RoleMapping map[string]string
	// KeycloakEnabled is keycloak_enabled: the waldur_team groups live in
	// the offering's Keycloak.
	KeycloakEnabled bool

	// The platform driver's: the vCluster Platform project whose
	// namespace p-<project> holds the VirtualClusterInstances, the
	// VirtualClusterTemplate they are made from, the platform's name of
	// the host cluster, the platform user owning them ("" leaves the
	// owner to the platform) and the platform's API ("" is the host's,
	// the platform installed there).
	PlatformProject        string
	PlatformTemplate       string
	PlatformCluster        string
	PlatformOwner          string
	PlatformKubeconfigPath string

	// Warnings are the keys DecodeSettings did not know (each a
	// *config.SettingError).
	Warnings []error
}

// DefaultSettings are the settings of an empty backend_settings.
func DefaultSettings() Settings {
	return Settings{Driver: DriverExternal, ImportToRancher: true, FleetWorkspace: rancher.FleetNamespace, VerifyCert: true, SecretKey: DefaultSecretKey,
		KubeconfigWait: DefaultKubeconfigWait, ReadyWait: DefaultReadyWait, MemberSource: MemberSourceWaldurTeam,
		PlatformCluster: DefaultPlatformCluster}
}

// DecodeSettings decodes backend_settings onto DefaultSettings and
// validates the result; a value of the wrong type is an error naming its
// key, unknown keys are listed in Warnings. Secrets are never quoted.
func DecodeSettings(raw map[string]any) (Settings, error) {
	s := DefaultSettings()
	var password, kubeWait, readyWait string
	d := config.SettingsDecoder{Raw: raw, Prefix: "backend_settings."}
	d.Str("host_kubeconfig_path", &s.HostKubeconfigPath)
	d.Str("host_cluster_id", &s.HostClusterID)
	d.Str("rancher_project_id", &s.RancherProjectID)
	var projectMap map[string]string
	d.StrMap("rancher_project_map", &projectMap, false)
	d.Str("driver", &s.Driver)
	d.Bool("import_to_rancher", &s.ImportToRancher)
	d.Str("fleet_workspace", &s.FleetWorkspace)
	d.Str("backend_url", &s.BackendURL)
	d.Str("username", &s.Username)
	d.Str("password", &password)
	d.Bool("verify_cert", &s.VerifyCert)
	d.Str("vcluster_server", &s.Server)
	d.Str("kubeconfig_secret_key", &s.SecretKey)
	d.Str("kubeconfig_wait", &kubeWait)
	d.Str("ready_wait", &readyWait)
	d.Str("member_source", &s.MemberSource)
	var mapping map[string]string
	d.StrMap("role_mapping", &mapping, false)
	d.Bool("keycloak_enabled", &s.KeycloakEnabled)
	d.Str("platform_project", &s.PlatformProject)
	d.Str("platform_template", &s.PlatformTemplate)
	d.Str("platform_cluster", &s.PlatformCluster)
	d.Str("platform_owner", &s.PlatformOwner)
	d.Str("platform_kubeconfig_path", &s.PlatformKubeconfigPath)
	// Read by the agent itself for every backend (config.Offering), and by
	// keycloak-sync.
	d.Known("periodic_limits", "keycloak")
	s.Password = config.Secret(password)
	// Keys as 32 lower-case hex digits, the form ProjectIDFor looks up
	// (Waldur writes UUIDs with and without dashes). Two spellings of one
	// UUID would leave the namespace's project to map order: refused.
	// Keys that are no UUID stay as written, for Validate to name.
	for _, k := range slices.Sorted(maps.Keys(projectMap)) {
		key := k
		if events.IsUUID(k) {
			key = events.HexUUID(k)
		}
		if _, dup := s.RancherProjectMap[key]; dup {
			d.Errorf("rancher_project_map."+k, "is the UUID of another key, spelt differently")
			continue
		}
		if s.RancherProjectMap == nil {
			s.RancherProjectMap = map[string]string{}
		}
		s.RancherProjectMap[key] = projectMap[k]
	}
	for _, w := range []struct {
		key, v string
		p      *time.Duration
	}{{"kubeconfig_wait", kubeWait, &s.KubeconfigWait}, {"ready_wait", readyWait, &s.ReadyWait}} {
		if w.v == "" {
			continue
		}
		v, err := time.ParseDuration(w.v)
		if err != nil {
			d.Errorf(w.key, "must be a duration such as 10m, not %q", w.v)
			continue
		}
		*w.p = v
	}
	if err := d.Err(); err != nil {
		return Settings{}, err
	}
	s.Warnings = d.Warnings()
	s.HostKubeconfigPath = expandHome(s.HostKubeconfigPath)
	s.PlatformKubeconfigPath = expandHome(s.PlatformKubeconfigPath)
	// The defaults depend on the source, so they are merged once it is
	// known; Validate checks the merged mapping.
	s.RoleMapping = DefaultRoleMapping(s.MemberSource)
	maps.Copy(s.RoleMapping, mapping)
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// rancherID is a Rancher object id: c-m-xxxx, local, p-xxxx.
var rancherID = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// Validate checks the settings as a whole; every problem names its key.
func (s *Settings) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: "backend_settings." + key, Msg: fmt.Sprintf(format, args...)})
	}
	if !slices.Contains(SupportedDrivers, s.Driver) {
		bad("driver", "%q is not a driver (supported: %s)", s.Driver, strings.Join(SupportedDrivers, ", "))
	}
	// A fleet workspace is a Kubernetes namespace in Rancher's cluster.
	if !rancherID.MatchString(s.FleetWorkspace) || len(s.FleetWorkspace) > 63 {
		bad("fleet_workspace", "%q is not a fleet workspace (a namespace name such as fleet-default)", s.FleetWorkspace)
	}
	if s.Driver == DriverPlatform {
		// Platform names are Kubernetes names: the project's goes into its
		// namespace p-<project>, the others into references.
		for _, f := range []struct{ key, v string }{
			{"platform_project", s.PlatformProject}, {"platform_template", s.PlatformTemplate}, {"platform_cluster", s.PlatformCluster},
		} {
			switch {
			case f.v == "":
				bad(f.key, "is required with driver %s", DriverPlatform)
			case !rancherID.MatchString(f.v) || len(PlatformNamespace(f.v)) > MaxInstanceName:
				bad(f.key, "%q is not a vCluster Platform name (lower-case letters, digits and -)", f.v)
			}
		}
	}
	if s.SecretKey == "" {
		bad("kubeconfig_secret_key", "must not be empty")
	}
	if s.KubeconfigWait <= 0 {
		bad("kubeconfig_wait", "must be positive")
	}
	if s.ReadyWait <= 0 {
		bad("ready_wait", "must be positive")
	}
	if s.HostClusterID != "" && !rancherID.MatchString(s.HostClusterID) {
		bad("host_cluster_id", "%q is not a Rancher cluster id (such as c-m-abcd1234 or local)", s.HostClusterID)
	}
	projectID := func(key, p string) {
		if _, after, ok := strings.Cut(p, ":"); ok {
			p = after // c-m-xxx:p-yyy, as Rancher's UI shows it
		}
		if !rancherID.MatchString(p) {
			bad(key, "%q is not a Rancher project id (such as p-abcd1)", p)
		}
	}
	if s.RancherProjectID != "" {
		projectID("rancher_project_id", s.RancherProjectID)
	}
	for _, k := range slices.Sorted(maps.Keys(s.RancherProjectMap)) {
		if !events.IsUUID(k) {
			bad("rancher_project_map."+k, "%q is not a Waldur project or customer UUID", k)
		}
		projectID("rancher_project_map."+k, s.RancherProjectMap[k])
	}
	if (s.RancherProjectID != "" || len(s.RancherProjectMap) > 0) && s.HostClusterID == "" {
		bad("host_cluster_id", "is required with rancher_project_id or rancher_project_map (the namespace's project label names both)")
	}
	switch s.MemberSource {
	case MemberSourceWaldurTeam:
	case MemberSourceRancherProject:
		if s.RancherProjectID == "" && len(s.RancherProjectMap) == 0 {
			bad("member_source", "%s needs rancher_project_id or rancher_project_map: the project's bindings are the members", MemberSourceRancherProject)
		}
	default:
		bad("member_source", "%q is not a member source (%s)", s.MemberSource, strings.Join(MemberSources, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(s.RoleMapping)) {
		// Role template ids go into Rancher's bindings and (waldur_team)
		// into Keycloak group names c_<uuid hex>_<role>.
		if r := s.RoleMapping[k]; r != "" && !rancherID.MatchString(r) {
			bad("role_mapping."+k, "%q is not a Rancher cluster role template id such as cluster-member (\"\" excludes the role)", r)
		}
		if s.MemberSource == MemberSourceRancherProject && !rancherID.MatchString(k) {
			bad("role_mapping."+k, "%q is not a Rancher project role template id such as project-member", k)
		}
	}
	if s.Server != "" {
		if u, err := url.Parse(s.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			bad("vcluster_server", "%q must be an https URL (https://host:port)", s.Server)
		}
	}
	if s.ImportToRancher {
		if s.HostClusterID == "" {
			bad("host_cluster_id", "is required when import_to_rancher is true")
		}
		if u, err := url.Parse(s.BackendURL); s.BackendURL == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			bad("backend_url", "must be the Rancher URL (https://rancher.example.com) when import_to_rancher is true")
		}
		if s.Username == "" || s.Password == "" {
			bad("username", "username and password (a Rancher API key) are required when import_to_rancher is true")
		}
	}
	return errors.Join(errs...)
}

// ClusterRoles are the cluster role templates role_mapping grants, each
// once: Rancher's cluster-owner, then cluster-member, then the others in
// name order. A Waldur user with two project roles joins the group of the
// first (waldur_team).
func (s *Settings) ClusterRoles() []string {
	seen := map[string]bool{}
	for _, r := range s.RoleMapping {
		if r != "" {
			seen[r] = true
		}
	}
	out := slices.Sorted(maps.Keys(seen))
	rank := func(r string) int {
		switch r {
		case "cluster-owner":
			return 0
		case "cluster-member":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// ProjectID is the namespace's Rancher project label value,
// <host cluster>:<project>, or "" without a project.
func (s *Settings) ProjectID() string {
	return s.qualified(s.RancherProjectID)
}

// ProjectIDFor is ProjectID for a resource of the Waldur project and
// customer given: rancher_project_map's entry for the project, else for
// the customer, else rancher_project_id.
func (s *Settings) ProjectIDFor(projectUUID, customerUUID string) string {
	for _, id := range []string{projectUUID, customerUUID} {
		if p, ok := s.RancherProjectMap[events.HexUUID(id)]; ok && id != "" {
			return s.qualified(p)
		}
	}
	return s.ProjectID()
}

// qualified is project p as <host cluster>:<project>.
func (s *Settings) qualified(p string) string {
	if p == "" {
		return ""
	}
	if strings.Contains(p, ":") {
		return p
	}
	return s.HostClusterID + ":" + p
}

// expandHome expands a leading ~/ in a kubeconfig path, as a shell would.
func expandHome(p string) string {
	if !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[2:])
}
