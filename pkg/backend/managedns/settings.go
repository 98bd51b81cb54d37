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
}

// ParseSettings decodes backend_settings (as config.Offering holds them),
// fills the defaults and validates the result. Keys it does not know are
// ignored, as the Python plugin ignores them. Every problem is reported,
// each naming its key.
func ParseSettings(raw map[string]any) (Settings, error) {
	s := Settings{KeycloakUseUserID: true}
	d := config.SettingsDecoder{Raw: raw, Prefix: "backend_settings."}
	d.Str("kubeconfig_path", &s.KubeconfigPath)
	d.Str("cr_namespace", &s.CRNamespace)
	d.Str("namespace_prefix", &s.NamespacePrefix)
	d.StrMap("component_quota_mapping", &s.QuotaMapping, true)
	d.StrMap("namespace_labels", &s.NamespaceLabels, false)
	d.StrMap("namespace_annotations", &s.NamespaceAnnotations, false)
	d.Str("default_role", &s.DefaultRole)
	d.StrMap("role_mapping", &s.RoleMapping, false)
	d.Bool("keycloak_enabled", &s.KeycloakEnabled)
	d.Map("keycloak", &s.Keycloak)
	d.Bool("keycloak_use_user_id", &s.KeycloakUseUserID)
	d.Bool("sync_users_to_cr", &s.SyncUsersToCR)
	d.Str("cr_user_identity_field", &s.CRUserIdentityField)
	d.Bool("cr_user_identity_lowercase", &s.CRUserIdentityLowercase)
	if err := d.Err(); err != nil {
		return Settings{}, err
	}
	s = s.withDefaults()
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// withDefaults returns s with unset values defaulted and the mappings
// merged over their defaults (the caller's maps are not changed).
func (s Settings) withDefaults() Settings {
	if s.CRNamespace == "" {
		s.CRNamespace = DefaultCRNamespace
	}
	if s.NamespacePrefix == "" {
		s.NamespacePrefix = DefaultNamespacePrefix
	}
	if s.DefaultRole == "" {
		s.DefaultRole = DefaultRole
	}
	if s.CRUserIdentityField == "" {
		s.CRUserIdentityField = DefaultIdentityField
	}
	qm := DefaultQuotaMapping()
	maps.Copy(qm, s.QuotaMapping)
	s.QuotaMapping = qm
	rm := DefaultRoleMapping()
	maps.Copy(rm, s.RoleMapping)
	s.RoleMapping = rm
	s.KubeconfigPath = expandHome(s.KubeconfigPath)
	return s
}

var (
	rfc1123Label = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	prefixRe     = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)?$`)
)

// Validate checks settings with their defaults filled in (as ParseSettings
// returns them) for values that would make every call fail: a namespace
// prefix no namespace name can start with, or a CR namespace that is not
// a namespace name.
func (s Settings) Validate() error {
	var errs []error
	if len(s.CRNamespace) > maxNameLen || !rfc1123Label.MatchString(s.CRNamespace) {
		errs = append(errs, fmt.Errorf("backend_settings.cr_namespace: %q is not a valid namespace name (RFC 1123 label)", s.CRNamespace))
	}
	if len(s.NamespacePrefix) >= maxNameLen || !prefixRe.MatchString(s.NamespacePrefix) {
		errs = append(errs, fmt.Errorf("backend_settings.namespace_prefix: %q cannot start a namespace name (lowercase alphanumeric or '-', starting with an alphanumeric, under %d characters)", s.NamespacePrefix, maxNameLen))
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
