package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// SitebusOptions configure one `sitebus run` process.
type SitebusOptions struct {
	// Config is the YAML configuration file's content.
	Config string
	// NATSURL points sitebus at an external server; empty runs the
	// embedded one on a free loopback port.
	NATSURL string
	// Args are extra `sitebus run` arguments (e.g. --only).
	Args []string
	// Env is added to the environment (e.g. SITEBUS_FAILPOINTS=...).
	Env []string
	// Name labels the process in failure output; default "sitebus".
	Name string
}

// Sitebus is a running `sitebus run` process.
type Sitebus struct {
	*Process
	HTTPAddr string
	// NATSURL is where its events can be read (the embedded server's
	// listener, or the external server).
	NATSURL string
	DataDir string
	opts    SitebusOptions
	args    []string
	t       testing.TB
	// configPath is the file of opts.Config, read at every Start.
	configPath string
}

// StartSitebus builds and starts sitebus and waits until /readyz says 200.
func StartSitebus(t testing.TB, opts SitebusOptions) *Sitebus {
	t.Helper()
	s := PrepareSitebus(t, opts)
	s.Start(opts.Env...)
	s.WaitReady(60 * time.Second)
	return s
}

// PrepareSitebus builds sitebus and chooses its files and ports without
// starting it.
func PrepareSitebus(t testing.TB, opts SitebusOptions) *Sitebus {
	t.Helper()
	bin, err := SitebusBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(opts.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Sitebus{
		HTTPAddr: "127.0.0.1:" + strconv.Itoa(FreePort(t)),
		DataDir:  filepath.Join(dir, "data"),
		opts:     opts, t: t, configPath: cfg,
	}
	s.args = []string{"run", "-c", cfg, "--http-addr", s.HTTPAddr, "--data-dir", s.DataDir}
	if opts.NATSURL != "" {
		s.NATSURL = opts.NATSURL
		s.args = append(s.args, "--nats-url", opts.NATSURL)
	} else {
		port := FreePort(t)
		s.NATSURL = "nats://127.0.0.1:" + strconv.Itoa(port)
		s.args = append(s.args, "--nats-listen", "127.0.0.1:"+strconv.Itoa(port))
	}
	s.args = append(s.args, opts.Args...)
	if opts.Name == "" {
		s.opts.Name = "sitebus"
	}
	s.Process = &Process{Name: s.opts.Name, done: make(chan struct{})}
	close(s.done)
	_ = bin
	return s
}

// Rewrite replaces the configuration file, for the next Start (sitebus
// reads it when it starts).
func (s *Sitebus) Rewrite(config string) {
	s.t.Helper()
	if err := os.WriteFile(s.configPath, []byte(config), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.opts.Config = config
}

// Start starts (or, after Kill/Stop, restarts) the process with the same
// files and ports, adding env to the environment.
func (s *Sitebus) Start(env ...string) {
	s.t.Helper()
	bin, _ := SitebusBinary()
	p, err := StartProcess(s.opts.Name, bin, s.args, env)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Process = p
	// Registered before the kill so that it runs after it (cleanups run
	// last first), on the whole output of this run.
	secrets := configuredSecrets(s.opts.Config, append(append([]string(nil), s.opts.Env...), env...))
	s.t.Cleanup(func() { checkNoSecrets(s.t, p, secrets) })
	p.cleanup(s.t)
}

// WaitReady waits until /readyz answers 200.
func (s *Sitebus) WaitReady(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if s.Exited() {
			s.t.Fatalf("sitebus exited before it was ready:\n%s", s.Tail(40))
		}
		code, body := s.Get("/readyz")
		if code == http.StatusOK {
			return
		}
		last = fmt.Sprintf("%d %s", code, body)
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("sitebus not ready within %s (last /readyz: %s)\n%s", timeout, last, s.Tail(40))
}

// Get fetches a path from the HTTP endpoint; code 0 means no answer.
func (s *Sitebus) Get(path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
