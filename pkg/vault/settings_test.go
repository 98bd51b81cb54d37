package vault_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/vault"
)

func TestDecodeSettings(t *testing.T) {
	tests := []struct {
		name    string
		raw     map[string]any
		addr    string
		verify  bool
		wantErr string
	}{
		{"no vault_host turns Vault off", map[string]any{}, "", true, ""},
		{"a host means https on the default port", map[string]any{"vault_host": "vault.example.com", "vault_token": "s.topsecret"},
			"https://vault.example.com:8200", true, ""},
		{"the port may be a string as in Mastermind", map[string]any{"vault_host": "v.example", "vault_port": "8300", "vault_token": "s.topsecret"},
			"https://v.example:8300", true, ""},
		{"a URL keeps its scheme and gets the port", map[string]any{"vault_host": "http://127.0.0.1", "vault_port": 18200, "vault_token": "s.topsecret"},
			"http://127.0.0.1:18200", true, ""},
		{"a URL's own port wins", map[string]any{"vault_host": "https://v.example:9999", "vault_token": "s.topsecret"},
			"https://v.example:9999", true, ""},
		{"tls verify false is kept", map[string]any{"vault_host": "v.example", "vault_token": "s.topsecret", "vault_tls_verify": false},
			"https://v.example:8200", false, ""},
		{"Mastermind's vault_verify is read too", map[string]any{"vault_host": "v.example", "vault_token": "s.topsecret", "vault_verify": false},
			"https://v.example:8200", false, ""},
		{"vault_verify and vault_tls_verify must agree", map[string]any{"vault_host": "v.example", "vault_token": "s.topsecret", "vault_verify": false, "vault_tls_verify": true},
			"", true, "backend_settings.vault_verify"},
		{"a host with a port is refused", map[string]any{"vault_host": "v.example:8200", "vault_token": "s.topsecret"},
			"", true, "backend_settings.vault_host"},
		{"an IPv6 host gets brackets", map[string]any{"vault_host": "fd00::5", "vault_token": "s.topsecret"},
			"https://[fd00::5]:8200", true, ""},
		{"a token is required with a host", map[string]any{"vault_host": "v.example"}, "", true, "backend_settings.vault_token"},
		{"a port out of range is refused", map[string]any{"vault_host": "v.example", "vault_token": "s.topsecret", "vault_port": 70000},
			"", true, "backend_settings.vault_port"},
		{"a port that is no number is refused", map[string]any{"vault_host": "v.example", "vault_token": "s.topsecret", "vault_port": "eighty"},
			"", true, "backend_settings.vault_port"},
		{"a URL with a path is refused", map[string]any{"vault_host": "https://v.example/v1", "vault_token": "s.topsecret"},
			"", true, "backend_settings.vault_host"},
		{"a missing CA file is refused", map[string]any{"vault_host": "v.example", "vault_token": "s.topsecret", "vault_ca_file": "/nonexistent/ca.pem"},
			"", true, "backend_settings.vault_ca_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := config.SettingsDecoder{Raw: tt.raw, Prefix: "backend_settings."}
			s := vault.Decode(&d)
			err := d.Err()
			if err == nil {
				err = s.Validate("backend_settings.")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.TLSVerify != tt.verify {
				t.Fatalf("TLSVerify = %v, want %v", s.TLSVerify, tt.verify)
			}
			if tt.addr == "" {
				if s.Enabled() {
					t.Fatal("enabled without vault_host")
				}
				return
			}
			if a, err := s.Address(); err != nil || a != tt.addr {
				t.Fatalf("Address() = %q, %v; want %q", a, err, tt.addr)
			}
			if printed := fmt.Sprintf("%+v", s); strings.Contains(printed, "s.topsecret") {
				t.Fatalf("settings print the token: %s", printed)
			}
		})
	}
}

func TestClusterNames(t *testing.T) {
	for _, in := range []string{"5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f", "5F1E4D2C3B4A4C5D8E6F7A8B9C0D1E2F"} {
		cl, err := vault.ParseCluster(in)
		if err != nil {
			t.Fatal(err)
		}
		for got, want := range map[string]string{
			cl.PolicyName():    "rancher-provisioning-policy-5f1e4d2c3b4a4c5d8e6f7a8b9c0d1e2f",
			cl.RoleName():      "rancher-provisioning-role-5f1e4d2c3b4a4c5d8e6f7a8b9c0d1e2f",
			cl.SecretPath():    "rancher/cluster-5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f",
			cl.CLISecretPath(): "secret/rancher/cluster-5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f",
		} {
			if got != want {
				t.Errorf("%s: got %q, want %q", in, got, want)
			}
		}
		if !strings.Contains(cl.Policy(), `path "secret/data/rancher/cluster-5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"`) ||
			!strings.Contains(cl.Policy(), `capabilities = ["read"]`) {
			t.Errorf("policy %q", cl.Policy())
		}
	}
	for _, bad := range []string{"", "not-a-uuid", "5f1e4d2c3b4a4c5d8e6f7a8b9c0d1e2", "5f1e4d2c3b4a-4c5d-8e6f-7a8b9c0d1e2f", "5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2g"} {
		if _, err := vault.ParseCluster(bad); err == nil {
			t.Errorf("ParseCluster(%q) accepted", bad)
		}
	}
}
