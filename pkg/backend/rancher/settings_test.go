package rancher

import (
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
)

// base is the least a working configuration has.
func base() map[string]any {
	return map[string]any{"cluster_id": "c-m-1234abcd", "username": "token-abc", "password": "s3cret-key"}
}

func with(kv ...any) map[string]any {
	m := base()
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// As the plugin's settings.get(key, default), only a missing (or null) key
// takes the default; a key set to "", false or {} keeps that value, and
// one that cannot work is refused, never replaced by the default.
func TestDecodeSettings(t *testing.T) {
	tests := map[string]struct {
		raw   map[string]any
		check func(t *testing.T, s Settings)
	}{
		"missing keys take the plugin's defaults": {
			raw: base(),
			check: func(t *testing.T, s Settings) {
				if s.BackendURL != "https://localhost" || !s.VerifyCert || s.ProjectPrefix != "waldur-" ||
					s.DefaultRole != "workloads-manage" || s.KeycloakEnabled || !s.KeycloakUseUserID ||
					s.NamespaceLabels != nil || s.Keycloak != nil || len(s.Warnings) != 0 {
					t.Errorf("got %+v", s)
				}
				if s.Username != "token-abc" || s.Password.Reveal() != "s3cret-key" || s.ClusterID != "c-m-1234abcd" {
					t.Errorf("credentials %+v", s)
				}
			},
		},
		"nulls are unset": {
			raw: with("project_prefix", nil, "verify_cert", nil, "namespace_labels", nil),
			check: func(t *testing.T, s Settings) {
				if s.ProjectPrefix != "waldur-" || !s.VerifyCert || s.NamespaceLabels != nil {
					t.Errorf("got %+v", s)
				}
			},
		},
		"explicit empty project_prefix is kept: projects are named by the slug alone": {
			raw: with("project_prefix", ""),
			check: func(t *testing.T, s Settings) {
				if s.ProjectPrefix != "" {
					t.Errorf("prefix %q", s.ProjectPrefix)
				}
			},
		},
		"explicit false is kept for keys that default to true": {
			raw: with("verify_cert", false, "keycloak_use_user_id", false),
			check: func(t *testing.T, s Settings) {
				if s.VerifyCert || s.KeycloakUseUserID {
					t.Errorf("got %+v", s)
				}
			},
		},
		"explicit empty namespace_labels is kept empty": {
			raw: with("namespace_labels", map[string]any{}),
			check: func(t *testing.T, s Settings) {
				if s.NamespaceLabels == nil || len(s.NamespaceLabels) != 0 {
					t.Errorf("labels %#v", s.NamespaceLabels)
				}
			},
		},
		"every key of the reference configuration is read": {
			raw: with("backend_url", "https://rancher.example.com", "verify_cert", true, "project_prefix", "hpc-",
				"default_role", "project-member", "namespace_labels", map[string]any{"gpu-pool": "h100-2x"}),
			check: func(t *testing.T, s Settings) {
				if s.BackendURL != "https://rancher.example.com" || s.ProjectPrefix != "hpc-" || s.DefaultRole != "project-member" ||
					s.NamespaceLabels["gpu-pool"] != "h100-2x" {
					t.Errorf("got %+v", s)
				}
			},
		},
		"the keycloak block is parsed by the keycloak package when enabled": {
			raw: with("keycloak_enabled", true, "keycloak", map[string]any{"keycloak_url": "https://kc.example.org/",
				"keycloak_username": "svc", "keycloak_password": "pw", "keycloak_sync_frequency": 15}),
			check: func(t *testing.T, s Settings) {
				if !s.KeycloakEnabled || s.Keycloak == nil || s.Keycloak.URL != "https://kc.example.org/" || s.Keycloak.Realm != "waldur" {
					t.Fatalf("keycloak %+v", s.Keycloak)
				}
				// The block's unknown keys are its own warnings.
				if len(s.Keycloak.Warnings) != 1 || len(s.Warnings) != 0 {
					t.Errorf("warnings %v / %v", s.Keycloak.Warnings, s.Warnings)
				}
			},
		},
		"a disabled keycloak block is not parsed": {
			raw: with("keycloak_enabled", false, "keycloak", map[string]any{}),
			check: func(t *testing.T, s Settings) {
				if s.Keycloak != nil {
					t.Errorf("keycloak %+v", s.Keycloak)
				}
			},
		},
		"unknown keys are warnings naming the key, not errors": {
			raw: with("projet_prefix", "x-", "periodic_limits", map[string]any{"enabled": true}),
			check: func(t *testing.T, s Settings) {
				if len(s.Warnings) != 1 || s.Warnings[0].Error() != `warning: backend_settings.projet_prefix: unknown key "projet_prefix" is ignored (did you mean "project_prefix"?)` {
					t.Errorf("warnings %v", s.Warnings)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSettings(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func TestDecodeSettingsRefuses(t *testing.T) {
	tests := map[string]struct {
		raw  map[string]any
		want string // the whole error
	}{
		"a wrong type names the key and what it must be": {
			raw:  with("verify_cert", "no", "cluster_id", 5),
			want: "backend_settings.verify_cert: must be a boolean, not a string\nbackend_settings.cluster_id: must be a string, not a number",
		},
		"a label value that is not a string names the label": {
			raw:  with("namespace_labels", map[string]any{"tier": 1}),
			want: "backend_settings.namespace_labels.tier: must be a string, not a number",
		},
		"a keycloak block that is not a mapping": {
			raw:  with("keycloak_enabled", true, "keycloak", "x"),
			want: "backend_settings.keycloak: must be a mapping, not a string",
		},
		"an enabled keycloak block without credentials names its keys": {
			raw:  with("keycloak_enabled", true),
			want: "backend_settings.keycloak.keycloak_username: required\nbackend_settings.keycloak.keycloak_password: required",
		},
		"a missing cluster_id": {
			raw:  map[string]any{},
			want: "backend_settings.cluster_id: required (the Rancher cluster id, e.g. c-m-1234abcd)",
		},
		"a project id given as cluster_id": {
			raw:  with("cluster_id", "c-m-1234abcd:p-xyz"),
			want: `backend_settings.cluster_id: "c-m-1234abcd:p-xyz" is not a Rancher cluster id (e.g. c-m-1234abcd; a project id c-xxx:p-yyy is not one)`,
		},
		"a URL that is not http(s)": {
			raw:  with("backend_url", "rancher.example.com"),
			want: `backend_settings.backend_url: "rancher.example.com" is not an http(s) URL without credentials, query or fragment`,
		},
		"a prefix no namespace can start with": {
			raw:  with("project_prefix", "Waldur_"),
			want: `backend_settings.project_prefix: "Waldur_" cannot start a namespace name (lowercase alphanumeric or '-', starting with an alphanumeric, under 63 characters)`,
		},
		"an empty default_role": {
			raw:  with("default_role", ""),
			want: `backend_settings.default_role: "" is not a Rancher role template id`,
		},
		"a secret key without access key, never quoting the secret": {
			raw:  with("username", ""),
			want: "backend_settings.username: the access key (username) and secret key (password) go together: set both or neither",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeSettings(tc.raw)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
			var se *config.SettingError
			if !errors.As(err, &se) {
				t.Errorf("%T is no *config.SettingError", err)
			}
			if strings.Contains(err.Error(), "s3cret-key") {
				t.Error("the secret key is in the error")
			}
		})
	}
}

func TestNewRefusesWhatDecodeSettingsWould(t *testing.T) {
	s := DefaultSettings() // no cluster_id
	if _, err := New(s, nil, Options{}); err == nil || !strings.Contains(err.Error(), "backend_settings.cluster_id") {
		t.Errorf("New without cluster_id: err = %v", err)
	}
}
