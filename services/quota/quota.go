// Package quota is the quota service: it alone changes limits on the
// platforms. It applies Update orders (sent by the order service as
// commands) and Waldur's resource flags — paused → zero quota, downscaled →
// minimal quota, neither → the limits from before — on every resource event
// and, as a full reconcile, every membership-sync period.
package quota

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
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/order"
)

// Name is the service name used by --only.
const Name = "quota"

// Config configures the service.
type Config struct {
	Offerings []order.Offering
	// SyncPeriod is how often every resource's flags are reconciled
	// (the membership-sync period). Zero disables the periodic pass.
	SyncPeriod time.Duration
	MaxDeliver int
	Backoff    bus.Backoff

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

// Service is the quota service.
type Service struct {
	bus       *bus.Bus
	cfg       Config
	log       *slog.Logger
	tracer    trace.Tracer
	offerings map[string]order.Offering
	applied   *prometheus.CounterVec
	subs      bus.Subscriptions
}

// New builds the service; Run starts it.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	cfg.setDefaults()
	s := &Service{
		bus: b, cfg: cfg, log: cfg.Logger.With("service", Name),
		tracer:    cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/services/quota"),
		offerings: map[string]order.Offering{},
		applied: telemetry.Register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_quota_changes_total", Help: "Quota changes applied, by kind (limits, pause, downscale, restore) and outcome.",
		}, []string{"kind", "outcome"})),
	}
	for _, o := range cfg.Offerings {
		if o.Config == nil || o.Waldur == nil || o.Backend == nil {
			return nil, errors.New("quota: offering without config, Waldur client or backend")
		}
		s.offerings[o.Config.OfferingUUIDHex()] = o
	}
	return s, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run consumes limit commands and resource events, and reconciles flags
// periodically, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if len(s.offerings) == 0 {
		<-ctx.Done()
		return nil
	}
	if err := s.bus.EnsureCommandStream(ctx, order.QuotaCommandService); err != nil {
		return err
	}
	var resourceSubjects []string
	for hex := range s.offerings {
		resourceSubjects = append(resourceSubjects, "waldur."+hex+"."+events.Resource)
	}
	slices.Sort(resourceSubjects)
	cmds, err := bus.Subscribe(ctx, s.bus, bus.ConsumerConfig{
		Name: "quota-commands", Stream: bus.CommandStream(order.QuotaCommandService),
		// cmd.quota.<offering>.<partition>, partitioned by resource like
		// the resource events: in cluster ordering two Update orders of
		// one resource set its limits one after the other, in order,
		// whichever replicas take them (the last limits win).
		FilterSubjects: []string{order.QuotaCommandFilter}, Partitioned: true,
		MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff,
	}, s.handleCommand)
	if err != nil {
		return err
	}
	defer s.subs.Stop(30 * time.Second)
	s.subs.Add(cmds)
	flags, err := bus.Subscribe(ctx, s.bus, bus.ConsumerConfig{
		Name: "quota-flags", Stream: bus.EventsStream, FilterSubjects: resourceSubjects, Partitioned: true,
		MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff, OrderingKey: bus.WaldurEventKey,
	}, s.handleResourceEvent)
	if err != nil {
		return err
	}
	s.subs.Add(flags)
	if s.cfg.SyncPeriod > 0 {
		s.syncLoop(ctx)
	} else {
		<-ctx.Done()
	}
	return nil
}

// Ready reports whether both consumers are bound.
func (s *Service) Ready(ctx context.Context) error {
	if len(s.offerings) == 0 {
		return nil
	}
	return s.subs.Check(ctx)
}

// handleCommand applies an Update order's limits and settles the order.
func (s *Service) handleCommand(ctx context.Context, cmd *sitebusv1.ProvisionCommand) error {
	ref := cmd.GetResource()
	o, ok := s.offerings[ref.GetOfferingUuid()]
	if !ok {
		return bus.Terminal(fmt.Errorf("limits command for offering %s, which is not configured here", ref.GetOfferingUuid()))
	}
	log := s.log.With("offering", o.Config.Name, "order", cmd.OrderUuid, "resource", ref.GetResourceUuid())
	err := s.applyLimits(ctx, o, ref, cmd.Limits)
	if err == nil {
		return order.MarkDone(ctx, o.Waldur, cmd.OrderUuid)
	}
	d, _ := bus.DeliveryFromContext(ctx)
	if d.LastAttempt() || fault.IsTerminal(err) {
		return order.MarkErred(ctx, o.Waldur, cmd.OrderUuid, err, log)
	}
	return err
}

func (s *Service) applyLimits(ctx context.Context, o order.Offering, ref *sitebusv1.ResourceRef, limits map[string]float64) error {
	backendID := ref.GetBackendId()
	if backendID == "" {
		res, err := o.Waldur.GetResource(ctx, ref.GetResourceUuid())
		if err != nil {
			return fmt.Errorf("get resource %s: %w", ref.GetResourceUuid(), err)
		}
		backendID = res.BackendID
	}
	if backendID == "" {
		return fault.Errorf(fault.Invalid, "resource %q (%s) has no backend object to set limits on", ref.GetName(), ref.GetResourceUuid())
	}
	changed, err := o.Backend.SetLimits(ctx, backendID, limits)
	if err != nil {
		s.applied.WithLabelValues("limits", "error").Inc()
		return fmt.Errorf("set limits on %s %s: %w", o.Backend.Type(), backendID, err)
	}
	s.applied.WithLabelValues("limits", map[bool]string{true: "changed", false: "unchanged"}[changed]).Inc()
	s.log.Info("limits applied", "backend_id", backendID, "changed", changed)
	return nil
}

// handleResourceEvent reads the resource's current flags from Waldur (the
// event may be stale or out of order) and applies them.
func (s *Service) handleResourceEvent(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
	o, ok := s.offerings[ev.OfferingUuid]
	if !ok {
		return bus.Terminal(fmt.Errorf("resource event for offering %s, which is not configured here", ev.OfferingUuid))
	}
	var msg events.ResourceMessage
	if err := json.Unmarshal(ev.Body, &msg); err != nil || !events.IsUUID(msg.ResourceUUID) {
		return bus.Terminal(fmt.Errorf("resource event body %q has no valid resource_uuid", ev.Body))
	}
	res, err := o.Waldur.GetResource(ctx, msg.ResourceUUID)
	if waldur.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get resource %s: %w", msg.ResourceUUID, err)
	}
	err = s.applyFlags(ctx, o, res)
	if fault.IsTerminal(err) {
		return bus.Terminal(err)
	}
	return err
}

// applyFlags brings one resource's quota in line with its flags.
func (s *Service) applyFlags(ctx context.Context, o order.Offering, res *waldur.Resource) error {
	if res.BackendID == "" || (res.State != waldur.ResourceStateOK && res.State != waldur.ResourceStateErred) {
		return nil
	}
	kind, apply := "restore", o.Backend.Restore
	switch {
	case res.Paused:
		kind, apply = "pause", o.Backend.Pause
	case res.Downscaled:
		kind, apply = "downscale", o.Backend.Downscale
	}
	if err := apply(ctx, res.BackendID); err != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return nil // not created yet, or gone: the order service owns that
		}
		s.applied.WithLabelValues(kind, "error").Inc()
		return fmt.Errorf("%s %s %s: %w", kind, o.Backend.Type(), res.BackendID, err)
	}
	s.applied.WithLabelValues(kind, "ok").Inc()
	s.log.Debug("flags applied", "backend_id", res.BackendID, "action", kind)
	return nil
}

func (s *Service) syncLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SyncPeriod)
	defer t.Stop()
	for {
		for _, o := range s.offerings {
			s.syncOffering(ctx, o)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) syncOffering(ctx context.Context, o order.Offering) {
	ctx, span := s.tracer.Start(ctx, "reconcile resource flags")
	defer span.End()
	resources, err := o.Waldur.ListProviderResources(ctx, waldur.ResourceFilter{
		OfferingUUID: o.Config.WaldurOfferingUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred},
		DropEmptyBackendID: true,
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("listing resources for the flag reconcile failed; next try at the next period", "offering", o.Config.Name, "err", err)
		}
		return
	}
	for i := range resources {
		if err := s.applyFlags(ctx, o, &resources[i]); err != nil && ctx.Err() == nil {
			s.log.Warn("flag reconcile of a resource failed", "offering", o.Config.Name, "resource", resources[i].UUID, "err", err)
		}
	}
}
