package cloudinit_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/fault"
)

const (
	rancherURL = "https://rancher.site.example"
	secretPath = "secret/rancher/cluster-5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
	roleID     = "7c1f0c9e-2d43-4b8e-9b1a-0f6f0f1e5a11"
	secretID   = "e2c5d1f4-8a3b-4c6d-9e0f-1a2b3c4d5e6f"
)

var placeholderRe = regexp.MustCompile(`\{[a-z_]+\}`)

func vaultCreds() *cloudinit.VaultCredentials {
	return &cloudinit.VaultCredentials{Addr: "https://vault.site.example:8200", SecretPath: secretPath, RoleID: roleID, SecretID: secretID}
}

// cloudConfig is the rendered user_data decoded.
type cloudConfig struct {
	WriteFiles []struct {
		Path, Content, Permissions string
	} `yaml:"write_files"`
	Bootcmd   []string                  `yaml:"bootcmd"`
	DiskSetup map[string]map[string]any `yaml:"disk_setup"`
	FSSetup   []map[string]any          `yaml:"fs_setup"`
	Mounts    [][]string                `yaml:"mounts"`
	Users     []map[string]any          `yaml:"users"`
	Runcmd    []any                     `yaml:"runcmd"`
}

func decode(t *testing.T, userData []byte) cloudConfig {
	t.Helper()
	if !strings.HasPrefix(string(userData), "#cloud-config\n") {
		t.Fatalf("user_data does not start with #cloud-config:\n%.200s", userData)
	}
	var c cloudConfig
	if err := yaml.Unmarshal(userData, &c); err != nil {
		t.Fatalf("user_data is not YAML: %v\n%s", err, userData)
	}
	return c
}

func (c cloudConfig) file(t *testing.T, path string) string {
	t.Helper()
	for _, f := range c.WriteFiles {
		if f.Path == path {
			return f.Content
		}
	}
	t.Fatalf("no write_files entry %s", path)
	return ""
}

func (c cloudConfig) hasFile(path string) bool {
	for _, f := range c.WriteFiles {
		if f.Path == path {
			return true
		}
	}
	return false
}

func render(t *testing.T, s cloudinit.Settings, n cloudinit.Node) cloudConfig {
	t.Helper()
	out, err := cloudinit.Render(s, n)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

func TestDefaultTemplateWithVault(t *testing.T) {
	tests := []struct {
		name      string
		role      cloudinit.Role
		flags     string
		notFlags  []string
		roleValue string
	}{
		{"a server node joins as etcd and control plane", cloudinit.Server, "--token $RKE_TOKEN --etcd --controlplane", []string{"--worker"}, `RKE_ROLE="server"`},
		{"an agent node joins as worker", cloudinit.Agent, "--token $RKE_TOKEN --worker", []string{"--etcd", "--controlplane"}, `RKE_ROLE="agent"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := render(t, cloudinit.Settings{RancherURL: rancherURL + "/"}, cloudinit.Node{Role: tt.role, Vault: vaultCreds()})
			if got := c.file(t, "/etc/vault/role-id"); got != roleID+"\n" {
				t.Errorf("role-id file %q", got)
			}
			if got := c.file(t, "/etc/vault/secret-id"); got != secretID+"\n" {
				t.Errorf("secret-id file %q", got)
			}
			script := c.file(t, "/var/opt/scripts/rke-install.sh")
			for _, want := range []string{
				tt.roleValue,
				`VAULT_ADDR="https://vault.site.example:8200"`,
				`VAULT_ROLE_ID="` + roleID + `"`,
				`VAULT_SECRET_ID="` + secretID + `"`,
				"vault write --field=token auth/approle/login role_id=${VAULT_ROLE_ID} secret_id=${VAULT_SECRET_ID}",
				"vault kv get -field=token " + secretPath + ")",
				"curl -fL " + rancherURL + "/system-agent-install.sh |",
				"--server " + rancherURL + " --label 'cattle.io/os=linux' " + tt.flags + "\n",
				"${VAULT_VERSION}", // {{ }} escapes became single braces
			} {
				if !strings.Contains(script, want) {
					t.Errorf("rke-install.sh lacks %q:\n%s", want, script)
				}
			}
			for _, bad := range append(tt.notFlags, "rancher-aio.cloud.ut.ee", "-tls-skip-verify", "--insecure", "--ca-checksum", "{{", "}}") {
				if strings.Contains(script, bad) {
					t.Errorf("rke-install.sh holds %q", bad)
				}
			}
			if m := placeholderRe.FindString(script); m != "" {
				t.Errorf("rke-install.sh holds the unrendered %s", m)
			}
			if len(c.Users) != 1 || c.Users[0]["name"] != "root" {
				t.Errorf("users %v", c.Users)
			}
		})
	}
}

func TestTLSFlagsFollowTheSettings(t *testing.T) {
	const checksum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	tests := []struct {
		name  string
		s     cloudinit.Settings
		vault func(*cloudinit.VaultCredentials)
		want  []string
	}{
		{"vault_tls_verify false skips Vault's certificate check", cloudinit.Settings{},
			func(v *cloudinit.VaultCredentials) { v.TLSSkipVerify = true },
			[]string{"vault write -tls-skip-verify --field=token", "vault kv get -tls-skip-verify -field=token"}},
		{"a Vault CA is written and given to the CLI", cloudinit.Settings{},
			func(v *cloudinit.VaultCredentials) { v.CACertPEM = pem },
			[]string{"vault write -ca-cert=/etc/vault/ca.pem --field=token", "vault kv get -ca-cert=/etc/vault/ca.pem -field=token"}},
		{"an unverified Rancher gets curl --insecure", cloudinit.Settings{RancherInsecure: true}, nil,
			[]string{"curl -fL --insecure " + rancherURL}},
		{"a Rancher CA checksum goes to the agent", cloudinit.Settings{RancherCAChecksum: strings.ToUpper(checksum)}, nil,
			[]string{"--token $RKE_TOKEN --ca-checksum " + checksum + " --worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := vaultCreds()
			if tt.vault != nil {
				tt.vault(v)
			}
			tt.s.RancherURL = rancherURL
			c := render(t, tt.s, cloudinit.Node{Role: cloudinit.Agent, Vault: v})
			script := c.file(t, "/var/opt/scripts/rke-install.sh")
			for _, w := range tt.want {
				if !strings.Contains(script, w) {
					t.Errorf("lacks %q:\n%s", w, script)
				}
			}
			if v.CACertPEM != "" && c.file(t, cloudinit.VaultCAPath) != pem {
				t.Errorf("CA file %q", c.file(t, cloudinit.VaultCAPath))
			}
		})
	}
}

func TestDefaultTemplateWithoutVaultCarriesTheToken(t *testing.T) {
	c := render(t, cloudinit.Settings{RancherURL: rancherURL}, cloudinit.Node{Role: cloudinit.Server, RegistrationToken: "regtoken123"})
	script := c.file(t, "/var/opt/scripts/rke-install.sh")
	if !strings.Contains(script, `RKE_TOKEN="regtoken123"`) || !strings.Contains(script, "--token $RKE_TOKEN --etcd --controlplane") {
		t.Fatalf("script:\n%s", script)
	}
	if strings.Contains(script, "vault") || c.hasFile("/etc/vault/role-id") || c.hasFile("/etc/vault/secret-id") {
		t.Fatalf("Vault parts without Vault:\n%s", script)
	}
	if _, err := cloudinit.Render(cloudinit.Settings{RancherURL: rancherURL}, cloudinit.Node{Role: cloudinit.Server}); !errors.Is(err, fault.Invalid) {
		t.Fatalf("neither Vault nor token: %v", err)
	}
}

func TestDataVolumesRewriteDisksPerNode(t *testing.T) {
	vols := []cloudinit.Volume{
		{MountPoint: "/opt/rke2_storage"},
		{MountPoint: "/opt/longhorn_storage", Filesystem: "xfs"},
		{}, // attached, formatted, not mounted
	}
	tests := []struct {
		name, driver string
		devs         []string
	}{
		{"the default driver is sd", "", []string{"/dev/sdb", "/dev/sdc", "/dev/sdd"}},
		{"virtio disks", "vd", []string{"/dev/vdb", "/dev/vdc", "/dev/vdd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := render(t, cloudinit.Settings{RancherURL: rancherURL, DiskDriver: tt.driver},
				cloudinit.Node{Role: cloudinit.Agent, Vault: vaultCreds(), Volumes: vols})
			if len(c.Bootcmd) != 3 || len(c.DiskSetup) != 3 || len(c.FSSetup) != 3 {
				t.Fatalf("bootcmd %d, disk_setup %d, fs_setup %d entries; want 3 each", len(c.Bootcmd), len(c.DiskSetup), len(c.FSSetup))
			}
			for i, dev := range tt.devs {
				if !strings.Contains(c.Bootcmd[i], `filename_to_wait_for="`+dev+`"`) || !strings.Contains(c.Bootcmd[i], "timeout=600") {
					t.Errorf("bootcmd[%d] does not wait for %s:\n%s", i, dev, c.Bootcmd[i])
				}
				ds, ok := c.DiskSetup[dev]
				if !ok || ds["table_type"] != "gpt" || ds["layout"] != true || ds["overwrite"] != false {
					t.Errorf("disk_setup[%s] = %v; want gpt, layout true, overwrite false (booleans)", dev, ds)
				}
				if c.FSSetup[i]["device"] != dev {
					t.Errorf("fs_setup[%d] = %v", i, c.FSSetup[i])
				}
			}
			if c.FSSetup[0]["filesystem"] != "ext4" || c.FSSetup[1]["filesystem"] != "xfs" || c.FSSetup[2]["filesystem"] != "ext4" {
				t.Errorf("filesystems %v", c.FSSetup)
			}
			want := [][]string{{tt.devs[0], "/opt/rke2_storage"}, {tt.devs[1], "/opt/longhorn_storage"}}
			if len(c.Mounts) != 2 || strings.Join(c.Mounts[0], " ") != strings.Join(want[0], " ") || strings.Join(c.Mounts[1], " ") != strings.Join(want[1], " ") {
				t.Errorf("mounts %v, want %v", c.Mounts, want)
			}
			// The rest of the template survives the rewrite.
			if c.file(t, "/etc/vault/secret-id") != secretID+"\n" || len(c.Runcmd) == 0 {
				t.Error("write_files or runcmd lost in the rewrite")
			}
		})
	}
}

func TestCustomTemplates(t *testing.T) {
	tests := []struct {
		name     string
		template string
		vault    bool
		want     string // in the output
		wantErr  string // in the error
	}{
		{"names are substituted and doubled braces are literal",
			"#cloud-config\nruncmd:\n  - echo {rke_role} {rancher_url} {{literal}} ${{X}} {vault_secret_path}\n", true,
			"echo agent " + rancherURL + " {literal} ${X} " + secretPath, ""},
		{"an unknown placeholder is named with its line",
			"#cloud-config\nruncmd:\n  - echo {rke_role}\n  - echo {vault_role}\n", true, "", "line 4: unknown placeholder {vault_role}"},
		{"a Vault placeholder without Vault says so",
			"#cloud-config\nruncmd:\n  - echo {vault_role_id}\n", false, "", "placeholder {vault_role_id} needs Vault, and vault_host is not set"},
		{"the token placeholder with Vault is refused",
			"#cloud-config\nruncmd:\n  - echo {registration_token}\n", true, "", "{registration_token} is not available with Vault"},
		{"a single closing brace is refused", "#cloud-config\nruncmd:\n  - echo }\n", true, "", "line 3: a single '}'"},
		{"an unterminated placeholder is refused", "#cloud-config\nruncmd:\n  - echo {rke_role\n", true, "", "line 3: a single '{'"},
		{"positional placeholders are refused", "#cloud-config\nx: {}\n", true, "", "placeholder {}: positional"},
		{"format specs are refused", "#cloud-config\nx: {rke_role:>10}\n", true, "", "placeholder {rke_role:>10}: conversions"},
		{"a template that is not YAML is refused", "#cloud-config\nx: [unclosed\n", true, "", "does not render to valid YAML"},
		{"a shell script passes as it is", "#!/bin/sh\necho {rke_role_flags}\n", true, "#!/bin/sh\necho --worker\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := cloudinit.LoadTemplate(tt.template)
			var out []byte
			if err == nil {
				n := cloudinit.Node{Role: cloudinit.Agent, RegistrationToken: "tok"}
				if tt.vault {
					n.Vault = vaultCreds()
				}
				out, err = cloudinit.Render(cloudinit.Settings{Template: tmpl, RancherURL: rancherURL}, n)
				if err == nil {
					if cerr := tmpl.Check(tt.vault); cerr != nil {
						t.Fatalf("Check refused a template Render accepted: %v", cerr)
					}
				} else if cerr := tmpl.Check(tt.vault); cerr == nil && !strings.Contains(tt.wantErr, "YAML") {
					t.Fatalf("Check accepted a template Render refused (%v)", err)
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if !errors.Is(err, fault.Invalid) {
					t.Fatalf("template error %v is not terminal", err)
				}
				if !strings.Contains(err.Error(), "cloud_init_template (inline)") {
					t.Fatalf("error %q does not name the template", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

func TestTemplateFromAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(path, []byte("#cloud-config\nruncmd:\n  - register {rancher_url} {rke_role_flags}\n  - {oops}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmpl, err := cloudinit.LoadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cloudinit.Render(cloudinit.Settings{Template: tmpl, RancherURL: rancherURL}, cloudinit.Node{Role: cloudinit.Server, Vault: vaultCreds()})
	if err == nil || !strings.Contains(err.Error(), "cloud_init_template ("+path+") line 4: unknown placeholder {oops}") {
		t.Fatalf("error %v", err)
	}
	if _, err := cloudinit.LoadTemplate(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, fault.Invalid) {
		t.Fatalf("missing file: %v", err)
	}
	if tmpl, err := cloudinit.LoadTemplate("#cloud-config {rke_role}"); err != nil || tmpl.Source() != "inline" {
		t.Fatalf("a one-line value not starting with /: %v, %v; want an inline template", tmpl, err)
	}
	if tmpl, err := cloudinit.LoadTemplate(""); tmpl != nil || err != nil {
		t.Fatalf("empty setting: %v, %v; want the default (nil)", tmpl, err)
	}
}

func TestDefaultTemplatesAreComplete(t *testing.T) {
	for _, withVault := range []bool{true, false} {
		tmpl, err := cloudinit.ParseTemplate(cloudinit.DefaultTemplate(withVault), "default")
		if err != nil {
			t.Fatal(err)
		}
		if err := tmpl.Check(withVault); err != nil {
			t.Fatalf("default template (vault %v): %v", withVault, err)
		}
	}
}

func TestBadNodeValuesAreRefused(t *testing.T) {
	tests := []struct {
		name string
		s    cloudinit.Settings
		n    cloudinit.Node
	}{
		{"an unknown role", cloudinit.Settings{RancherURL: rancherURL}, cloudinit.Node{Role: "worker", Vault: vaultCreds()}},
		{"no Rancher URL", cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Agent, Vault: vaultCreds()}},
		{"a secret-id that would break the script", cloudinit.Settings{RancherURL: rancherURL},
			cloudinit.Node{Role: cloudinit.Agent, Vault: &cloudinit.VaultCredentials{Addr: "https://v:8200", SecretPath: secretPath, RoleID: roleID, SecretID: `x"; rm -rf /`}}},
		{"a CA checksum that is no sha256", cloudinit.Settings{RancherURL: rancherURL, RancherCAChecksum: "abc"},
			cloudinit.Node{Role: cloudinit.Agent, Vault: vaultCreds()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := cloudinit.Render(tt.s, tt.n); !errors.Is(err, fault.Invalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
		})
	}
}

func TestSSHKeysGoToSSHAuthorizedKeys(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtest alice@example"
	tests := []struct {
		name     string
		template string
		want     []string
		wantErr  string
	}{
		{"the default template", "", []string{key}, ""},
		{"a template without the key", "#cloud-config\nruncmd: [echo {rke_role}]\n", []string{key}, ""},
		{"a template's own keys are kept", "#cloud-config\nssh_authorized_keys: [ssh-rsa AAAAB3 ops]\n", []string{"ssh-rsa AAAAB3 ops", key}, ""},
		{"an empty key in the template", "#cloud-config\nssh_authorized_keys:\n", []string{key}, ""},
		{"a template whose keys are not a list", "#cloud-config\nssh_authorized_keys: ops\n", nil, "ssh_authorized_keys is not a list"},
		{"a shell script cannot take a key", "#!/bin/sh\necho {rke_role}\n", nil, "is not a cloud-config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := cloudinit.LoadTemplate(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			if tmpl.CloudConfig() != (tt.wantErr != "is not a cloud-config") {
				t.Errorf("CloudConfig() = %v for %q", tmpl.CloudConfig(), tt.template)
			}
			out, err := cloudinit.Render(cloudinit.Settings{Template: tmpl, RancherURL: rancherURL},
				cloudinit.Node{Role: cloudinit.Server, Vault: vaultCreds(), AuthorizedKeys: []string{key}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, fault.Invalid) {
					t.Fatalf("error %v, want a terminal one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var c struct {
				Keys []string `yaml:"ssh_authorized_keys"`
			}
			if err := yaml.Unmarshal(out, &c); err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.Keys, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("ssh_authorized_keys %q, want %q", c.Keys, tt.want)
			}
		})
	}
}
