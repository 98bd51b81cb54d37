// Package orderflow is sitebus's one order lifecycle, and the order
// service built on it.
//
// A Flow (flow.go) takes every order event of its offerings: it reads the
// order from Waldur (the event is only a poke; Waldur is the source of
// truth), approves it if it waits for the provider, has the offering's
// Handler create, update or terminate (directly, or by naming a saga), and
// settles the order done or erred exactly once (settle.go, the only place
// in sitebus's services that does). Each kind of offering supplies its
// verbs as a Handler, as controllers supply Reconcile to controller-runtime.
//
// The order service (this file) is a Flow over the offerings whose objects
// are a backend.Backend (backend.go), plus the commands their sagas' steps
// send it (commands.go). The cluster-provisioner runs its own Flow over the
// rancher-cluster offerings (services/app wires it).
package orderflow

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// Name is the service name used by --only.
const Name = contract.Order

// Offering is one offering this service processes orders for.
type Offering struct {
	Config  *config.Offering
	Waldur  Client
	Backend backend.Backend
	// Groups, when set, names the identity-provider groups (by slug) that
	// grant access to the offering's objects: creates and terminations
	// then run as sagas that also make and remove those groups.
	Groups func(slug string) []contract.GroupSpec
	// ProjectGroups, when set, names a Rancher project's Keycloak groups
	// by the Waldur project's slug: the cluster's group, then the child
	// under it that is bound to the project (last). Creates and
	// terminations then run as the rancher-project sagas.
	ProjectGroups func(projectSlug string) []contract.GroupSpec
	// SyncTeam: after a direct create, ask the membership service to apply
	// the resource's team before the order is done (backends that bind
	// users themselves, as OKD's role bindings; no saga, no Keycloak).
	SyncTeam bool
	// Update applies an Update order (the quota service's handler, which
	// owns limits; services/app wires it). Nil refuses Update orders.
	Update func(ctx context.Context, o *Order) (*Saga, error)
}

// Config configures the service.
type Config struct {
	Offerings []Offering
	// MaxDeliver and Backoff bound retries of transient failures (platform
	// or Waldur unreachable); zero values take the bus's defaults (about
	// four minutes of retries) before the order is marked erred.
	MaxDeliver int
	Backoff    bus.Backoff

	// Owner names this process in the resource leases it holds in cluster
	// ordering mode (the process identity).
	Owner string

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

// Validate reports a configuration the service cannot run with.
func (c *Config) Validate() error {
	var errs []error
	for _, o := range c.Offerings {
		if o.Config == nil || o.Waldur == nil || o.Backend == nil {
			errs = append(errs, errors.New("order: offering without config, Waldur client or backend"))
		}
	}
	return errors.Join(errs...)
}

// orderConcurrency is how many order events one process handles at once:
// order handlers mostly wait on Waldur and the platform, and ordering keys
// keep each order and resource to one handler, so a burst of orders for
// many resources runs this wide.
const orderConcurrency = 32

// Service is the order service.
type Service struct {
	*Flow
	bus      *bus.Bus
	cfg      Config
	backends map[string]Offering // by offering UUID hex
}

// New builds the service; Run starts it.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{bus: b, cfg: cfg, backends: map[string]Offering{}}
	sync := func(ctx context.Context, req *sitebusv1.SyncResourceRequest, key string) error {
		_, err := contract.SyncResource.Call(ctx, b, req, bus.WithKey(key))
		return err
	}
	for _, o := range cfg.Offerings {
		s.backends[o.Config.OfferingUUIDHex()] = o
	}
	f, err := NewFlow(b, flowConfig(cfg, sync))
	if err != nil {
		return nil, err
	}
	s.Flow = f
	return s, nil
}

// flowConfig is the order lifecycle of the service's offerings: each
// offering's verbs are a backendHandler. sync reaches the membership
// service.
func flowConfig(cfg Config, sync teamSyncer) FlowConfig {
	fc := FlowConfig{
		Name: Name, OutcomesConsumer: "order-saga-outcomes", Sagas: contract.Definitions(0),
		MaxDeliver: cfg.MaxDeliver, Backoff: cfg.Backoff, Concurrency: orderConcurrency, Owner: cfg.Owner,
		Logger: cfg.Logger, Registerer: cfg.Registerer, TracerProvider: cfg.TracerProvider,
	}
	for _, o := range cfg.Offerings {
		fc.Offerings = append(fc.Offerings, FlowOffering{UUID: o.Config.OfferingUUIDHex(), Name: o.Config.Name, Waldur: o.Waldur,
			Handler: &backendHandler{o: o, kind: kindOf(o), sync: sync}})
	}
	return fc
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run serves the saga steps and consumes order events until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if len(s.backends) == 0 {
		<-ctx.Done()
		return nil
	}
	// Commands and saga outcomes first, so a saga never waits on a service
	// that is not listening; order events last.
	defer s.subs.Stop(30 * time.Second)
	cmds, err := s.serveCommands(ctx)
	s.subs.Add(cmds...)
	if err != nil {
		return err
	}
	if err := s.start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
