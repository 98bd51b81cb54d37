// Command sitebus-dev runs a local site for development (`make run`, Tilt):
// a scratch RabbitMQ node, the Waldur simulator creating demo orders and
// resource changes, a local Kubernetes control plane, the Keycloak,
// Rancher and OpenStack simulators (and Vault when `make vault` built it),
// a second control plane playing a virtual cluster, sitebus with its
// embedded NATS serving a ManagedNamespace, a Rancher, a rancher-cluster
// and a vcluster offering, and `sitebus events tail` so the events show as
// they are stored.
//
//	go run ./e2e/cmd/sitebus-dev -sitebus bin/sitebus
//
// With -config, sitebus runs against the real Waldur that file names and
// neither RabbitMQ nor the simulator is started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
)

type options struct {
	sitebus        string
	httpAddr       string
	natsListen     string
	simListen      string
	keycloakListen string
	rancher        bool
	rancherListen  string
	clusters       bool
	vclusters      bool
	osListen       string
	vaultListen    string
	demoInterval   time.Duration
	dataDir        string
	keepData       bool
	config         string
	only           string
}

func parseFlags() options {
	var o options
	harness.SitebusFlag(&o.sitebus)
	flag.StringVar(&o.httpAddr, "http-addr", "127.0.0.1:9090", "sitebus's /healthz, /readyz and /metrics address")
	flag.StringVar(&o.natsListen, "nats-listen", "127.0.0.1:4222", "client address of sitebus's embedded NATS server")
	flag.StringVar(&o.simListen, "sim-listen", "127.0.0.1:8080", "address of the Waldur simulator")
	flag.StringVar(&o.keycloakListen, "keycloak-listen", "127.0.0.1:8180", "address of the Keycloak simulator")
	flag.BoolVar(&o.rancher, "rancher", true, "also serve a Rancher offering against the Rancher simulator")
	flag.StringVar(&o.rancherListen, "rancher-listen", "127.0.0.1:8443", "address of the Rancher simulator (plain HTTP)")
	flag.BoolVar(&o.clusters, "clusters", true, "also serve a rancher-cluster offering (managed clusters on the OpenStack simulator; needs -rancher)")
	flag.BoolVar(&o.vclusters, "vclusters", true, "also serve a vcluster offering (a second control plane plays the virtual cluster, imported into the Rancher simulator; needs -rancher)")
	flag.StringVar(&o.osListen, "openstack-listen", "127.0.0.1:8774", "address of the OpenStack simulator (Keystone at /identity/v3)")
	flag.StringVar(&o.vaultListen, "vault-listen", "127.0.0.1:8200", "address of the Vault dev server (started when `make vault` has built it)")
	flag.DurationVar(&o.demoInterval, "demo-interval", 5*time.Second, "create a demo order this often (0: never)")
	flag.StringVar(&o.dataDir, "data-dir", "", "directory for the config and the JetStream store (default: a temporary one, removed on exit)")
	flag.BoolVar(&o.keepData, "keep-data", false, "keep the temporary data directory on exit")
	flag.StringVar(&o.config, "config", "", "a real sitebus config file; then no RabbitMQ or simulator is started")
	flag.StringVar(&o.only, "only", "", "passed to `sitebus run --only` (e.g. stomp-bridge, when no platform is reachable)")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	// Signals stay caught until run has cleaned up (stop): a second
	// Ctrl-C does not cut the shutdown short and leave a broker behind.
	ctx, stop, log := harness.CommandContext("sitebus-dev")
	defer stop()
	err := run(ctx, o, log)
	if err != nil && ctx.Err() != nil {
		log.Info("interrupted during start-up")
		err = nil
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sitebus-dev:", err)
		stop()
		os.Exit(1)
	}
}

// stack runs cleanups in reverse order of registration.
type stack []func()

func (s *stack) push(f func()) { *s = append(*s, f) }

func (s *stack) unwind() {
	for i := len(*s) - 1; i >= 0; i-- {
		(*s)[i]()
	}
	*s = nil
}

// simulator is one of the simulators sitebus-dev serves over HTTP (their
// simkit.Base gives them Start and Close).
type simulator interface {
	Start(addr string) error
	Close() error
}

// serve starts the named simulator on addr and stops it when cleanup
// unwinds.
func serve(sim simulator, name, addr string, log *slog.Logger, cleanup *stack) error {
	if err := sim.Start(addr); err != nil {
		return fmt.Errorf("start the %s simulator on %s: %w", name, addr, err)
	}
	cleanup.push(func() {
		log.Info("stopping the " + name + " simulator")
		_ = sim.Close()
	})
	return nil
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	var cleanup stack
	defer cleanup.unwind()

	bin, err := harness.SitebusBinaryOrBuild(o.sitebus)
	if err != nil {
		return err
	}
	dataDir, err := prepareDataDir(o, log, &cleanup)
	if err != nil {
		return err
	}
	var s *site
	cfgPath := o.config
	if cfgPath == "" {
		if s, err = startSite(ctx, o, log, &cleanup); err != nil {
			return err
		}
		if cfgPath, err = s.writeConfig(dataDir); err != nil {
			return err
		}
	}
	sb, err := startSitebus(ctx, bin, cfgPath, dataDir, o, log, &cleanup)
	if err != nil {
		return err
	}
	printBanner(o, s, bin, cfgPath, dataDir)
	if s != nil && o.demoInterval > 0 {
		demoCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); s.demo(demoCtx, o.demoInterval, log) }()
		cleanup.push(func() { cancel(); <-done })
	}
	tail, err := startTail(bin, o.natsListen, &cleanup)
	if err != nil {
		return err
	}
	return wait(ctx, sb, tail, log)
}

// wait blocks until a signal, or until sitebus ends by itself (an error).
func wait(ctx context.Context, sb, tail *harness.Process, log *slog.Logger) error {
	tailDone := tail.Done()
	for {
		select {
		case <-ctx.Done():
			log.Info("stopping")
			return nil
		case <-sb.Done():
			return fmt.Errorf("sitebus exited unexpectedly:\n%s", sb.Tail(20))
		case <-tailDone:
			log.Warn("sitebus events tail exited; sitebus keeps running", "output", tail.Tail(5))
			tailDone = nil
		}
	}
}

// prepareDataDir returns the directory for the config and the JetStream
// store. A temporary one is removed at exit unless -keep-data.
func prepareDataDir(o options, log *slog.Logger, cleanup *stack) (string, error) {
	if o.dataDir != "" {
		if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
			return "", fmt.Errorf("data dir: %w", err)
		}
		return filepath.Abs(o.dataDir)
	}
	dir, err := os.MkdirTemp("", "sitebus-dev-")
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	cleanup.push(func() {
		if o.keepData {
			log.Info("data directory kept", "dir", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir, nil
}

func startSitebus(ctx context.Context, bin, cfgPath, dataDir string, o options, log *slog.Logger, cleanup *stack) (*harness.Process, error) {
	args := []string{"run", "-c", cfgPath, "--http-addr", o.httpAddr,
		"--nats-listen", o.natsListen, "--data-dir", filepath.Join(dataDir, "nats")}
	if o.only != "" {
		args = append(args, "--only", o.only)
	}
	p, err := harness.StartProcessTee("sitebus", bin, args, nil, os.Stderr)
	if err != nil {
		return nil, err
	}
	cleanup.push(func() {
		log.Info("stopping sitebus")
		if err := p.Stop(20 * time.Second); err != nil && !isSignalExit(err) {
			log.Warn("sitebus stop", "err", err)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := harness.WaitReadyz(wctx, o.httpAddr, 100*time.Millisecond, p); err != nil {
		return nil, fmt.Errorf("sitebus: %w", err)
	}
	log.Info("sitebus ready", "http", o.httpAddr)
	return p, nil
}

// startTail runs `sitebus events tail` so the stored events show up.
func startTail(bin, natsListen string, cleanup *stack) (*harness.Process, error) {
	args := []string{"events", "tail", "--nats-url", "nats://" + natsListen, "--last", "10"}
	p, err := harness.StartProcessTee("events", bin, args, nil, os.Stdout)
	if err != nil {
		return nil, err
	}
	cleanup.push(func() { _ = p.Stop(5 * time.Second) })
	return p, nil
}

func isSignalExit(err error) bool {
	var ee interface{ ExitCode() int }
	return errors.As(err, &ee) && ee.ExitCode() == -1
}
