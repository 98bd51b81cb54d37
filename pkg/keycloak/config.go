package keycloak

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/sitebus/sitebus/pkg/config"
)

// Defaults, as in the Python agent's Keycloak client (waldur_site_agent keycloak_client).
const (
	DefaultURL       = "https://localhost/auth/"
	DefaultRealm     = "waldur"
	DefaultUserRealm = "master"
	DefaultClientID  = "admin-cli"

	DefaultTimeout     = 30 * time.Second
	DefaultMaxAttempts = 5
	DefaultRetryBase   = 250 * time.Millisecond
	DefaultRetryMax    = 5 * time.Second
)

// Config says how to reach Keycloak.
type Config struct {
	// URL is the server's base URL (keycloak_url), with the /auth/ prefix
	// for Keycloak < 17 or servers set up that way.
	URL string
	// Realm holds the groups and users (keycloak_realm).
	Realm string
	// UserRealm is where the admin user logs in (keycloak_user_realm).
	UserRealm string
	// ClientID is the public client for the password grant (client_id).
	ClientID string
	// Username and Password are the admin's (keycloak_username,
	// keycloak_password).
	Username string
	Password config.Secret
	// InsecureSkipVerify disables TLS verification (keycloak_ssl_verify:
	// false); CAFile trusts a CA bundle instead of the system roots
	// (keycloak_ssl_verify: /path, as Python requests accepts).
	InsecureSkipVerify bool
	CAFile             string
	// Timeout bounds one HTTP request (default 30 s).
	Timeout time.Duration
	// MaxAttempts bounds the tries of one call on retryable errors
	// (default 5); RetryBase and RetryMax shape the jittered exponential
	// backoff between them (defaults 250 ms and 5 s).
	MaxAttempts         int
	RetryBase, RetryMax time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// WrapTransport, if set, wraps the HTTP transport (tracing, metrics,
	// fault injection in tests).
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// Warnings are the settings keys ParseSettings did not know and
	// ignored (each a *config.SettingError).
	Warnings []error
}

// WithDefaults returns c with unset fields defaulted.
func (c Config) WithDefaults() Config {
	set := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	set(&c.URL, DefaultURL)
	set(&c.Realm, DefaultRealm)
	set(&c.UserRealm, DefaultUserRealm)
	set(&c.ClientID, DefaultClientID)
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks a defaulted Config for values that would make every call
// fail. Messages name the settings key an operator has to fix.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: settingsPrefix + key, Msg: fmt.Sprintf(format, args...)})
	}
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("keycloak_url", "%q is not an http(s) URL", c.URL)
	}
	if c.Realm == "" {
		bad("keycloak_realm", "must not be empty")
	}
	if c.UserRealm == "" {
		bad("keycloak_user_realm", "must not be empty")
	}
	if c.ClientID == "" {
		bad("client_id", "must not be empty")
	}
	if c.Username == "" {
		bad("keycloak_username", "required")
	}
	if c.Password == "" {
		bad("keycloak_password", "required")
	}
	if c.InsecureSkipVerify && c.CAFile != "" {
		bad("keycloak_ssl_verify", "cannot both skip verification and name a CA bundle")
	}
	return errors.Join(errs...)
}
