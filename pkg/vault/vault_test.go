package vault_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/vault/vaulttest"
)

const (
	clusterA = "5f1e4d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
	clusterB = "0a1b2c3d4e5f40718293a4b5c6d7e8f9"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCluster(t *testing.T, uuid string) vault.Cluster {
	t.Helper()
	cl, err := vault.ParseCluster(uuid)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// kvVersion reads the secret's current version with the root token (0 when
// there is none), to see whether a repeated Ensure wrote again.
func kvVersion(t *testing.T, srv *vaulttest.Server, cl vault.Cluster) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/secret/metadata/"+cl.SecretPath(), nil)
	req.Header.Set("X-Vault-Token", srv.RootToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0
	}
	var body struct {
		Data struct {
			CurrentVersion int `json:"current_version"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Data.CurrentVersion
}

func wantExists(t *testing.T, c *vault.Client, cl vault.Cluster, want bool) {
	t.Helper()
	p, r, s, err := c.Exists(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if p != want || r != want || s != want {
		t.Fatalf("policy, role, secret exist = %v, %v, %v; want all %v", p, r, s, want)
	}
}

// nodeBoot is what one node's rke-install.sh does: log in with its
// role-id and secret-id, read the token.
func nodeBoot(ctx context.Context, srv *vaulttest.Server, roleID, secretID, path string) (string, error) {
	n, err := vault.NodeLogin(ctx, srv.URL, true, "", roleID, secretID)
	if err != nil {
		return "", err
	}
	return n.ReadToken(ctx, path)
}

// TestProvisioningLifecycleAgainstRealVault is the contract the
// cluster-provisioner relies on, against the real Vault server.
func TestProvisioningLifecycleAgainstRealVault(t *testing.T) {
	srv := vaulttest.Start(t)
	ctx := ctxFor(t)
	c, err := vault.New(srv.Settings())
	if err != nil {
		t.Fatal(err)
	}
	cl := mustCluster(t, clusterA)

	if err := c.EnableAppRole(ctx); err != nil {
		t.Fatalf("approle already enabled must be a no-op: %v", err)
	}
	if err := c.Ensure(ctx, cl, "reg-token-1"); err != nil {
		t.Fatal(err)
	}
	wantExists(t, c, cl, true)
	if err := c.Ensure(ctx, cl, "reg-token-1"); err != nil {
		t.Fatalf("repeated Ensure: %v", err)
	}
	if v := kvVersion(t, srv, cl); v != 1 {
		t.Fatalf("after a repeated Ensure the secret has version %d, want 1 (no second write)", v)
	}
	roleID, err := c.RoleID(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.RoleID(ctx, cl); err != nil || again != roleID {
		t.Fatalf("role-id changed by a repeated Ensure: %q, %v", again, err)
	}

	t.Run("a node logs in once and reads the token", func(t *testing.T) {
		secretID, err := c.NewSecretID(ctx, cl, "k8s-node-1")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := nodeBoot(ctx, srv, roleID, secretID, cl.CLISecretPath())
		if err != nil || tok != "reg-token-1" {
			t.Fatalf("node read %q, %v; want reg-token-1", tok, err)
		}
		_, err = vault.NodeLogin(ctx, srv.URL, true, "", roleID, secretID)
		if !errors.Is(err, fault.Rejected) || !fault.IsTerminal(err) {
			t.Fatalf("second login with the same secret-id: %v; want a terminal error", err)
		}
		var e *vault.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Fatalf("second login: %#v; want Vault's 400", err)
		}
	})

	t.Run("the node token reads once", func(t *testing.T) {
		secretID, err := c.NewSecretID(ctx, cl, "k8s-node-2")
		if err != nil {
			t.Fatal(err)
		}
		n, err := vault.NodeLogin(ctx, srv.URL, true, "", roleID, secretID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.ReadToken(ctx, cl.CLISecretPath()); err != nil {
			t.Fatal(err)
		}
		if _, err := n.ReadToken(ctx, cl.CLISecretPath()); !errors.Is(err, fault.Rejected) {
			t.Fatalf("second read with a token_num_uses=1 token: %v; want refused", err)
		}
	})

	t.Run("a token without the cluster's policy gets 403", func(t *testing.T) {
		other := mustCluster(t, clusterB)
		if err := c.Ensure(ctx, other, "reg-token-b"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Cleanup(context.Background(), other) })
		otherRole, err := c.RoleID(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		sid, err := c.NewSecretID(ctx, other, "k8s-b-node-1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = nodeBoot(ctx, srv, otherRole, sid, cl.CLISecretPath())
		if !vault.PermissionDenied(err) || !errors.Is(err, fault.Rejected) || !fault.IsTerminal(err) {
			t.Fatalf("reading cluster A's secret with cluster B's role: %v; want 403, terminal", err)
		}
	})

	t.Run("cleanup removes all three and repeats as a no-op", func(t *testing.T) {
		if err := c.Cleanup(ctx, cl); err != nil {
			t.Fatal(err)
		}
		wantExists(t, c, cl, false)
		if err := c.Cleanup(ctx, cl); err != nil {
			t.Fatalf("cleanup of what is gone: %v", err)
		}
		if _, err := c.RoleID(ctx, cl); !errors.Is(err, fault.NotFound) {
			t.Fatalf("role-id of a deleted role: %v; want ErrNotFound", err)
		}
		if _, err := c.NewSecretID(ctx, cl, "late"); !errors.Is(err, fault.NotFound) {
			t.Fatalf("secret-id of a deleted role: %v; want ErrNotFound", err)
		}
	})

	t.Run("a node added after cleanup gets fresh credentials", func(t *testing.T) {
		// Mastermind's node-add reads the role it deleted at the end of
		// the create; here the node-add saga recreates all three.
		if err := c.Ensure(ctx, cl, "reg-token-2"); err != nil {
			t.Fatal(err)
		}
		newRole, err := c.RoleID(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		sid, err := c.NewSecretID(ctx, cl, "k8s-node-4")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := nodeBoot(ctx, srv, newRole, sid, cl.CLISecretPath())
		if err != nil || tok != "reg-token-2" {
			t.Fatalf("added node read %q, %v; want reg-token-2", tok, err)
		}
		if err := c.Cleanup(ctx, cl); err != nil {
			t.Fatal(err)
		}
		wantExists(t, c, cl, false)
	})
}

func TestEnsureTokenReplacesAChangedToken(t *testing.T) {
	srv := vaulttest.Start(t)
	ctx := ctxFor(t)
	c, err := vault.New(srv.Settings())
	if err != nil {
		t.Fatal(err)
	}
	cl := mustCluster(t, clusterA)
	for _, tok := range []string{"old", "new"} {
		if err := c.Ensure(ctx, cl, tok); err != nil {
			t.Fatal(err)
		}
	}
	if v := kvVersion(t, srv, cl); v != 2 {
		t.Fatalf("version %d, want 2", v)
	}
	rid, _ := c.RoleID(ctx, cl)
	sid, err := c.NewSecretID(ctx, cl, "n")
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := nodeBoot(ctx, srv, rid, sid, cl.CLISecretPath()); err != nil || tok != "new" {
		t.Fatalf("read %q, %v; want new", tok, err)
	}
}

func TestAManagementTokenWithoutRightsIsTerminal(t *testing.T) {
	srv := vaulttest.Start(t)
	s := srv.Settings()
	s.Token = "not-a-token"
	c, err := vault.New(s)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Ensure(ctxFor(t), mustCluster(t, clusterA), "tok")
	if !errors.Is(err, fault.Rejected) || !fault.IsTerminal(err) || !vault.PermissionDenied(err) {
		t.Fatalf("Ensure with a bad token: %v; want 403, terminal", err)
	}
}

func TestEnsureEnablesAppRoleWhenItIsOff(t *testing.T) {
	srv := vaulttest.Start(t)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/sys/auth/approle", nil)
	req.Header.Set("X-Vault-Token", srv.RootToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("disable approle: %s", resp.Status)
	}
	ctx := ctxFor(t)
	c, err := vault.New(srv.Settings())
	if err != nil {
		t.Fatal(err)
	}
	cl := mustCluster(t, clusterA)
	if err := c.Ensure(ctx, cl, "tok"); err != nil {
		t.Fatal(err)
	}
	rid, err := c.RoleID(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := c.NewSecretID(ctx, cl, "n")
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := nodeBoot(ctx, srv, rid, sid, cl.CLISecretPath()); err != nil || tok != "tok" {
		t.Fatalf("read %q, %v", tok, err)
	}
}
