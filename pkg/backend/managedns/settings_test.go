package managedns

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
)

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name  string
		raw   map[string]any
		check func(t *testing.T, s Settings)
	}{
		{
			name: "an empty mapping gives the Python defaults",
			raw:  map[string]any{},
			check: func(t *testing.T, s Settings) {
				if s.CRNamespace != "waldur-system" || s.NamespacePrefix != "waldur-" || s.KubeconfigPath != "" {
					t.Errorf("defaults: %+v", s)
				}
				if !maps.Equal(s.QuotaMapping, DefaultQuotaMapping()) {
					t.Errorf("quota mapping %v", s.QuotaMapping)
				}
				if s.DefaultRole != "readwrite" || !s.KeycloakUseUserID || s.KeycloakEnabled || s.CRUserIdentityField != "email" {
					t.Errorf("keycloak defaults: %+v", s)
				}
			},
		},
		{
			name: "nulls are unset",
			raw:  map[string]any{"cr_namespace": nil, "kubeconfig_path": nil, "namespace_labels": nil},
			check: func(t *testing.T, s Settings) {
				if s.CRNamespace != "waldur-system" || s.NamespaceLabels != nil {
					t.Errorf("%+v", s)
				}
			},
		},
		{
			name: "component_quota_mapping is merged over the defaults",
			raw:  map[string]any{"component_quota_mapping": map[string]any{"gpu": "requests.nvidia.com/gpu", "fpga": "fpga"}},
			check: func(t *testing.T, s Settings) {
				want := map[string]string{"cpu": "cpu", "ram": "memory", "storage": "storage",
					"gpu": "requests.nvidia.com/gpu", "fpga": "fpga"}
				if !maps.Equal(s.QuotaMapping, want) {
					t.Errorf("got %v, want %v", s.QuotaMapping, want)
				}
			},
		},
		{
			name: "a null quota field unmaps a default type",
			raw:  map[string]any{"component_quota_mapping": map[string]any{"gpu": nil}},
			check: func(t *testing.T, s Settings) {
				if f, ok := s.QuotaMapping["gpu"]; !ok || f != "" {
					t.Errorf("gpu = %q, %v", f, ok)
				}
			},
		},
		{
			name: "role_mapping is merged over the defaults",
			raw:  map[string]any{"role_mapping": map[string]any{"observer": "readonly", "member": "admin"}},
			check: func(t *testing.T, s Settings) {
				want := map[string]string{"manager": "admin", "admin": "admin", "member": "admin", "observer": "readonly"}
				if !maps.Equal(s.RoleMapping, want) {
					t.Errorf("got %v", s.RoleMapping)
				}
			},
		},
		{
			name: "a leading ~/ in kubeconfig_path is the home directory",
			raw:  map[string]any{"kubeconfig_path": "~/.kube/config"},
			check: func(t *testing.T, s Settings) {
				home, _ := os.UserHomeDir()
				if s.KubeconfigPath != filepath.Join(home, ".kube/config") {
					t.Errorf("got %q", s.KubeconfigPath)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSettings(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestParseSettingsRefuses(t *testing.T) {
	tests := []struct {
		name string
		raw  map[string]any
		want []string // every fragment must be in the error
	}{
		{
			name: "a string setting given a number names the key",
			raw:  map[string]any{"cr_namespace": 5},
			want: []string{"backend_settings.cr_namespace: must be a string, not a number"},
		},
		{
			name: "a boolean setting given a string names the key",
			raw:  map[string]any{"keycloak_enabled": "maybe"},
			want: []string{"backend_settings.keycloak_enabled: must be a boolean, not a string"},
		},
		{
			name: "a mapping given a list names the key",
			raw:  map[string]any{"namespace_labels": []any{"a"}},
			want: []string{"backend_settings.namespace_labels: must be a mapping, not a list"},
		},
		{
			name: "a label value that is not a string names the label",
			raw:  map[string]any{"namespace_labels": map[string]any{"tier": 1}},
			want: []string{"backend_settings.namespace_labels.tier: must be a string, not a number"},
		},
		{
			name: "every bad key is reported",
			raw:  map[string]any{"namespace_prefix": true, "keycloak": "x"},
			want: []string{"backend_settings.namespace_prefix:", "backend_settings.keycloak:"},
		},
		{
			name: "a CR namespace that is no namespace name",
			raw:  map[string]any{"cr_namespace": "Waldur_System"},
			want: []string{"backend_settings.cr_namespace: \"Waldur_System\" is not a valid namespace name"},
		},
		{
			name: "a prefix no namespace can start with",
			raw:  map[string]any{"namespace_prefix": "Waldur-"},
			want: []string{"backend_settings.namespace_prefix: \"Waldur-\" cannot start a namespace name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSettings(tt.raw)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The testdata configuration of the config package is the real-world
// shape of these settings.
func TestParseSettingsOfExampleConfig(t *testing.T) {
	path := filepath.Join("..", "..", "config", "testdata", "k8s-ut-namespace.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := config.Parse(data, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSettings(root.Offerings[0].BackendSettings)
	if err != nil {
		t.Fatal(err)
	}
	if s.KubeconfigPath != "/etc/waldur-site-agent/kubeconfig" || !s.KeycloakEnabled ||
		s.QuotaMapping["gpu"] != "requests.nvidia.com/gpu" || s.NamespaceLabels["hpc.ut.ee/managed-by"] != "waldur" {
		t.Fatalf("%+v", s)
	}
}

// As the plugin's settings.get(key, default), only a missing (or null) key
// takes the default; a key set to "", false or {} keeps that value, and
// one that cannot work is refused, never replaced by the default.
func TestParseSettingsMissingOrExplicit(t *testing.T) {
	tests := map[string]struct {
		raw     map[string]any
		check   func(t *testing.T, s Settings)
		wantErr string // the whole error
	}{
		"missing keys take the plugin's defaults": {
			raw: map[string]any{},
			check: func(t *testing.T, s Settings) {
				d := DefaultSettings()
				if s.NamespacePrefix != d.NamespacePrefix || s.CRNamespace != d.CRNamespace || s.DefaultRole != "readwrite" ||
					s.CRUserIdentityField != "email" || !s.KeycloakUseUserID || len(s.Warnings) != 0 {
					t.Errorf("got %+v", s)
				}
			},
		},
		"explicit empty namespace_prefix is kept: names are the slug alone": {
			raw: map[string]any{"namespace_prefix": ""},
			check: func(t *testing.T, s Settings) {
				if s.NamespacePrefix != "" {
					t.Errorf("prefix %q", s.NamespacePrefix)
				}
				if name, err := namespaceName(s.NamespacePrefix, backend.Resource{Slug: "proj1"}); err != nil || name != "proj1" {
					t.Errorf("name %q, %v", name, err)
				}
			},
		},
		"explicit empty default_role and identity field are kept": {
			raw: map[string]any{"default_role": "", "cr_user_identity_field": "", "kubeconfig_path": ""},
			check: func(t *testing.T, s Settings) {
				if s.DefaultRole != "" || s.CRUserIdentityField != "" || s.KubeconfigPath != "" {
					t.Errorf("got %+v", s)
				}
			},
		},
		"explicit false is kept for a key that defaults to true": {
			raw: map[string]any{"keycloak_use_user_id": false, "keycloak_enabled": false, "sync_users_to_cr": false},
			check: func(t *testing.T, s Settings) {
				if s.KeycloakUseUserID || s.KeycloakEnabled || s.SyncUsersToCR {
					t.Errorf("got %+v", s)
				}
			},
		},
		"explicit empty mappings keep the defaults they are merged over": {
			raw: map[string]any{"component_quota_mapping": map[string]any{}, "role_mapping": map[string]any{}, "namespace_labels": map[string]any{}},
			check: func(t *testing.T, s Settings) {
				if !maps.Equal(s.QuotaMapping, DefaultQuotaMapping()) || !maps.Equal(s.RoleMapping, DefaultRoleMapping()) ||
					s.NamespaceLabels == nil || len(s.NamespaceLabels) != 0 {
					t.Errorf("got %+v", s)
				}
			},
		},
		"explicit empty cr_namespace is refused, not defaulted": {
			raw:     map[string]any{"cr_namespace": ""},
			wantErr: `backend_settings.cr_namespace: "" is not a valid namespace name (RFC 1123 label)`,
		},
		"a wrong type names the key": {
			raw:     map[string]any{"namespace_prefix": 7, "sync_users_to_cr": "no"},
			wantErr: "backend_settings.namespace_prefix: must be a string, not a number\nbackend_settings.sync_users_to_cr: must be a boolean, not a string",
		},
		"unknown keys are warnings naming the key, not errors": {
			raw: map[string]any{"namespace_prefx": "x-", "periodic_limits": map[string]any{"enabled": true}, "keycloak": map[string]any{}},
			check: func(t *testing.T, s Settings) {
				if len(s.Warnings) != 1 || s.Warnings[0].Error() != `warning: backend_settings.namespace_prefx: unknown key "namespace_prefx" is ignored (did you mean "namespace_prefix"?)` {
					t.Errorf("warnings %v", s.Warnings)
				}
				if s.NamespacePrefix != DefaultNamespacePrefix {
					t.Errorf("prefix %q", s.NamespacePrefix)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := ParseSettings(tc.raw)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				var se *config.SettingError
				if !errors.As(err, &se) {
					t.Errorf("%T is no *config.SettingError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}
