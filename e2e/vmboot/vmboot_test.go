package vmboot_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/vmboot"
	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/vault"
)

const (
	clusterUUID = "5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
	rancherURL  = "https://rancher.site.example"
)

// registration is one call of the recording Register.
type registration struct {
	server, token, hostname string
	roles                   []string
}

type recorder struct {
	mu   sync.Mutex
	regs []registration
}

func (r *recorder) register(_ context.Context, server, token, hostname string, roles []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs = append(r.regs, registration{server, token, hostname, roles})
	return nil
}

func (r *recorder) calls() []registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.regs)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// site is a real Vault holding a cluster's provisioning objects with
// registrationToken, as the provisioner leaves them before creating nodes.
type site struct {
	vault *harness.Vault
	c     *vault.Client
	cl    vault.Cluster
}

func newSite(t *testing.T, registrationToken string) site {
	t.Helper()
	v := harness.StartVault(t)
	c := v.Client(t)
	cl, err := vault.ParseCluster(clusterUUID)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ensure(ctxFor(t), cl, registrationToken); err != nil {
		t.Fatal(err)
	}
	return site{vault: v, c: c, cl: cl}
}

// userData renders a node's user_data as the provisioner does: a fresh
// secret-id per node.
func (s site) userData(t *testing.T, tmpl *cloudinit.Template, rancher string, role cloudinit.Role) []byte {
	t.Helper()
	ctx := ctxFor(t)
	roleID, err := s.c.RoleID(ctx, s.cl)
	if err != nil {
		t.Fatal(err)
	}
	secretID, err := s.c.NewSecretID(ctx, s.cl, "node")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloudinit.Render(cloudinit.Settings{Template: tmpl, RancherURL: rancher}, cloudinit.Node{
		Role:    role,
		Volumes: []cloudinit.Volume{{MountPoint: "/opt/rke2_storage"}},
		Vault:   &cloudinit.VaultCredentials{Addr: s.c.Address(), SecretPath: s.cl.CLISecretPath(), RoleID: roleID, SecretID: secretID},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBootAgainstRealVault(t *testing.T) {
	s := newSite(t, "rancher-reg-token")
	noRoleID, err := cloudinit.ParseTemplate(strings.Replace(strings.Replace(cloudinit.DefaultTemplate(true),
		"  - path: /etc/vault/role-id\n    content: |\n      {vault_role_id}\n", "", 1),
		`VAULT_ROLE_ID="{vault_role_id}"`, `VAULT_ROLE_ID=""`, 1), "no role-id")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a server's user_data registers it with Rancher's token as etcd and control plane", func(t *testing.T) {
		var rec recorder
		if err := vmboot.Boot(ctxFor(t), s.userData(t, nil, rancherURL, cloudinit.Server), "k8s-server-1", rec.register); err != nil {
			t.Fatal(err)
		}
		got := rec.calls()
		want := registration{rancherURL, "rancher-reg-token", "k8s-server-1", []string{"etcd", "controlplane"}}
		if len(got) != 1 || got[0].server != want.server || got[0].token != want.token || got[0].hostname != want.hostname ||
			!slices.Equal(got[0].roles, want.roles) {
			t.Fatalf("registrations %+v, want [%+v]", got, want)
		}
	})

	t.Run("an agent registers as worker", func(t *testing.T) {
		var rec recorder
		if err := vmboot.Boot(ctxFor(t), s.userData(t, nil, rancherURL, cloudinit.Agent), "k8s-agent-1", rec.register); err != nil {
			t.Fatal(err)
		}
		if got := rec.calls(); len(got) != 1 || !slices.Equal(got[0].roles, []string{"worker"}) {
			t.Fatalf("registrations %+v", got)
		}
	})

	t.Run("a used secret-id fails the boot", func(t *testing.T) {
		var rec recorder
		ud := s.userData(t, nil, rancherURL, cloudinit.Agent)
		if err := vmboot.Boot(ctxFor(t), ud, "k8s-agent-2", rec.register); err != nil {
			t.Fatal(err)
		}
		// The same user_data on a second VM (or a rebuilt one).
		err := vmboot.Boot(ctxFor(t), ud, "k8s-agent-3", rec.register)
		if !errors.Is(err, fault.Rejected) || !strings.Contains(err.Error(), "vault login") {
			t.Fatalf("second boot with the same secret-id: %v; want Vault's refusal", err)
		}
		if n := len(rec.calls()); n != 1 {
			t.Fatalf("%d registrations, want 1", n)
		}
	})

	t.Run("a template without the role-id fails the boot", func(t *testing.T) {
		var rec recorder
		err := vmboot.Boot(ctxFor(t), s.userData(t, noRoleID, rancherURL, cloudinit.Agent), "k8s-agent-4", rec.register)
		if !errors.Is(err, vmboot.ErrBadUserData) || !strings.Contains(err.Error(), "/etc/vault/role-id") {
			t.Fatalf("boot: %v; want the missing role-id named", err)
		}
		if len(rec.calls()) != 0 {
			t.Fatal("registered without a role-id")
		}
	})

	t.Run("a role whose policy is gone fails the boot", func(t *testing.T) {
		ud := s.userData(t, nil, rancherURL, cloudinit.Agent)
		deletePolicy(t, s.vault, s.cl.PolicyName())
		t.Cleanup(func() {
			if err := s.c.EnsurePolicy(context.Background(), s.cl); err != nil {
				t.Error(err)
			}
		})
		var rec recorder
		err := vmboot.Boot(ctxFor(t), ud, "k8s-agent-5", rec.register)
		if !vault.PermissionDenied(err) {
			t.Fatalf("boot: %v; want Vault's 403 on the secret", err)
		}
		if len(rec.calls()) != 0 {
			t.Fatal("registered without the token")
		}
	})
}

// deletePolicy removes a policy behind the client's back, as an operator
// (or a half-done cleanup) might.
func deletePolicy(t *testing.T, v *harness.Vault, name string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t), http.MethodDelete, v.URL+"/v1/sys/policies/acl/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Vault-Token", v.RootToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete policy: %s", resp.Status)
	}
}

// TestBootRegistersWithTheRancherSimulator is the whole chain: Rancher
// issues the token, Vault keeps it, the node's user_data gets it back and
// the node appears in the simulator's cluster.
func TestBootRegistersWithTheRancherSimulator(t *testing.T) {
	const clusterID = "c-m-vmboot"
	sim := ranchersim.NewTestServer(t, ranchersim.Options{ClusterID: clusterID, ClusterName: "vmboot"})
	status, raw := simkit.TestCall(ctxFor(t), t, http.DefaultClient, http.MethodPost, sim.URL(), "/v3/clusterregistrationtokens",
		"application/json", map[string]any{"clusterId": clusterID},
		func(r *http.Request) { r.SetBasicAuth(ranchersim.DefaultAccessKey, ranchersim.DefaultSecretKey) })
	var created struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &created); status != http.StatusCreated || err != nil || created.Token == "" {
		t.Fatalf("create registration token: %d %s", status, raw)
	}
	token := created.Token
	s := newSite(t, token)
	register := vmboot.RancherSim(nil)
	if err := vmboot.Boot(ctxFor(t), s.userData(t, nil, sim.URL(), cloudinit.Server), "k8s-vmboot-server-1", register); err != nil {
		t.Fatal(err)
	}
	nodes := sim.Nodes(clusterID)
	if len(nodes) != 1 || nodes[0].Hostname != "k8s-vmboot-server-1" || !nodes[0].Etcd || !nodes[0].ControlPlane || nodes[0].Worker {
		t.Fatalf("simulator nodes %+v; want the server with etcd and control plane", nodes)
	}

	// A token Rancher never issued (a stale secret) is refused as the
	// real agent's connect is.
	if err := s.c.EnsureToken(ctxFor(t), s.cl, "stale-token"); err != nil {
		t.Fatal(err)
	}
	err := vmboot.Boot(ctxFor(t), s.userData(t, nil, sim.URL(), cloudinit.Agent), "k8s-vmboot-agent-1", register)
	if !errors.Is(err, ranchersim.ErrRegistrationRefused) {
		t.Fatalf("boot with a token Rancher does not know: %v", err)
	}
}
