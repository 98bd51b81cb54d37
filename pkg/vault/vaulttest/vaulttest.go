// Package vaulttest runs the real Vault server (built by `make vault`) as a
// dev server for tests: in-memory, unsealed, KV v2 at secret/, approle
// enabled, on a free loopback port, stopped when the test ends.
package vaulttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/vault"
)

// Version is the Vault release .ci/vault.sh builds.
const Version = "v1.21.0"

// Binary finds the Vault server: $SITEBUS_VAULT_BIN, else
// $SITEBUS_CACHE/vault-<Version>/vault (cache ~/.cache/sitebus).
func Binary() (string, error) {
	p := os.Getenv("SITEBUS_VAULT_BIN")
	if p == "" {
		cache := os.Getenv("SITEBUS_CACHE")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("vault binary: no SITEBUS_VAULT_BIN, SITEBUS_CACHE or home directory: %w", err)
			}
			cache = filepath.Join(home, ".cache", "sitebus")
		}
		p = filepath.Join(cache, "vault-"+Version, "vault")
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s missing: run `make vault` (builds Vault %s once, 15-30 min) or set SITEBUS_VAULT_BIN", p, Version)
	}
	if st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", p)
	}
	return p, nil
}

// Require returns the Vault binary, or skips t saying how to get one; in
// CI (CI=true), where a skipped test proves nothing, it fails t instead.
func Require(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("real Vault required in CI (CI=true): %v", err)
	}
	t.Skipf("skipping: real Vault not available: %v", err)
	return ""
}

// DevArgs are the arguments of a dev server on addr (host:port) whose root
// token is rootToken. -dev-no-store-token keeps it from writing the token
// to ~/.vault-token.
func DevArgs(addr, rootToken string) []string {
	return []string{"server", "-dev", "-dev-listen-address=" + addr, "-dev-root-token-id=" + rootToken,
		"-dev-no-store-token", "-log-level=info"}
}

// Env is the environment to run the server with: the caller's without any
// VAULT_* variable (which the server would read), HOME set to home.
func Env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VAULT_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// RandomToken is a root token for one test server.
func RandomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "root-" + hex.EncodeToString(b)
}

// WaitHealthy polls addr's /v1/sys/health until it says 200 (initialized,
// unsealed, active), ctx ends or exited (if not nil) reports the process
// gone.
func WaitHealthy(ctx context.Context, addr string, exited func() bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + addr + "/v1/sys/health"
	last := "no answer"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else if !errors.Is(err, context.Canceled) {
			last = err.Error()
		}
		if exited != nil && exited() {
			return fmt.Errorf("vault exited before /v1/sys/health said 200 (last: %s)", last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vault at %s not healthy (last /v1/sys/health: %s): %w", addr, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// Settings are the offering settings that point at a server on addr
// (host:port, plain HTTP) with token.
func Settings(addr, token string) vault.Settings {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	s := vault.DefaultSettings()
	s.Host = "http://" + host
	s.Port = p
	s.Token = config.Secret(token)
	return s
}

// EnableAppRole enables approle on a fresh server, as a site's Vault has it.
func EnableAppRole(ctx context.Context, s vault.Settings) error {
	c, err := vault.New(s)
	if err != nil {
		return err
	}
	return c.EnableAppRole(ctx)
}

// Server is a running dev server.
type Server struct {
	// Addr is host:port; URL is http://Addr.
	Addr, URL string
	// RootToken is the dev server's root token.
	RootToken string
	// Log is the server's output file.
	Log string
}

// Settings are offering settings pointing at the server with its root
// token.
func (s *Server) Settings() vault.Settings { return Settings(s.Addr, s.RootToken) }

// Start runs a dev server for t with approle enabled, or skips t (see
// Require). It is killed when t ends; on failure its log's tail is shown.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Require(t)
	dir := t.TempDir()
	var lastErr error
	// A port found free can be taken before the server binds it; try again
	// on another.
	for range 3 {
		s, err := start(t, bin, dir)
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatal(lastErr)
	return nil
}

func start(t testing.TB, bin, dir string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Addr: addr, URL: "http://" + addr, RootToken: RandomToken(), Log: filepath.Join(dir, "vault-"+strings.ReplaceAll(addr, ":", "-")+".log")}
	logf, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, DevArgs(addr, s.RootToken)...)
	cmd.Env = Env(dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start vault: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	exited := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := WaitHealthy(ctx, addr, exited); err != nil {
		stop()
		return nil, fmt.Errorf("%w\n%s", err, Tail(s.Log, 30))
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("--- vault %s log (tail) ---\n%s", addr, Tail(s.Log, 60))
		}
	})
	if err := EnableAppRole(ctx, s.Settings()); err != nil {
		return nil, fmt.Errorf("vault at %s: %w", addr, err)
	}
	return s, nil
}

// Tail is the last n lines of the file at path (or why it cannot be read).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
