package harness

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/testenv"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/vault/vaulttest"
)

// Vault is a real Vault dev server (built by `make vault`): in memory,
// unsealed, KV v2 at secret/, approle enabled, on a free loopback port.
type Vault struct {
	// Addr is 127.0.0.1:port; URL is http://Addr.
	Addr, URL string
	// RootToken is the dev server's root token (random per server).
	RootToken string
	// LogPath is the server's log file; its tail is shown when the test
	// fails.
	LogPath string
	proc    *Process
}

// StartVault starts a Vault dev server for t and stops it when t ends. A
// missing binary skips t locally and fails it in CI (testenv.Require).
func StartVault(t testing.TB) *Vault {
	t.Helper()
	bin, err := vaulttest.Binary()
	testenv.Require(t, "Vault server", err)
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	v := &Vault{Addr: addr, URL: "http://" + addr, RootToken: vaulttest.RandomToken(), LogPath: filepath.Join(dir, "vault.log")}
	logf, err := os.Create(v.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	// HOME in the test's directory: nothing the server or a token helper
	// writes lands in the developer's home.
	p, err := StartProcessTee("vault", bin, vaulttest.DevArgs(addr, v.RootToken), []string{"HOME=" + dir}, logf)
	if err != nil {
		t.Fatal(err)
	}
	v.proc = p
	p.cleanup(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vault log: %s", v.LogPath)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := vaulttest.WaitHealthy(ctx, addr, p.Exited); err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(30))
	}
	if err := vaulttest.EnableAppRole(ctx, v.Settings()); err != nil {
		t.Fatal(err)
	}
	return v
}

// Settings are offering settings pointing at the server with its root
// token (plain HTTP: vault_host is the http:// URL).
func (v *Vault) Settings() vault.Settings { return vaulttest.Settings(v.Addr, v.RootToken) }

// Client is a management client with the root token.
func (v *Vault) Client(t testing.TB) *vault.Client {
	t.Helper()
	c, err := vault.New(v.Settings())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
