package vault

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// DefaultPort is Vault's port, Mastermind's vault_port default.
const DefaultPort = 8200

// Settings are the Vault keys of a rancher-cluster offering's
// backend_settings, named as Mastermind's service settings.
type Settings struct {
	// Host is vault_host; empty turns Vault off. A bare host name means
	// https://<host>:<port>, as in Mastermind; a URL (http:// or https://,
	// optionally with a port) is taken as it is, which a Vault without TLS
	// (a dev server) needs.
	Host string
	// Port is vault_port (DefaultPort).
	Port int
	// Token is vault_token. Unlike Mastermind, whose default is the dev
	// server's "root", it has no default: a site must say which token
	// sitebus uses.
	Token config.Secret
	// TLSVerify is vault_tls_verify (default true). False accepts any
	// certificate, for sitebus and (in the default cloud-init) for the
	// nodes' Vault CLI.
	TLSVerify bool
	// CAFile is vault_ca_file: a PEM bundle that signs Vault's certificate,
	// when it is not in the system pool.
	CAFile string
}

// Keys are the backend_settings keys Decode reads.
var Keys = []string{"vault_host", "vault_port", "vault_token", "vault_tls_verify", "vault_verify", "vault_ca_file"}

// DefaultSettings is Vault off, with Mastermind's defaults for the rest.
func DefaultSettings() Settings { return Settings{Port: DefaultPort, TLSVerify: true} }

// Decode reads the Vault keys from d onto DefaultSettings (only a missing
// key takes its default), recording problems in d. Call Validate after.
func Decode(d *config.SettingsDecoder) Settings {
	s := DefaultSettings()
	var token string
	d.Str("vault_host", &s.Host)
	d.Str("vault_token", &token)
	d.Bool("vault_tls_verify", &s.TLSVerify)
	// vault_verify is the name in Mastermind's code (the documentation
	// says vault_tls_verify); both are read, and they must agree.
	if d.Value("vault_verify") != nil {
		alias := s.TLSVerify
		d.Bool("vault_verify", &alias)
		if d.Value("vault_tls_verify") != nil && alias != s.TLSVerify {
			d.Errorf("vault_verify", "contradicts vault_tls_verify (set one of them)")
		}
		s.TLSVerify = alias
	}
	d.Str("vault_ca_file", &s.CAFile)
	s.Token = config.Secret(token)
	// Mastermind keeps the port as a string ("8200"); YAML gives a number.
	switch v := d.Value("vault_port").(type) {
	case nil:
	case int:
		s.Port = v
	case float64:
		if v != math.Trunc(v) {
			d.Bad("vault_port", "a whole number", v)
		} else {
			s.Port = int(v)
		}
	case string:
		p, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			d.Errorf("vault_port", "%q is not a port number", v)
		} else {
			s.Port = p
		}
	default:
		d.Bad("vault_port", "a port number", v)
	}
	return s
}

// Enabled reports whether Vault is configured (vault_host set).
func (s Settings) Enabled() bool { return s.Host != "" }

// Validate checks settings that cannot work; prefix names where the keys
// sit (e.g. "backend_settings."). Disabled settings are valid.
func (s Settings) Validate(prefix string) error {
	if !s.Enabled() {
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &config.SettingError{Key: prefix + key, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Port < 1 || s.Port > 65535 {
		bad("vault_port", "%d is not a TCP port", s.Port)
	}
	if _, err := s.Address(); err != nil {
		bad("vault_host", "%v", err)
	}
	if s.Token == "" {
		bad("vault_token", "required when vault_host is set")
	}
	if s.CAFile != "" {
		if _, err := os.Stat(s.CAFile); err != nil {
			bad("vault_ca_file", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// Address is Vault's base URL, e.g. https://vault.example.com:8200.
func (s Settings) Address() (string, error) {
	if !strings.Contains(s.Host, "://") {
		if strings.ContainsAny(s.Host, "/?#@ ") {
			return "", fmt.Errorf("%q is neither a host name nor an http(s) URL", s.Host)
		}
		if _, _, err := net.SplitHostPort(s.Host); err == nil {
			return "", fmt.Errorf("%q holds a port: give it in vault_port", s.Host)
		}
		return "https://" + net.JoinHostPort(strings.Trim(s.Host, "[]"), strconv.Itoa(s.Port)), nil
	}
	u, err := url.Parse(s.Host)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("%q is not an http(s) URL without path, credentials, query or fragment", s.Host)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(s.Port))
	}
	return u.Scheme + "://" + u.Host, nil
}
