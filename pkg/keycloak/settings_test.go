package keycloak

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseSettings(t *testing.T) {
	full := func() map[string]any {
		return map[string]any{"keycloak_username": "admin", "keycloak_password": "s3cret"}
	}
	with := func(k string, v any) map[string]any {
		m := full()
		m[k] = v
		return m
	}
	tests := []struct {
		name    string
		raw     map[string]any
		want    func(t *testing.T, c Config)
		wantErr []string
	}{
		{name: "credentials alone get the Python defaults", raw: full(), want: func(t *testing.T, c Config) {
			if c.URL != "https://localhost/auth/" || c.Realm != "waldur" || c.UserRealm != "master" || c.ClientID != "admin-cli" {
				t.Errorf("defaults: %+v", c)
			}
			if c.InsecureSkipVerify || c.CAFile != "" || c.Timeout != DefaultTimeout || c.MaxAttempts != DefaultMaxAttempts {
				t.Errorf("defaults: %+v", c)
			}
			if c.Password.Reveal() != "s3cret" {
				t.Error("password lost")
			}
		}},
		{name: "every Python key is read", raw: map[string]any{
			"keycloak_url": "https://kc.example.org/", "keycloak_realm": "hpc", "keycloak_user_realm": "admins",
			"client_id": "sitebus-cli", "keycloak_username": "svc", "keycloak_password": "pw", "keycloak_ssl_verify": false,
		}, want: func(t *testing.T, c Config) {
			if c.URL != "https://kc.example.org/" || c.Realm != "hpc" || c.UserRealm != "admins" ||
				c.ClientID != "sitebus-cli" || c.Username != "svc" || !c.InsecureSkipVerify {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "ssl_verify as a quoted false skips verification", raw: with("keycloak_ssl_verify", "False"), want: func(t *testing.T, c Config) {
			if !c.InsecureSkipVerify {
				t.Error("verification still on")
			}
		}},
		{name: "ssl_verify as a path is a CA bundle, as Python requests reads it", raw: with("keycloak_ssl_verify", "/etc/ssl/kc.pem"), want: func(t *testing.T, c Config) {
			if c.InsecureSkipVerify || c.CAFile != "/etc/ssl/kc.pem" {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "unknown keys are ignored", raw: with("keycloak_timeout", 3), want: func(t *testing.T, c Config) {}},
		{name: "nulls are unset", raw: with("keycloak_realm", nil), want: func(t *testing.T, c Config) {
			if c.Realm != "waldur" {
				t.Errorf("realm %q", c.Realm)
			}
		}},
		{name: "missing credentials name their keys", raw: map[string]any{},
			wantErr: []string{"backend_settings.keycloak.keycloak_username: required", "backend_settings.keycloak.keycloak_password: required"}},
		{name: "wrong types name their keys", raw: map[string]any{"keycloak_url": 8080, "keycloak_ssl_verify": []any{}, "keycloak_password": true},
			wantErr: []string{
				"backend_settings.keycloak.keycloak_url: must be a string, not a number",
				"backend_settings.keycloak.keycloak_ssl_verify: must be a boolean or a CA bundle path, not a list",
				"backend_settings.keycloak.keycloak_password: must be a string, not a boolean",
			}},
		{name: "a URL without scheme is rejected", raw: with("keycloak_url", "kc.example.org"),
			wantErr: []string{`backend_settings.keycloak.keycloak_url: "kc.example.org" is not an http(s) URL`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseSettings(tc.raw)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; got %+v", c)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want(t, c)
		})
	}
}

func TestConfigNeverPrintsThePassword(t *testing.T) {
	c, err := ParseSettings(map[string]any{"keycloak_username": "admin", "keycloak_password": "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, c); strings.Contains(s, "hunter2") {
			t.Errorf("%s shows the password: %s", verb, s)
		}
	}
}

// Only a missing (or null) key takes the Python client's default; a key set
// to "" keeps it and, since Keycloak cannot be reached with it, is refused
// at that key rather than quietly given the default.
func TestParseSettingsMissingOrExplicit(t *testing.T) {
	creds := func(kv ...any) map[string]any {
		m := map[string]any{"keycloak_username": "admin", "keycloak_password": "pw-SECRET-42"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := map[string]struct {
		raw     map[string]any
		check   func(t *testing.T, c Config)
		wantErr string // the whole error
	}{
		"missing keys take the defaults": {raw: creds(), check: func(t *testing.T, c Config) {
			if c.URL != DefaultURL || c.Realm != DefaultRealm || c.UserRealm != DefaultUserRealm || c.ClientID != DefaultClientID || c.InsecureSkipVerify {
				t.Errorf("got %+v", c)
			}
		}},
		"explicit false ssl_verify is kept": {raw: creds("keycloak_ssl_verify", false), check: func(t *testing.T, c Config) {
			if !c.InsecureSkipVerify {
				t.Error("verification on")
			}
		}},
		"explicit empty values are refused, not defaulted": {
			raw: creds("keycloak_url", "", "keycloak_realm", "", "keycloak_user_realm", "", "client_id", ""),
			wantErr: strings.Join([]string{
				`backend_settings.keycloak.keycloak_url: "" is not an http(s) URL`,
				`backend_settings.keycloak.keycloak_realm: must not be empty`,
				`backend_settings.keycloak.keycloak_user_realm: must not be empty`,
				`backend_settings.keycloak.client_id: must not be empty`,
			}, "\n"),
		},
		"explicit empty credentials are refused": {
			raw: creds("keycloak_password", "", "keycloak_username", ""),
			wantErr: "backend_settings.keycloak.keycloak_username: required\n" +
				"backend_settings.keycloak.keycloak_password: required",
		},
		"explicit empty ssl_verify is refused": {
			raw:     creds("keycloak_ssl_verify", ""),
			wantErr: "backend_settings.keycloak.keycloak_ssl_verify: must be a boolean or a CA bundle path, not an empty string",
		},
		"a wrong type names the key, not the value": {
			raw:     creds("keycloak_password", 42, "keycloak_realm", []any{"x"}),
			wantErr: "backend_settings.keycloak.keycloak_realm: must be a string, not a list\nbackend_settings.keycloak.keycloak_password: must be a string, not a number",
		},
		"unknown keys are warnings": {raw: creds("keycloak_relm", "hpc"), check: func(t *testing.T, c Config) {
			want := `warning: backend_settings.keycloak.keycloak_relm: unknown key "keycloak_relm" is ignored (did you mean "keycloak_realm"?)`
			if len(c.Warnings) != 1 || c.Warnings[0].Error() != want {
				t.Errorf("warnings %v", c.Warnings)
			}
			if c.Realm != DefaultRealm {
				t.Errorf("realm %q", c.Realm)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := ParseSettings(tc.raw)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "pw-SECRET-42") {
					t.Error("the error shows the password")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
