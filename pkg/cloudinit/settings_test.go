package cloudinit_test

import (
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/config"
)

func TestDecodeSettings(t *testing.T) {
	tests := []struct {
		name      string
		raw       map[string]any
		withVault bool
		wantErr   string
		custom    bool
	}{
		{"nothing set takes the default template", map[string]any{}, true, "", false},
		{"an inline template is checked against the site", map[string]any{"cloud_init_template": "#cloud-config\nruncmd:\n  - echo {vault_role_id}\n"},
			false, "backend_settings.cloud_init_template: cloud_init_template (inline) line 3: placeholder {vault_role_id} needs Vault", false},
		{"an inline template that fits is kept", map[string]any{"cloud_init_template": "#cloud-config\nruncmd:\n  - echo {registration_token}\n"},
			false, "", true},
		{"a disk driver that is no device prefix is refused", map[string]any{"node_disk_driver": "/dev/sd"}, true, "backend_settings.node_disk_driver", false},
		{"a template file that is not there is refused", map[string]any{"cloud_init_template": "/nonexistent/template.yaml"}, true,
			"backend_settings.cloud_init_template", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := config.SettingsDecoder{Raw: tt.raw, Prefix: "backend_settings."}
			s := cloudinit.Decode(&d, tt.withVault)
			err := d.Err()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (s.Template != nil) != tt.custom {
				t.Fatalf("custom template = %v, want %v", s.Template != nil, tt.custom)
			}
		})
	}
}
