// Package app wires sitebus together: configuration, logging, tracing, the
// NATS connection (embedded server or external cluster), the bus, the HTTP
// endpoints for probes and metrics, and the services this process runs.
// `sitebus run` is a thin layer over Run.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/natsembed"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/coordinator"
	"github.com/sitebus/sitebus/services/drift"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
	"github.com/sitebus/sitebus/services/quota"
	"github.com/sitebus/sitebus/services/stompbridge"
	"github.com/sitebus/sitebus/services/usage"
)

// Service is one concern of sitebus. Run blocks until ctx ends; Ready tells
// /readyz whether the service can do its work now.
type Service interface {
	Name() string
	Run(ctx context.Context) error
	Ready(ctx context.Context) error
}

// ServiceNames lists the services `--only` accepts, in start order.
var ServiceNames = []string{stompbridge.Name, orderflow.Name, quota.Name, drift.Name, membership.Name, keycloaksync.Name, coordinator.Name, usage.Name, provisioner.Name}

// Options are the command-line settings of `sitebus run`; each non-empty
// field overrides the config file's sitebus section.
type Options struct {
	ConfigPath string
	// NATSURL selects an external NATS (JetStream) server or cluster.
	NATSURL string
	// NATSListen is where the embedded server listens, so the CLI tools and
	// other processes can reach it. Default 127.0.0.1:4222.
	NATSListen string
	DataDir    string
	HTTPAddr   string
	// Only runs a subset of the services (one Kubernetes Deployment per
	// service runs one each).
	Only []string
	// Mode runs the services that do the work of one of the Python agent's
	// modes (see Modes); it cannot be combined with Only.
	Mode string
	// LogLevel, when set, overrides WALDUR_LOG_LEVEL and the file's
	// log_level (a Python logging name, any case).
	LogLevel string
	Version  string
	// LogOutput receives the logs (default stderr).
	LogOutput io.Writer
	// Ready, when set, receives the HTTP address once /readyz can be asked.
	Ready func(httpAddr string)
	// HealthChecks, when set, are the checks behind the status page's
	// health (run by the process running the bridge).
	HealthChecks HealthChecks
}

// Run starts sitebus and blocks until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, opts Options) error {
	// A wrong mode or --only is named before the file is read.
	if _, err := selectServices(opts.Mode, opts.Only, nil); err != nil {
		return err
	}
	plan, err := LoadPlan(opts.ConfigPath)
	if err != nil {
		return err
	}
	cfg := plan.Config
	services, err := selectServices(opts.Mode, opts.Only, cfg.Sitebus.Services)
	if err != nil {
		return err
	}
	if err := applyOverrides(cfg, &opts); err != nil {
		return err
	}
	if err := checkEmbeddedReplicas(cfg); err != nil {
		return err
	}
	if opts.LogOutput == nil {
		opts.LogOutput = os.Stderr
	}
	log, err := telemetry.NewLogger(opts.LogOutput, cfg.Sitebus.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	log.Debug("log level", "level", cfg.LogLevel, "from", cfg.LogLevelSource())
	for _, w := range plan.Warnings {
		log.Warn("configuration: "+w.Msg, "file", w.Source, "line", w.Line, "offering", w.Offering, "key", w.Path)
	}
	tp, stopTracing, err := telemetry.SetupTracing(ctx, "sitebus", opts.Version)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(sctx)
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// The identity (and the data dir's lock) before the embedded server
	// opens its store in the same directory.
	id, err := loadIdentity(cfg.Sitebus.DataDir)
	if err != nil {
		return err
	}
	defer id.Close()
	log.Info("process identity", "identity", id.Name, "data_dir", cfg.Sitebus.DataDir)

	nc, stopNATS, err := connectNATS(cfg, &opts, log)
	if err != nil {
		return err
	}
	defer stopNATS()

	b, err := bus.New(nc, bus.Config{
		EventsMaxAge: cfg.Sitebus.Streams.EventsMaxAge, DuplicateWindow: cfg.Sitebus.Streams.DuplicateWindow,
		DLQMaxAge: cfg.Sitebus.Streams.DLQMaxAge, Replicas: cfg.Sitebus.Streams.Replicas,
		Ordering: BusOrdering(cfg),
		Logger:   log, Registerer: reg, TracerProvider: tp,
	})
	if err != nil {
		return err
	}
	offerings, err := waldurClients(plan, opts.Version, log, reg, tp)
	if err != nil {
		return err
	}

	h := newHealth(b, offerings)
	if h.status, err = statusHandler(plan, b, cfg.Sitebus.HTTPAddr, log); err != nil {
		return err
	}
	srv, addr, err := serveHTTP(cfg.Sitebus.HTTPAddr, reg, h, log)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if opts.Ready != nil {
		opts.Ready(addr)
	}

	// Streams first: with an external NATS that is still starting, wait for
	// it rather than fail, so a cluster can come up in any order. A replica
	// count the cluster cannot place is not waited for: it is a setting.
	if err := ensureStreams(ctx, b, log); err != nil {
		if ctx.Err() != nil {
			return nil // ctx ended while waiting
		}
		return replicasError(cfg, err)
	}
	h.streamsReady()

	deps := &deps{cfg: cfg, plan: plan, bus: b, offerings: offerings, log: log, reg: reg, tp: tp, version: opts.Version, identity: id.Name}
	deps.backends.d = deps
	var running []Service
	for _, name := range services {
		s, err := deps.build(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		running = append(running, s)
	}
	h.setServices(running)
	pub, err := statusPublisher(plan, b, running, opts.HealthChecks, id.Name, log)
	if err != nil {
		return err
	}
	log.Info("sitebus running", "services", services, "mode", opts.Mode, "http", addr, "version", opts.Version)

	var wg sync.WaitGroup
	if pub != nil {
		wg.Go(func() { pub.Run(ctx) })
	}
	errs := make(chan error, len(running))
	for _, s := range running {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", s.Name(), err)
			}
		})
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
		// A service's own stream or bucket refused for its replicas.
		err = replicasError(cfg, err)
		log.Error("service failed; shutting down", "err", err)
	}
	log.Info("shutting down")
	wg.Wait()
	return err
}

func applyOverrides(cfg *config.Root, o *Options) error {
	if o.LogLevel != "" {
		level, err := config.ParseLogLevel(o.LogLevel)
		if err != nil {
			return fmt.Errorf("--log-level: %w", err)
		}
		cfg.LogLevel = level
	}
	if o.NATSURL != "" {
		cfg.Sitebus.NATSURL = o.NATSURL
	}
	if o.DataDir != "" {
		cfg.Sitebus.DataDir = o.DataDir
	}
	if o.HTTPAddr != "" {
		cfg.Sitebus.HTTPAddr = o.HTTPAddr
	}
	if o.NATSListen == "" {
		o.NATSListen = "127.0.0.1:4222"
	}
	return nil
}

// selectServices says which services this process runs: a mode's (which
// replaces the file's sitebus.services, as a flag overrides the file),
// else --only, else sitebus.services, else all of them.
func selectServices(mode string, only, fromFile []string) ([]string, error) {
	if mode != "" {
		services, err := ModeServices(mode)
		if err != nil {
			return nil, err
		}
		if len(only) > 0 {
			return nil, fmt.Errorf("--mode %s and --only cannot be combined: the mode names its services itself (%s)", mode, strings.Join(services, ", "))
		}
		return services, nil
	}
	if len(only) == 0 {
		only = fromFile
	}
	if len(only) == 0 {
		return ServiceNames, nil
	}
	var out []string
	for _, name := range only {
		name = strings.TrimSpace(name)
		if !slices.Contains(ServiceNames, name) {
			return nil, fmt.Errorf("unknown service %q (known: %s)", name, strings.Join(ServiceNames, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// connectNATS starts the embedded server, or connects to an external one
// and keeps reconnecting forever: a NATS outage is waited out, not fatal.
func connectNATS(cfg *config.Root, o *Options, log *slog.Logger) (*nats.Conn, func(), error) {
	natsOpts := []nats.Option{
		nats.Name("sitebus"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	if cfg.Sitebus.NATSURL != "" {
		nc, err := nats.Connect(cfg.Sitebus.NATSURL, natsOpts...)
		if err != nil {
			return nil, nil, fmt.Errorf("NATS %s: %w", cfg.Sitebus.NATSURL, err)
		}
		return nc, func() { drain(nc) }, nil
	}
	storeDir := filepath.Join(cfg.Sitebus.DataDir, "jetstream")
	if err := os.MkdirAll(storeDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("data dir: %w", err)
	}
	var s *server.Server
	s, err := natsembed.Start(natsembed.Options{StoreDir: storeDir, Listen: o.NATSListen, Logger: log.With("component", "nats-server")})
	if err != nil {
		return nil, nil, err
	}
	log.Info("embedded NATS started", "listen", s.ClientURL(), "store", storeDir)
	nc, err := nats.Connect("", append(natsOpts, nats.InProcessServer(s))...)
	if err != nil {
		s.Shutdown()
		return nil, nil, err
	}
	return nc, func() { drain(nc); s.Shutdown(); s.WaitForShutdown() }, nil
}

func drain(nc *nats.Conn) {
	done := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(done) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		nc.Close()
	}
}

func ensureStreams(ctx context.Context, b *bus.Bus, log *slog.Logger) error {
	delay := 250 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := b.EnsureStreams(cctx)
		cancel()
		if err == nil || bus.IsInsufficientReplicas(err) {
			return err
		}
		log.Warn("JetStream not available yet; retrying", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}

// waldurClients builds one REST client per offering, in the plan's order.
func waldurClients(plan *Plan, version string, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) ([]stompbridge.Offering, error) {
	var out []stompbridge.Offering
	for _, op := range plan.Offerings {
		wc := op.Waldur
		wc.UserAgent = "sitebus/" + version
		wc.Logger = log.With("offering", op.Config.Name)
		wc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return telemetry.InstrumentTransport(rt, "waldur", reg, tp)
		}
		c, err := waldur.New(wc)
		if err != nil {
			return nil, fmt.Errorf("offering %q: %w", op.Config.Name, err)
		}
		out = append(out, stompbridge.Offering{Config: op.Config, Waldur: c})
	}
	return out, nil
}

// deps are what services are built from.
type deps struct {
	cfg       *config.Root
	plan      *Plan // offerings[i] is plan.Offerings[i]
	bus       *bus.Bus
	offerings []stompbridge.Offering
	log       *slog.Logger
	reg       prometheus.Registerer
	tp        trace.TracerProvider
	version   string
	identity  string
	backends  backends
	// transport, when set, wraps every platform transport after the
	// instrumentation (sitebus orders explain's dry run).
	transport func(rt http.RoundTripper, target string) http.RoundTripper
}

func (d *deps) build(name string) (Service, error) {
	switch name {
	case stompbridge.Name:
		return stompbridge.New(d.bus, stompbridge.Config{
			Offerings: d.offerings, Stomp: d.cfg.Sitebus.Stomp, OrderPollPeriod: d.cfg.Periods.OrderProcess,
			AgentVersion: d.version, Logger: d.log, Registerer: d.reg, TracerProvider: d.tp,
		})
	case orderflow.Name:
		offerings, err := d.orderOfferings()
		if err != nil {
			return nil, err
		}
		return orderflow.New(d.bus, orderflow.Config{Offerings: offerings, Owner: d.identity, Logger: d.log, Registerer: d.reg, TracerProvider: d.tp})
	case quota.Name:
		offerings, err := d.quotaOfferings()
		if err != nil {
			return nil, err
		}
		return quota.New(d.bus, quota.Config{Offerings: offerings, SyncPeriod: d.cfg.Periods.MembershipSync, Logger: d.log, Registerer: d.reg, TracerProvider: d.tp})
	case drift.Name:
		offerings, err := d.driftOfferings()
		if err != nil {
			return nil, err
		}
		return drift.New(drift.Config{Offerings: offerings, Period: d.cfg.Sitebus.DriftPeriod, JS: d.bus.JetStream(), Replicas: d.bus.Replicas(),
			Identity: d.identity, Logger: d.log}), nil
	case keycloaksync.Name:
		offerings, err := d.keycloakOfferings()
		if err != nil {
			return nil, err
		}
		return keycloaksync.New(d.bus, keycloaksync.Config{Offerings: offerings, Logger: d.log, Registerer: d.reg,
			PendingPeriod: d.cfg.Sitebus.KeycloakPendingPeriod, CleanupPeriod: d.cfg.Sitebus.KeycloakCleanupPeriod})
	case membership.Name:
		offerings, err := d.membershipOfferings()
		if err != nil {
			return nil, err
		}
		return membership.New(d.bus, membership.Config{Offerings: offerings, Period: d.cfg.Periods.MembershipSync, Logger: d.log, Registerer: d.reg})
	case usage.Name:
		offerings, err := d.usageOfferings()
		if err != nil {
			return nil, err
		}
		// config.Validate has checked the zone.
		loc, err := time.LoadLocation(d.cfg.Timezone)
		if err != nil {
			return nil, err
		}
		return usage.New(usage.Config{Offerings: offerings, Period: d.cfg.Periods.Report, ReportingPeriods: d.cfg.ReportingPeriods,
			Location: loc, Logger: d.log, Registerer: d.reg, TracerProvider: d.tp})
	case coordinator.Name:
		return coordinator.New(d.bus, coordinator.Config{Logger: d.log, Registerer: d.reg, TracerProvider: d.tp, LeaseTTL: d.cfg.Sitebus.SagaLease, Owner: d.identity, Retention: d.cfg.Sitebus.Streams.SagaRetention})
	case provisioner.Name:
		offerings, err := d.clusterOfferings()
		if err != nil {
			return nil, err
		}
		vclusters, err := d.vclusterOfferings()
		if err != nil {
			return nil, err
		}
		return d.clusterProvisioner(offerings, vclusters)
	}
	return nil, errors.New("unknown service")
}

func serveHTTP(addr string, reg *prometheus.Registry, h *health, log *slog.Logger) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("http listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h.mux(reg), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	return srv, ln.Addr().String(), nil
}
