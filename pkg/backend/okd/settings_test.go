package okd

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
)

func TestDecodeSettings(t *testing.T) {
	tests := map[string]struct {
		raw   map[string]any
		check func(t *testing.T, s Settings)
	}{
		"defaults as the Python plugin, with a token": {
			raw: map[string]any{"token": "sha256~x"},
			check: func(t *testing.T, s Settings) {
				want := DefaultSettings()
				if s.APIURL != want.APIURL || !s.VerifyCert || s.NamespacePrefix != "waldur-" || s.CustomerPrefix != "org-" ||
					s.ProjectPrefix != "proj-" || s.AllocationPrefix != "alloc-" || s.DefaultRole != "edit" ||
					s.TokenType != TokenStatic || s.Token.Reveal() != "sha256~x" {
					t.Errorf("settings %+v", s)
				}
				if !maps.Equal(s.RoleMap, map[string]string{"owner": "admin", "admin": "admin", "manager": "edit", "member": "view"}) {
					t.Errorf("role map %v", s.RoleMap)
				}
			},
		},
		"explicit empty and false values are kept": {
			raw: map[string]any{"token": "t", "namespace_prefix": "", "verify_cert": false, "default_role": "", "allocation_prefix": ""},
			check: func(t *testing.T, s Settings) {
				if s.NamespacePrefix != "" || s.VerifyCert || s.DefaultRole != "" || s.AllocationPrefix != "" {
					t.Errorf("settings %+v", s)
				}
			},
		},
		"null takes the default": {
			raw: map[string]any{"token": "t", "namespace_prefix": nil},
			check: func(t *testing.T, s Settings) {
				if s.NamespacePrefix != DefaultNamespacePrefix {
					t.Errorf("namespace_prefix %q", s.NamespacePrefix)
				}
			},
		},
		"role_mapping merges over the defaults, case-insensitively": {
			raw: map[string]any{"token": "t", "role_mapping": map[string]any{"Member": "edit", "auditor": "view"}},
			check: func(t *testing.T, s Settings) {
				want := map[string]string{"owner": "admin", "admin": "admin", "manager": "edit", "member": "edit", "auditor": "view"}
				if !maps.Equal(s.RoleMap, want) {
					t.Errorf("role map %v, want %v", s.RoleMap, want)
				}
			},
		},
		"default_quotas merge": {
			raw: map[string]any{"token": "t", "default_quotas": map[string]any{"cpu": 4, "memory": 8.5}},
			check: func(t *testing.T, s Settings) {
				want := map[string]float64{"cpu": 4, "memory": 8.5, "storage": 100, "pods": 50}
				if !maps.Equal(s.DefaultQuotas, want) {
					t.Errorf("default quotas %v", s.DefaultQuotas)
				}
			},
		},
		"service account": {
			raw: map[string]any{"token_config": map[string]any{"token_type": "service_account"}},
			check: func(t *testing.T, s Settings) {
				if s.tokenFile() != DefaultServiceAccountPath+"/token" {
					t.Errorf("token file %q", s.tokenFile())
				}
			},
		},
		"token file": {
			raw: map[string]any{"token_config": map[string]any{"token_type": "file", "token_file_path": "/etc/t"}},
			check: func(t *testing.T, s Settings) {
				if s.TokenType != TokenFile || s.tokenFile() != "/etc/t" {
					t.Errorf("settings %+v", s)
				}
			},
		},
		"oauth": {
			raw: map[string]any{"token_config": map[string]any{"token_type": "oauth", "oauth_config": map[string]any{
				"client_id": "c", "client_secret": "s3cret", "refresh_token": "r3fresh", "token_endpoint": "https://oauth.example/token"}}},
			check: func(t *testing.T, s Settings) {
				if s.OAuth.ClientID != "c" || s.OAuth.ClientSecret.Reveal() != "s3cret" || s.OAuth.RefreshToken.Reveal() != "r3fresh" {
					t.Errorf("oauth %+v", s.OAuth)
				}
			},
		},
		"unknown keys are warnings": {
			raw: map[string]any{"token": "t", "namespce_prefix": "x-", "token_config": map[string]any{"token_type": "static", "token": "u", "colour": 1}},
			check: func(t *testing.T, s Settings) {
				if len(s.Warnings) != 2 || !strings.Contains(s.Warnings[0].Error(), "backend_settings.namespce_prefix") ||
					!strings.Contains(s.Warnings[1].Error(), "backend_settings.token_config.colour") {
					t.Errorf("warnings %v", s.Warnings)
				}
				if s.Token.Reveal() != "u" {
					t.Errorf("token_config.token not used")
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

func TestDecodeSettingsErrors(t *testing.T) {
	tests := map[string]struct {
		raw  map[string]any
		keys []string
	}{
		"wrong types":        {map[string]any{"token": 5, "verify_cert": "yes"}, []string{"backend_settings.token", "backend_settings.verify_cert"}},
		"no token":           {map[string]any{}, []string{"backend_settings.token"}},
		"bad url":            {map[string]any{"token": "t", "api_url": "ftp://x"}, []string{"backend_settings.api_url"}},
		"bad prefix":         {map[string]any{"token": "t", "namespace_prefix": "Waldur_"}, []string{"backend_settings.namespace_prefix"}},
		"bad alloc prefix":   {map[string]any{"token": "t", "allocation_prefix": "a.b"}, []string{"backend_settings.allocation_prefix"}},
		"unknown token type": {map[string]any{"token_config": map[string]any{"token_type": "kerberos"}}, []string{"backend_settings.token_config.token_type"}},
		"file without path":  {map[string]any{"token_config": map[string]any{"token_type": "file"}}, []string{"backend_settings.token_config.token_file_path"}},
		"oauth incomplete": {map[string]any{"token_config": map[string]any{"token_type": "oauth", "oauth_config": map[string]any{"client_secret": "s3cret"}}},
			[]string{"token_endpoint", "refresh_token", "client_id"}},
		"oauth wrong type":   {map[string]any{"token_config": map[string]any{"token_type": "oauth", "oauth_config": map[string]any{"refresh_token": 7}}}, []string{"oauth_config.refresh_token"}},
		"bad role":           {map[string]any{"token": "t", "role_mapping": map[string]any{"owner": "a b"}}, []string{"backend_settings.role_mapping.owner"}},
		"default quota type": {map[string]any{"token": "t", "default_quotas": map[string]any{"cpu": "x"}}, []string{"default_quotas.cpu"}},
		"default quota kind": {map[string]any{"token": "t", "default_quotas": map[string]any{"gpu": 1, "pods": -1}}, []string{"default_quotas.gpu", "default_quotas.pods"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeSettings(tc.raw)
			if err == nil {
				t.Fatal("no error")
			}
			var se *config.SettingError
			if !errors.As(err, &se) {
				t.Errorf("error %v is no *config.SettingError", err)
			}
			for _, k := range tc.keys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error quotes a secret: %v", err)
			}
		})
	}
}

func TestClusterRole(t *testing.T) {
	s := DefaultSettings()
	s.RoleMap["auditor"] = "view"
	tests := map[string]struct{ role, want string }{
		"a project administrator (PROJECT.ADMIN) is bound to admin": {"PROJECT.ADMIN", "admin"},
		"a plain admin role is bound to admin":                      {"admin", "admin"},
		"an owner is bound to admin, in any case":                   {"Owner", "admin"},
		"a customer owner is looked up by its last part":            {"CUSTOMER.OWNER", "admin"},
		"a manager is bound to edit":                                {"manager", "edit"},
		"a project manager is bound to edit":                        {"PROJECT.MANAGER", "edit"},
		"a member is bound to view, in any case":                    {"MEMBER", "view"},
		"a project member is bound to view":                         {"PROJECT.MEMBER", "view"},
		"a role_mapping entry is used":                              {"auditor", "view"},
		"an unknown role gets default_role":                         {"guest", "edit"},
		"no role gets default_role":                                 {"", "edit"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := s.ClusterRole(tc.role); got != tc.want {
				t.Errorf("ClusterRole(%q) = %q, want %q", tc.role, got, tc.want)
			}
		})
	}
	s.DefaultRole = ""
	if got := s.ClusterRole("guest"); got != "" {
		t.Errorf("without default_role: %q", got)
	}
}
