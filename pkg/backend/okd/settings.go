package okd

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// Defaults of backend_settings, as in the Python OKD plugin (waldur-site-agent-okd).
const (
	DefaultAPIURL             = "https://localhost:8443"
	DefaultNamespacePrefix    = "waldur-"
	DefaultCustomerPrefix     = "org-"
	DefaultProjectPrefix      = "proj-"
	DefaultAllocationPrefix   = "alloc-"
	DefaultRole               = "edit"
	DefaultServiceAccountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// Token types of token_config.token_type.
const (
	TokenStatic         = "static"
	TokenServiceAccount = "service_account"
	TokenFile           = "file"
	TokenOAuth          = "oauth"
)

// DefaultRoleMap maps a Waldur role (lower case) to the ClusterRole its
// users are bound to; role_mapping is merged over it. Waldur's team lists
// a project's administrator as PROJECT.ADMIN (looked up as "admin"), the
// project's owner, so it gets OpenShift's admin role like a customer's
// owner; without the entry admin would be unreachable and PROJECT.ADMIN
// would fall to default_role (edit).
func DefaultRoleMap() map[string]string {
	return map[string]string{"owner": "admin", "admin": "admin", "manager": "edit", "member": "view"}
}

// DefaultQuotas are the limits Restore applies to a project paused or
// downscaled without sitebus knowing the limits before (one the Python
// agent paused), the Python plugin's restore values, in Waldur units by
// quota kind (cpu cores, memory GB, storage GB, pods).
func DefaultQuotas() map[string]float64 {
	return map[string]float64{kindCPU: 10, kindMemory: 32, kindStorage: 100, kindPods: 50}
}

// OAuth is token_config.oauth_config: a refresh-token grant against the
// OAuth server's token endpoint.
type OAuth struct {
	ClientID      string
	ClientSecret  config.Secret
	RefreshToken  config.Secret
	TokenEndpoint string
}

// Settings are the backend_settings of an okd offering.
type Settings struct {
	// APIURL is the API server's URL (https://api.okd.example.com:6443).
	APIURL string
	// VerifyCert verifies the API server's (and the OAuth server's) TLS
	// certificate.
	VerifyCert bool
	// TokenType is how the bearer token is obtained: static (Token),
	// service_account (ServiceAccountPath/token), file (TokenFilePath) or
	// oauth (OAuth). Without token_config it is static.
	TokenType          string
	Token              config.Secret
	ServiceAccountPath string
	TokenFilePath      string
	OAuth              OAuth

	// NamespacePrefix, then CustomerPrefix, ProjectPrefix or
	// AllocationPrefix, then the slug name a project (see ProjectName).
	NamespacePrefix  string
	CustomerPrefix   string
	ProjectPrefix    string
	AllocationPrefix string

	// DefaultRole is the ClusterRole of a user whose Waldur role RoleMap
	// does not name; "" gives such users no binding.
	DefaultRole string
	// RoleMap maps Waldur roles (lower case) to ClusterRoles.
	RoleMap map[string]string
	// DefaultQuotas are Restore's fallback (see DefaultQuotas), keyed by
	// quota kind; default_quotas is merged over them.
	DefaultQuotas map[string]float64

	// Warnings are the keys DecodeSettings did not know and ignored, as
	// the Python plugin ignores them (each a *config.SettingError).
	Warnings []error
}

// DefaultSettings are the settings of an empty backend_settings, as in the
// Python plugin. DecodeSettings decodes onto them; build settings in code
// from them too, since New does not fill in zero values.
func DefaultSettings() Settings {
	return Settings{
		APIURL:             DefaultAPIURL,
		VerifyCert:         true,
		TokenType:          TokenStatic,
		ServiceAccountPath: DefaultServiceAccountPath,
		NamespacePrefix:    DefaultNamespacePrefix,
		CustomerPrefix:     DefaultCustomerPrefix,
		ProjectPrefix:      DefaultProjectPrefix,
		AllocationPrefix:   DefaultAllocationPrefix,
		DefaultRole:        DefaultRole,
		RoleMap:            DefaultRoleMap(),
		DefaultQuotas:      DefaultQuotas(),
	}
}

// DecodeSettings decodes backend_settings (as config.Offering holds them)
// onto DefaultSettings and validates the result. As the Python plugin's
// settings.get(key, default), only a missing (or null) key takes the
// default: namespace_prefix: "" and verify_cert: false are kept. A value
// of the wrong type is an error naming its key (which the configuration
// loader places in its offering); keys it does not know are ignored, as
// Python ignores them, and listed in Settings.Warnings. Secrets are never
// quoted.
func DecodeSettings(raw map[string]any) (Settings, error) {
	s := DefaultSettings()
	var token string
	var tokenConfig, oauth map[string]any
	var roles map[string]string
	var quotas map[string]any
	d := config.SettingsDecoder{Raw: raw, Prefix: "backend_settings."}
	d.Str("api_url", &s.APIURL)
	d.Str("token", &token)
	d.Bool("verify_cert", &s.VerifyCert)
	d.Str("namespace_prefix", &s.NamespacePrefix)
	d.Str("customer_prefix", &s.CustomerPrefix)
	d.Str("project_prefix", &s.ProjectPrefix)
	d.Str("allocation_prefix", &s.AllocationPrefix)
	d.Str("default_role", &s.DefaultRole)
	d.StrMap("role_mapping", &roles, false)
	d.Map("default_quotas", &quotas)
	d.Map("token_config", &tokenConfig)
	// Read by the agent itself for every backend (config.Offering).
	d.Known("periodic_limits")
	errs := []error{d.Err()}
	s.Token = config.Secret(token)
	if tokenConfig != nil {
		tc := config.SettingsDecoder{Raw: tokenConfig, Prefix: "backend_settings.token_config."}
		tc.Str("token_type", &s.TokenType)
		tc.Str("token", &token)
		tc.Str("service_account_path", &s.ServiceAccountPath)
		tc.Str("token_file_path", &s.TokenFilePath)
		tc.Map("oauth_config", &oauth)
		if oauth != nil {
			oc := config.SettingsDecoder{Raw: oauth, Prefix: "backend_settings.token_config.oauth_config."}
			var secret, refresh string
			oc.Str("client_id", &s.OAuth.ClientID)
			oc.Str("client_secret", &secret)
			oc.Str("refresh_token", &refresh)
			oc.Str("token_endpoint", &s.OAuth.TokenEndpoint)
			s.OAuth.ClientSecret, s.OAuth.RefreshToken = config.Secret(secret), config.Secret(refresh)
			errs = append(errs, oc.Err())
			s.Warnings = append(s.Warnings, oc.Warnings()...)
		}
		// token_config.token overrides the top-level token for static.
		s.Token = config.Secret(token)
		errs = append(errs, tc.Err())
		s.Warnings = append(s.Warnings, tc.Warnings()...)
	}
	for _, k := range sortedKeys(roles) {
		s.RoleMap[strings.ToLower(k)] = roles[k]
	}
	for _, k := range sortedKeys(quotas) {
		v, ok := number(quotas[k])
		if !ok {
			d.Bad("default_quotas."+k, "a number", quotas[k])
			continue
		}
		s.DefaultQuotas[k] = v
	}
	errs = append(errs, d.Err())
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	s.Warnings = append(d.Warnings(), s.Warnings...)
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

var (
	// prefixRe: a prefix must be able to start an RFC 1123 label.
	prefixRe = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)?$`)
	// partRe: the second prefix follows the first, so it may start with '-'.
	partRe = regexp.MustCompile(`^[a-z0-9-]*$`)
	// clusterRoleRe: a ClusterRole name is a path segment; be stricter and
	// accept DNS-subdomain-like names (admin, edit, view, system:...).
	clusterRoleRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.:_-]*$`)
)

// Validate checks settings for values that would make every call fail.
// Messages name the key an operator has to fix, never a secret's value.
func (s Settings) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: "backend_settings." + key, Msg: fmt.Sprintf(format, args...)})
	}
	if !httpURL(s.APIURL) {
		bad("api_url", "%q is not an http(s) URL without credentials, query or fragment", s.APIURL)
	}
	if len(s.NamespacePrefix) >= maxNameLen || !prefixRe.MatchString(s.NamespacePrefix) {
		bad("namespace_prefix", "%q cannot start a project name (lowercase alphanumeric or '-', starting with an alphanumeric, under %d characters)",
			s.NamespacePrefix, maxNameLen)
	}
	for key, v := range map[string]string{"customer_prefix": s.CustomerPrefix, "project_prefix": s.ProjectPrefix, "allocation_prefix": s.AllocationPrefix} {
		p := s.NamespacePrefix + v
		if len(p) >= maxNameLen || !partRe.MatchString(v) || (p != "" && !prefixRe.MatchString(p)) {
			bad(key, "%q after namespace_prefix %q cannot start a project name (lowercase alphanumeric or '-')", v, s.NamespacePrefix)
		}
	}
	if s.DefaultRole != "" && !clusterRoleRe.MatchString(s.DefaultRole) {
		bad("default_role", "%q is not a ClusterRole name", s.DefaultRole)
	}
	for _, k := range sortedKeys(s.RoleMap) {
		if r := s.RoleMap[k]; r != "" && !clusterRoleRe.MatchString(r) {
			bad("role_mapping."+k, "%q is not a ClusterRole name", r)
		}
	}
	for _, k := range sortedKeys(s.DefaultQuotas) {
		if _, known := quotaKinds[k]; !known {
			bad("default_quotas."+k, "unknown quota kind (one of cpu, memory, storage, pods)")
		} else if v := s.DefaultQuotas[k]; !(v >= 0) {
			bad("default_quotas."+k, "%v is not a non-negative number", v)
		}
	}
	switch s.TokenType {
	case TokenStatic:
		if s.Token == "" {
			bad("token", "required (or a token_config with token_type service_account, file or oauth)")
		}
	case TokenServiceAccount:
		if s.ServiceAccountPath == "" {
			bad("token_config.service_account_path", "must not be empty")
		}
	case TokenFile:
		if s.TokenFilePath == "" {
			bad("token_config.token_file_path", "required for token_type file")
		}
	case TokenOAuth:
		if !httpURL(s.OAuth.TokenEndpoint) {
			bad("token_config.oauth_config.token_endpoint", "%q is not an http(s) URL", s.OAuth.TokenEndpoint)
		}
		if s.OAuth.RefreshToken == "" {
			bad("token_config.oauth_config.refresh_token", "required for token_type oauth")
		}
		if s.OAuth.ClientID == "" {
			bad("token_config.oauth_config.client_id", "required for token_type oauth")
		}
	default:
		bad("token_config.token_type", "%q is not one of static, service_account, file, oauth", s.TokenType)
	}
	return errors.Join(errs...)
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// tokenFile is the file a file or service_account token is read from.
func (s Settings) tokenFile() string {
	if s.TokenType == TokenServiceAccount {
		return path.Join(s.ServiceAccountPath, "token")
	}
	return s.TokenFilePath
}

// apiBase is APIURL without a trailing slash (client-go joins paths).
func (s Settings) apiBase() string { return strings.TrimRight(s.APIURL, "/") }
