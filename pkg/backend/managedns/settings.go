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
	d := settingsDecoder{raw: raw}
	d.str("kubeconfig_path", &s.KubeconfigPath)
	d.str("cr_namespace", &s.CRNamespace)
	d.str("namespace_prefix", &s.NamespacePrefix)
	d.strMap("component_quota_mapping", &s.QuotaMapping, true)
	d.strMap("namespace_labels", &s.NamespaceLabels, false)
	d.strMap("namespace_annotations", &s.NamespaceAnnotations, false)
	d.str("default_role", &s.DefaultRole)
	d.strMap("role_mapping", &s.RoleMapping, false)
	d.boolean("keycloak_enabled", &s.KeycloakEnabled)
	d.anyMap("keycloak", &s.Keycloak)
	d.boolean("keycloak_use_user_id", &s.KeycloakUseUserID)
	d.boolean("sync_users_to_cr", &s.SyncUsersToCR)
	d.str("cr_user_identity_field", &s.CRUserIdentityField)
	d.boolean("cr_user_identity_lowercase", &s.CRUserIdentityLowercase)
	if len(d.errs) > 0 {
		return Settings{}, errors.Join(d.errs...)
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

// settingsDecoder type-checks backend_settings values, collecting one
// error per bad key.
type settingsDecoder struct {
	raw  map[string]any
	errs []error
}

func (d *settingsDecoder) bad(key string, want string, v any) {
	d.errs = append(d.errs, fmt.Errorf("backend_settings.%s: must be %s, not %s", key, want, typeName(v)))
}

func (d *settingsDecoder) str(key string, p *string) {
	switch v := d.raw[key].(type) {
	case nil:
	case string:
		*p = v
	default:
		d.bad(key, "a string", v)
	}
}

func (d *settingsDecoder) boolean(key string, p *bool) {
	switch v := d.raw[key].(type) {
	case nil:
	case bool:
		*p = v
	default:
		d.bad(key, "a boolean", v)
	}
}

func (d *settingsDecoder) anyMap(key string, p *map[string]any) {
	switch v := d.raw[key].(type) {
	case nil:
	case map[string]any:
		*p = v
	default:
		d.bad(key, "a mapping", v)
	}
}

// strMap decodes a mapping of strings; with nullable, a null value is kept
// as "" (component_quota_mapping uses it to unmap a default type).
func (d *settingsDecoder) strMap(key string, p *map[string]string, nullable bool) {
	var m map[string]any
	switch v := d.raw[key].(type) {
	case nil:
		return
	case map[string]any:
		m = v
	default:
		d.bad(key, "a mapping", v)
		return
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		switch v := m[k].(type) {
		case string:
			out[k] = v
		case nil:
			if nullable {
				out[k] = ""
				continue
			}
			d.bad(key+"."+k, "a string", v)
		default:
			d.bad(key+"."+k, "a string", v)
		}
	}
	*p = out
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
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
