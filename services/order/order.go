// Package order is the order service: it turns Waldur order events into
// platform objects. For every order event it reads the order from Waldur
// (the event is only a poke; Waldur is the source of truth), approves it if
// it waits for the provider, creates or deletes the backend object, reports
// the result to Waldur and marks the order done or erred. Update orders go
// to the quota service, which owns limits.
package order

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keylock"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/sagas"
)

// Name is the service name used by --only.
const Name = "order"

// Offering is one offering this service processes orders for.
type Offering struct {
	Config  *config.Offering
	Waldur  *waldur.Client
	Backend backend.Backend
	// Groups, when set, names the identity-provider groups (by slug) that
	// grant access to the offering's objects: creates and terminations
	// then run as sagas that also make and remove those groups.
	Groups func(slug string) []sagas.GroupSpec
	// ProjectGroups, when set, names a Rancher project's Keycloak groups
	// by the Waldur project's slug: the cluster's group, then the child
	// under it that is bound to the project (last). Creates and
	// terminations then run as the rancher-project sagas.
	ProjectGroups func(projectSlug string) []sagas.GroupSpec
	// SyncTeam: after a direct create, ask the membership service to apply
	// the resource's team before the order is done (backends that bind
	// users themselves, as OKD's role bindings; no saga, no Keycloak).
	SyncTeam bool
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

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
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

// Service is the order service.
type Service struct {
	bus       *bus.Bus
	cfg       Config
	log       *slog.Logger
	tracer    trace.Tracer
	offerings map[string]Offering // by offering UUID hex
	coord     *saga.Coordinator
	// resources serialises work on one Waldur resource: in this process
	// (the bus's Locker), and in cluster ordering mode across replicas too
	// (leases), since an order event's subject names the order, not the
	// resource it changes.
	resources keylock.Locker
	subs      bus.Subscriptions
	outcomes  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
}

// New builds the service; Run starts it.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		bus: b, cfg: cfg, log: cfg.Logger.With("service", Name),
		tracer:    cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/services/order"),
		offerings: map[string]Offering{},
		outcomes: telemetry.Register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_orders_total", Help: "Orders settled by the order service, by type and outcome (done, erred, skipped, delegated).",
		}, []string{"type", "outcome"})),
		latency: telemetry.Register(cfg.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sitebus_order_seconds", Help: "From the event entering sitebus to the order settled in Waldur, by type.",
			Buckets: prometheus.ExponentialBuckets(0.002, 2, 16),
		}, []string{"type"})),
	}
	for _, o := range cfg.Offerings {
		s.offerings[o.Config.OfferingUUIDHex()] = o
	}
	// A coordinator client: it starts sagas; the saga-coordinator service
	// runs them. Starting one may create the saga bucket: with the bus's
	// replica count, or the two would rescale it back and forth.
	coord, err := saga.New(b.JetStream(), saga.Config{Logger: s.log, Replicas: b.Replicas()})
	if err != nil {
		return nil, err
	}
	for _, def := range sagas.Definitions(0) {
		if err := coord.Register(def); err != nil {
			return nil, err
		}
	}
	s.coord = coord
	return s, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run consumes order events until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var filters []string
	for hex := range s.offerings {
		filters = append(filters, "waldur."+hex+"."+events.Order)
	}
	slices.Sort(filters)
	if len(filters) == 0 {
		<-ctx.Done()
		return nil
	}
	if err := s.bus.EnsureCommandStream(ctx, QuotaCommandService); err != nil {
		return err
	}
	s.resources = s.bus.Locker()
	// In cluster ordering one order and one resource are held across
	// replicas with leases: the order events by their order (one shared
	// consumer, see bus.ConsumerConfig.KeyLocker: the handler reads the
	// order from Waldur, so which of an order's events comes first does not
	// matter, only that two replicas never work on it at once), and the
	// resource an order changes once the order is read.
	var orderLocker keylock.Locker
	if s.bus.Ordering().Mode == bus.OrderingCluster {
		leases, err := s.bus.EnsureLeases(ctx, s.cfg.Owner, 0)
		if err != nil {
			return err
		}
		s.resources, orderLocker = leases, leases
	}
	// Commands and saga outcomes first, so a saga never waits on a service
	// that is not listening; order events last.
	defer s.subs.Stop(30 * time.Second)
	cmds, err := s.serveCommands(ctx)
	s.subs.Add(cmds...)
	if err != nil {
		return err
	}
	outcomes, err := s.watchOutcomes(ctx)
	if err != nil {
		return err
	}
	s.subs.Add(outcomes)
	sub, err := bus.Subscribe(ctx, s.bus, bus.ConsumerConfig{
		Name: Name, Stream: bus.EventsStream, FilterSubjects: filters, Partitioned: true,
		MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff,
		OrderingKey: bus.WaldurEventKey,
		KeyLocker:   orderLocker,
		// Order handlers mostly wait on Waldur and the platform, and
		// ordering keys keep each order and resource to one handler, so a
		// burst of orders for many resources runs this wide.
		Concurrency: orderConcurrency,
	}, s.handle)
	if err != nil {
		return err
	}
	s.subs.Add(sub)
	<-ctx.Done()
	return nil
}

// Ready reports whether the consumers are bound.
func (s *Service) Ready(ctx context.Context) error {
	if len(s.offerings) == 0 {
		return nil
	}
	return s.subs.Check(ctx)
}

// orderConcurrency is how many order events one process handles at once.
const orderConcurrency = 32

// QuotaCommandService is the command stream the order service sends Update
// orders to.
const QuotaCommandService = "quota"

func (s *Service) handle(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
	o, ok := s.offerings[ev.OfferingUuid]
	if !ok {
		return bus.Terminal(fmt.Errorf("order event for offering %s, which has no order_processing_backend here", ev.OfferingUuid))
	}
	var msg events.OrderMessage
	if err := json.Unmarshal(ev.Body, &msg); err != nil || !events.IsUUID(msg.OrderUUID) {
		return bus.Terminal(fmt.Errorf("order event body %q has no valid order_uuid", ev.Body))
	}
	if slices.Contains(events.NonActionableOrderStates, msg.OrderState) {
		return nil
	}
	ctx, span := s.tracer.Start(ctx, "order "+msg.OrderUUID, trace.WithAttributes(
		attribute.String("waldur.order_uuid", msg.OrderUUID), attribute.String("waldur.offering", o.Config.Name)))
	defer span.End()
	p := &processor{svc: s, o: o, orderUUID: msg.OrderUUID, log: s.log.With("offering", o.Config.Name, "order", msg.OrderUUID)}
	typ, outcome, err := p.process(ctx)
	if err != nil {
		d, _ := bus.DeliveryFromContext(ctx)
		if d.LastAttempt() || fault.IsTerminal(err) || isTerminalWaldur(err) {
			// Settle it: Waldur is told what failed, and the message is done.
			if erredErr := p.markErred(ctx, err); erredErr != nil {
				return erredErr
			}
			s.outcomes.WithLabelValues(typ, "erred").Inc()
			return nil
		}
		return err
	}
	s.outcomes.WithLabelValues(typ, outcome).Inc()
	if ev.ReceivedAt != nil && outcome == "done" {
		s.latency.WithLabelValues(typ).Observe(time.Since(ev.ReceivedAt.AsTime()).Seconds())
	}
	return nil
}

// isTerminalWaldur: Waldur refused our call with a 4xx other than 404/409
// (which process() handles itself), so repeating it cannot succeed.
func isTerminalWaldur(err error) bool {
	code := waldur.StatusCode(err)
	return code >= 400 && code < 500 && code != 429 && code != 404 && code != 409
}
