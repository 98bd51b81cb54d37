package vmboot_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/vmboot"
	"github.com/sitebus/sitebus/pkg/cloudinit"
)

func renderFake(t *testing.T, s cloudinit.Settings, n cloudinit.Node) []byte {
	t.Helper()
	if s.RancherURL == "" {
		s.RancherURL = rancherURL
	}
	out, err := cloudinit.Render(s, n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fakeVault() *cloudinit.VaultCredentials {
	return &cloudinit.VaultCredentials{Addr: "https://vault.site.example:8200",
		SecretPath: "secret/rancher/cluster-" + clusterUUID, RoleID: "role-1", SecretID: "secret-1"}
}

func TestParseReadsWhatTheNodeWouldDo(t *testing.T) {
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	withCA := fakeVault()
	withCA.CACertPEM = pem
	skip := fakeVault()
	skip.TLSSkipVerify = true
	tests := []struct {
		name string
		s    cloudinit.Settings
		n    cloudinit.Node
		want vmboot.Plan
	}{
		{"a server with Vault", cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Server, Vault: fakeVault()},
			vmboot.Plan{Vault: true, RoleID: "role-1", SecretID: "secret-1", VaultAddr: "https://vault.site.example:8200",
				SecretPath: "secret/rancher/cluster-" + clusterUUID, Server: rancherURL,
				InstallURL: rancherURL + "/system-agent-install.sh", Roles: []string{"etcd", "controlplane"}}},
		{"an agent with TLS flags", cloudinit.Settings{RancherInsecure: true, RancherCAChecksum: strings.Repeat("ab", 32)},
			cloudinit.Node{Role: cloudinit.Agent, Vault: skip},
			vmboot.Plan{Vault: true, RoleID: "role-1", SecretID: "secret-1", VaultAddr: "https://vault.site.example:8200",
				SecretPath: "secret/rancher/cluster-" + clusterUUID, VaultSkipVerify: true, Server: rancherURL,
				InstallURL: rancherURL + "/system-agent-install.sh", Roles: []string{"worker"},
				CurlInsecure: true, CAChecksum: strings.Repeat("ab", 32)}},
		{"a Vault CA comes from write_files", cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Agent, Vault: withCA},
			vmboot.Plan{Vault: true, RoleID: "role-1", SecretID: "secret-1", VaultAddr: "https://vault.site.example:8200",
				SecretPath: "secret/rancher/cluster-" + clusterUUID, VaultCACert: pem, Server: rancherURL,
				InstallURL: rancherURL + "/system-agent-install.sh", Roles: []string{"worker"}}},
		{"no Vault: the token is in the script", cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Agent, RegistrationToken: "tok123"},
			vmboot.Plan{Token: "tok123", Server: rancherURL, InstallURL: rancherURL + "/system-agent-install.sh", Roles: []string{"worker"}}},
		{"the order's SSH key", cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Agent, RegistrationToken: "tok123", AuthorizedKeys: []string{"ssh-ed25519 AAAAC3 alice"}},
			vmboot.Plan{Token: "tok123", Server: rancherURL, InstallURL: rancherURL + "/system-agent-install.sh", Roles: []string{"worker"},
				AuthorizedKeys: []string{"ssh-ed25519 AAAAC3 alice"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := vmboot.Parse(renderFake(t, tt.s, tt.n))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, tt.want) {
				t.Fatalf("plan\n%+v\nwant\n%+v", p, tt.want)
			}
		})
	}
}

func TestBrokenUserDataFailsTheBoot(t *testing.T) {
	good := string(renderFake(t, cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Server, Vault: fakeVault()}))
	tests := []struct {
		name, userData, wantErr string
	}{
		{"not a cloud-config", "#!/bin/sh\necho hi\n", "#cloud-config"},
		{"not YAML", "#cloud-config\nwrite_files: [\n", "cannot parse"},
		{"no install script", "#cloud-config\nruncmd: [echo]\n", "0 write_files entries"},
		{"the secret-id file differs from the script's",
			strings.Replace(good, "      secret-1\n", "      secret-2\n", 1), "/etc/vault/secret-id does not hold the secret-id"},
		{"curl fetches another server's script",
			strings.Replace(good, "curl -fL "+rancherURL, "curl -fL https://rancher-aio.cloud.ut.ee", 1), "not the install script of --server"},
		{"no role flag", strings.Replace(good, " --etcd --controlplane", "", 1), "no role flag"},
		{"the token is not the one from Vault", strings.Replace(good, "--token $RKE_TOKEN", "--token abc", 1), "not the token read from Vault"},
		{"an unset variable", strings.Replace(good, "--token $RKE_TOKEN", "--token $RKE_TOKN", 1), "$RKE_TOKN is not set"},
		{"no secret path", strings.Replace(good, " secret/rancher/cluster-"+clusterUUID+")", ")", 1), "reads no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.userData == good {
				t.Fatal("the replacement did not apply")
			}
			called := false
			err := vmboot.Boot(context.Background(), []byte(tt.userData), "k8s-node", func(context.Context, string, string, string, []string) error {
				called = true
				return nil
			})
			if !errors.Is(err, vmboot.ErrBadUserData) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want ErrBadUserData containing %q", err, tt.wantErr)
			}
			if called {
				t.Fatal("registered anyway")
			}
		})
	}
}

func TestBootWithoutVaultRegistersWithTheEmbeddedToken(t *testing.T) {
	var rec recorder
	ud := renderFake(t, cloudinit.Settings{}, cloudinit.Node{Role: cloudinit.Agent, RegistrationToken: "tok123"})
	if err := vmboot.Boot(context.Background(), ud, "k8s-agent", rec.register); err != nil {
		t.Fatal(err)
	}
	if got := rec.calls(); len(got) != 1 || got[0].token != "tok123" || got[0].server != rancherURL {
		t.Fatalf("registrations %+v", got)
	}
}

// mastermindInstall is the install block of Mastermind's template as it
// is (both branches, chosen by $RKE_ROLE), with the Rancher URL a
// placeholder: a site may keep its Mastermind template this way.
const mastermindInstall = `      if [ "$RKE_ROLE" == "server" ]; then
        CATTLE_AGENT_VAR_DIR="/opt/rke2_storage/agent" curl -fL {rancher_url}/system-agent-install.sh | sudo CATTLE_AGENT_VAR_DIR="/opt/rke2_storage/agent" sh -s - --server {rancher_url} --label 'cattle.io/os=linux' --token $RKE_TOKEN --etcd --controlplane
      else
        CATTLE_AGENT_VAR_DIR="/opt/rke2_storage/agent" curl -fL {rancher_url}/system-agent-install.sh | sudo CATTLE_AGENT_VAR_DIR="/opt/rke2_storage/agent" sh -s - --server {rancher_url} --label 'cattle.io/os=linux' --token $RKE_TOKEN --worker
      fi
`

func TestMastermindsRoleBranchesAreFollowed(t *testing.T) {
	def := cloudinit.DefaultTemplate(true)
	start := strings.Index(def, "      # --- Install RKE2")
	end := strings.Index(def, "\n\n  - path: /tmp/system-config.sh")
	if start < 0 || end < start {
		t.Fatal("default template changed: install block not found")
	}
	tmpl, err := cloudinit.ParseTemplate(def[:start]+mastermindInstall+def[end:], "mastermind")
	if err != nil {
		t.Fatal(err)
	}
	for role, want := range map[cloudinit.Role][]string{cloudinit.Server: {"etcd", "controlplane"}, cloudinit.Agent: {"worker"}} {
		p, err := vmboot.Parse(renderFake(t, cloudinit.Settings{Template: tmpl}, cloudinit.Node{Role: role, Vault: fakeVault()}))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Roles, want) {
			t.Errorf("%s: roles %v, want %v", role, p.Roles, want)
		}
	}
}
