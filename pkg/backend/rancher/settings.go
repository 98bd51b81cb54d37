package rancher

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

// Defaults of backend_settings, as in the Python Rancher plugin (waldur-site-agent-rancher).
const (
	DefaultBackendURL    = "https://localhost"
	DefaultProjectPrefix = "waldur-"
	DefaultRole          = "workloads-manage"
)

// Settings are the backend_settings of a rancher offering.
type Settings struct {
	// BackendURL is Rancher's base URL; the API is BackendURL + "/v3".
	BackendURL string
	// Username and Password are the Rancher API key's access and secret
	// keys (HTTP basic auth), named as in waldur-mastermind.
	Username string
	Password config.Secret
	// VerifyCert verifies Rancher's TLS certificate.
	VerifyCert bool
	// ClusterID is the Rancher cluster projects are made in (c-xxxxx).
	ClusterID string
	// ProjectPrefix is put before the resource slug to name the project
	// and its namespace.
	ProjectPrefix string
	// DefaultRole is the role template the project's Keycloak group is
	// bound with.
	DefaultRole string
	// KeycloakEnabled turns on the Keycloak groups and their bindings;
	// Keycloak holds the parsed keycloak block then (nil otherwise, as the
	// Python plugin reads the block only when enabled).
	KeycloakEnabled bool
	Keycloak        *keycloak.Config
	// KeycloakUseUserID looks Keycloak users up by id, else by username.
	KeycloakUseUserID bool
	// NamespaceLabels are added to the pod-security labels of every
	// namespace sitebus creates (gpu-pool: h100-2x, say).
	NamespaceLabels map[string]string

	// Warnings are the keys DecodeSettings did not know and ignored, as
	// the Python plugin ignores them (each a *config.SettingError). The
	// keycloak block's own are in Keycloak.Warnings.
	Warnings []error
}

// DefaultSettings are the settings of an empty backend_settings, as in the
// Python plugin. DecodeSettings decodes onto them; build settings in code
// from them too, since New does not fill in zero values.
func DefaultSettings() Settings {
	return Settings{
		BackendURL:        DefaultBackendURL,
		VerifyCert:        true,
		ProjectPrefix:     DefaultProjectPrefix,
		DefaultRole:       DefaultRole,
		KeycloakUseUserID: true,
	}
}

// DecodeSettings decodes backend_settings (as config.Offering holds them)
// onto DefaultSettings and validates the result. As the Python plugin's
// settings.get(key, default), only a missing (or null) key takes the
// default: project_prefix: "" names projects by the slug alone, and
// verify_cert: false is kept. A value of the wrong type is an error naming
// its key; keys it does not know are ignored, as Python ignores them, and
// listed in Settings.Warnings. Every problem is reported, each a
// *config.SettingError; the secret key is never quoted.
func DecodeSettings(raw map[string]any) (Settings, error) {
	s := DefaultSettings()
	var password string
	var kc map[string]any
	d := config.SettingsDecoder{Raw: raw, Prefix: "backend_settings."}
	d.Str("backend_url", &s.BackendURL)
	d.Str("username", &s.Username)
	d.Str("password", &password)
	d.Bool("verify_cert", &s.VerifyCert)
	d.Str("cluster_id", &s.ClusterID)
	d.Str("project_prefix", &s.ProjectPrefix)
	d.Str("default_role", &s.DefaultRole)
	d.Bool("keycloak_enabled", &s.KeycloakEnabled)
	d.Map("keycloak", &kc)
	d.Bool("keycloak_use_user_id", &s.KeycloakUseUserID)
	d.StrMap("namespace_labels", &s.NamespaceLabels, false)
	// Read by the agent itself for every backend (config.Offering).
	d.Known("periodic_limits")
	errs := []error{d.Err()}
	s.Password = config.Secret(password)
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
	s.Warnings = d.Warnings()
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

var (
	// prefixRe: a project prefix must be able to start an RFC 1123 label.
	prefixRe = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)?$`)
	// clusterIDRe: Rancher cluster ids (c-xxxxx, c-m-xxxxxxxx, local). No
	// ':' — that would be a project id, which the README warns about.
	clusterIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// roleRe: role template ids go into a query string unencoded (as
	// Python sends them), so only characters that need no encoding.
	roleRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Validate checks settings for values that would make every call fail.
// Messages name the key an operator has to fix.
func (s Settings) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: "backend_settings." + key, Msg: fmt.Sprintf(format, args...)})
	}
	if !validBackendURL(s.BackendURL) {
		bad("backend_url", "%q is not an http(s) URL without credentials, query or fragment", s.BackendURL)
	}
	if s.ClusterID == "" {
		bad("cluster_id", "required (the Rancher cluster id, e.g. c-m-1234abcd)")
	} else if !clusterIDRe.MatchString(s.ClusterID) {
		bad("cluster_id", "%q is not a Rancher cluster id (e.g. c-m-1234abcd; a project id c-xxx:p-yyy is not one)", s.ClusterID)
	}
	if len(s.ProjectPrefix) >= kubeapi.MaxNameLen || !prefixRe.MatchString(s.ProjectPrefix) {
		bad("project_prefix", "%q cannot start a namespace name (lowercase alphanumeric or '-', starting with an alphanumeric, under %d characters)", s.ProjectPrefix, kubeapi.MaxNameLen)
	}
	if !roleRe.MatchString(s.DefaultRole) {
		bad("default_role", "%q is not a Rancher role template id", s.DefaultRole)
	}
	if (s.Username == "") != (s.Password == "") {
		bad("username", "the access key (username) and secret key (password) go together: set both or neither")
	}
	if s.KeycloakEnabled && s.Keycloak == nil {
		bad("keycloak", "keycloak_enabled needs the keycloak settings")
	}
	return errors.Join(errs...)
}

// validBackendURL: Rancher's base URL, http(s), without credentials (they
// go in the API key), query or fragment.
func validBackendURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// apiBase is BackendURL without a trailing slash: Python's f"{url}/v3"
// would make "//v3" of one, which Rancher does not serve.
func (s Settings) apiBase() string { return strings.TrimRight(s.BackendURL, "/") }
