package managedns

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// Defaults of backend_settings, as in the Python plugin.
const (
	DefaultCRNamespace     = "waldur-system"
	DefaultNamespacePrefix = "waldur-"
	DefaultRole            = "readwrite"
	DefaultIdentityField   = "email"
)

// DefaultQuotaMapping maps a component type to its quota field; the
// configured component_quota_mapping is merged over it.
func DefaultQuotaMapping() map[string]string {
	return map[string]string{"cpu": "cpu", "ram": "memory", "storage": "storage", "gpu": "gpu"}
}

// DefaultRoleMapping maps a Waldur role to a namespace role; the configured
// role_mapping is merged over it.
func DefaultRoleMapping() map[string]string {
	return map[string]string{"manager": "admin", "admin": "admin", "member": "readwrite"}
}

// Settings are the backend_settings of a k8s-ut-namespace offering.
type Settings struct {
	// KubeconfigPath is empty for the in-cluster configuration.
	KubeconfigPath string
	// CRNamespace is where the ManagedNamespace CRs live.
	CRNamespace string
	// NamespacePrefix is put before the resource slug to name a namespace.
	NamespacePrefix string
	// QuotaMapping maps component types to quota fields, merged over
	// DefaultQuotaMapping. An empty field (null in YAML) unmaps a type.
	QuotaMapping map[string]string
	// NamespaceLabels and NamespaceAnnotations go into spec.labels and
	// spec.annotations, for the operator to put on the namespace.
	NamespaceLabels      map[string]string
	NamespaceAnnotations map[string]string

	// Keycloak and user-sync settings: decoded and type-checked so that
	// Python configurations load, but unused by this package.
	DefaultRole             string
	RoleMapping             map[string]string
	KeycloakEnabled         bool
	Keycloak                map[string]any
	KeycloakUseUserID       bool
	SyncUsersToCR           bool
	CRUserIdentityField     string
	CRUserIdentityLowercase bool

	// Warnings are the keys ParseSettings did not know and ignored, as the
	// Python plugin ignores them (each a *config.SettingError).
	Warnings []error
}

// DefaultSettings are the settings of an empty backend_settings, as in the
// Python plugin. ParseSettings decodes onto them; build settings in code
// from them too, since New does not fill in zero values.
func DefaultSettings() Settings {
	return Settings{
		CRNamespace:         DefaultCRNamespace,
		NamespacePrefix:     DefaultNamespacePrefix,
		DefaultRole:         DefaultRole,
		CRUserIdentityField: DefaultIdentityField,
		KeycloakUseUserID:   true,
		QuotaMapping:        DefaultQuotaMapping(),
		RoleMapping:         DefaultRoleMapping(),
	}
}

// ParseSettings decodes backend_settings (as config.Offering holds them)
// onto DefaultSettings and validates the result. As the Python plugin's
// settings.get(key, default), only a missing (or null) key takes the
// default: namespace_prefix: "" names namespaces by the slug alone, and
// default_role: "" gives unmapped roles no access. Keys it does not know are
// ignored, as the Python plugin ignores them, and listed in
// Settings.Warnings. Every problem is reported, each a *config.SettingError
// naming its key.
func ParseSettings(raw map[string]any) (Settings, error) {
	s := DefaultSettings()
	var quota, roles map[string]string
	d := config.SettingsDecoder{Raw: raw, Prefix: "backend_settings."}
	d.Str("kubeconfig_path", &s.KubeconfigPath)
	d.Str("cr_namespace", &s.CRNamespace)
	d.Str("namespace_prefix", &s.NamespacePrefix)
	d.StrMap("component_quota_mapping", &quota, true)
	d.StrMap("namespace_labels", &s.NamespaceLabels, false)
	d.StrMap("namespace_annotations", &s.NamespaceAnnotations, false)
	d.Str("default_role", &s.DefaultRole)
	d.StrMap("role_mapping", &roles, false)
	d.Bool("keycloak_enabled", &s.KeycloakEnabled)
	d.Map("keycloak", &s.Keycloak)
	d.Bool("keycloak_use_user_id", &s.KeycloakUseUserID)
	d.Bool("sync_users_to_cr", &s.SyncUsersToCR)
	d.Str("cr_user_identity_field", &s.CRUserIdentityField)
	d.Bool("cr_user_identity_lowercase", &s.CRUserIdentityLowercase)
	// Read by the agent itself for every backend (config.Offering).
	d.Known("periodic_limits")
	if err := d.Err(); err != nil {
		return Settings{}, err
	}
	// The mappings are merged over the defaults, as in the plugin.
	maps.Copy(s.QuotaMapping, quota)
	maps.Copy(s.RoleMapping, roles)
	s.KubeconfigPath = expandHome(s.KubeconfigPath)
	s.Warnings = d.Warnings()
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

var (
	rfc1123Label = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	prefixRe     = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)?$`)
)

// Validate checks settings (as ParseSettings returns them) for values that would make every call fail: a namespace
// prefix no namespace name can start with, or a CR namespace that is not
// a namespace name.
func (s Settings) Validate() error {
	var errs []error
	if len(s.CRNamespace) > maxNameLen || !rfc1123Label.MatchString(s.CRNamespace) {
		errs = append(errs, &config.SettingError{Key: "backend_settings.cr_namespace",
			Msg: fmt.Sprintf("%q is not a valid namespace name (RFC 1123 label)", s.CRNamespace)})
	}
	if len(s.NamespacePrefix) >= maxNameLen || !prefixRe.MatchString(s.NamespacePrefix) {
		errs = append(errs, &config.SettingError{Key: "backend_settings.namespace_prefix",
			Msg: fmt.Sprintf("%q cannot start a namespace name (lowercase alphanumeric or '-', starting with an alphanumeric, under %d characters)", s.NamespacePrefix, maxNameLen)})
	}
	return errors.Join(errs...)
}
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expandHome expands a leading "~/" as the Python kubernetes client does
// for kubeconfig paths.
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
