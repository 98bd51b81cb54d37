// Package quota is the quota service: it alone changes limits on the
// platforms. It applies Update orders (its Limits are the Update verb of
// the order lifecycle, services/orderflow, which settles the order) and
// Waldur's resource flags — paused → zero quota, downscaled →
// minimal quota, neither → the limits from before — on every resource event
// and, as a full reconcile, every membership-sync period.
package quota

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Name is the service name used by --only.
const Name = contract.Quota

// Offering is one offering whose limits and flags this service manages.
type Offering struct {
	Config  *config.Offering
	Waldur  Waldur
	Backend backend.Backend
}

// Waldur is what the service asks of Waldur (waldur.Client).
type Waldur interface {
	GetResource(ctx context.Context, uuid string, fields ...string) (*waldur.Resource, error)
	ListProviderResources(ctx context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error)
}

var _ Waldur = (*waldur.Client)(nil)

// Config configures the service.
type Config struct {
	Offerings []Offering
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
	*Limits
	bus    *bus.Bus
	cfg    Config
	tracer trace.Tracer
	subs   bus.Subscriptions
}

// New builds the service; Run starts it.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	cfg.setDefaults()
	l, err := NewLimits(cfg.Offerings, cfg.Logger, cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Service{Limits: l, bus: b, cfg: cfg,
		tracer: cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/services/quota")}, nil
}

// Limits changes limits and flags on the offerings' platforms: the
// service's periodic and event-driven flags, and the Update verb of the
// order lifecycle (services/app hands Apply to services/orderflow).
type Limits struct {
	log       *slog.Logger
	offerings map[string]Offering
	applied   *prometheus.CounterVec
}

// NewLimits builds the Limits of offerings.
func NewLimits(offerings []Offering, log *slog.Logger, reg prometheus.Registerer) (*Limits, error) {
	if log == nil {
		log = slog.Default()
	}
	l := &Limits{log: log.With("service", Name), offerings: map[string]Offering{},
		applied: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_quota_changes_total", Help: "Quota changes applied, by kind (limits, pause, downscale, restore) and outcome (repaired: drift the drift pass put back).",
		}, []string{"kind", "outcome"})),
	}
	for _, o := range offerings {
		if o.Config == nil || o.Waldur == nil || o.Backend == nil {
			return nil, errors.New("quota: offering without config, Waldur client or backend")
		}
		l.offerings[o.Config.OfferingUUIDHex()] = o
	}
	return l, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run consumes resource events and reconciles flags
// periodically, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if len(s.offerings) == 0 {
		<-ctx.Done()
		return nil
	}
	var resourceSubjects []string
	for hex := range s.offerings {
		resourceSubjects = append(resourceSubjects, "waldur."+hex+"."+events.Resource)
	}
	slices.Sort(resourceSubjects)
	defer s.subs.Stop(30 * time.Second)
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

// Ready reports whether the consumer is bound.
func (s *Service) Ready(ctx context.Context) error {
	if len(s.offerings) == 0 {
		return nil
	}
	return s.subs.Check(ctx)
}

// Apply sets an Update order's limits on the resource's object: the
// Update verb of the order lifecycle, which settles the order from its
// error (a resource without an object can never get limits: invalid).
func (l *Limits) Apply(ctx context.Context, offeringUUID, resourceUUID string, limits map[string]float64) error {
	o, ok := l.offerings[offeringUUID]
	if !ok {
		return fault.Terminal(fmt.Errorf("limits for offering %s, which is not configured here", offeringUUID))
	}
	res, err := o.Waldur.GetResource(ctx, resourceUUID)
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID, err)
	}
	backendID := res.BackendID
	if backendID == "" {
		return fault.Errorf(fault.Invalid, "resource %q (%s) has no backend object to set limits on", res.Name, res.UUID)
	}
	changed, err := o.Backend.SetLimits(ctx, backendID, limits)
	if err != nil {
		l.applied.WithLabelValues("limits", "error").Inc()
		return fmt.Errorf("set limits on %s %s: %w", o.Backend.Type(), backendID, err)
	}
	l.applied.WithLabelValues("limits", map[bool]string{true: "changed", false: "unchanged"}[changed]).Inc()
	l.log.Info("limits applied", "offering", o.Config.Name, "resource", res.UUID, "backend_id", backendID, "changed", changed)
	return nil
}

// handleResourceEvent reads the resource's current flags from Waldur (the
// event may be stale or out of order) and applies them.
func (s *Service) handleResourceEvent(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
	o, ok := s.offerings[ev.OfferingUuid]
	if !ok {
		return fault.Terminal(fmt.Errorf("resource event for offering %s, which is not configured here", ev.OfferingUuid))
	}
	var msg events.ResourceMessage
	if err := json.Unmarshal(ev.Body, &msg); err != nil || !events.IsUUID(msg.ResourceUUID) {
		return fault.Terminal(fmt.Errorf("resource event body %q has no valid resource_uuid", ev.Body))
	}
	res, err := o.Waldur.GetResource(ctx, msg.ResourceUUID)
	if errors.Is(err, fault.NotFound) {
		return nil // gone: nothing to apply flags to
	}
	if err != nil {
		return fmt.Errorf("get resource %s: %w", msg.ResourceUUID, err)
	}
	return s.applyFlags(ctx, o, res)
}

// FlagChange is what the flag pass asks of one resource's object: the
// status its Waldur flags want (paused: zero quota, downscaled: minimal
// quota, neither: the limits from before).
type FlagChange struct {
	Resource     string `json:"resource"`
	ResourceName string `json:"resource_name,omitempty"`
	BackendID    string `json:"backend_id"`
	// Action is pause, downscale or restore.
	Action string `json:"action"`
	// From is the object's status before (PlanFlags only), To the one
	// the flags want.
	From backend.Status `json:"from,omitempty"`
	To   backend.Status `json:"to"`
	// Limits are the limits in force before, in Waldur units (PlanFlags
	// only, when the backend can read them): what a pause takes away.
	Limits map[string]float64 `json:"limits_before,omitempty"`
}

// flagAction is the flag pass's decision for one resource; ok is false
// for a resource it leaves alone (no object yet, or a state in which the
// order lifecycle owns the object).
func flagAction(res *waldur.Resource) (c FlagChange, ok bool) {
	if res.BackendID == "" || (res.State != waldur.ResourceStateOK && res.State != waldur.ResourceStateErred) {
		return FlagChange{}, false
	}
	c = FlagChange{Resource: res.UUID, ResourceName: res.Name, BackendID: res.BackendID, Action: "restore", To: backend.StatusActive}
	switch {
	case res.Paused:
		c.Action, c.To = "pause", backend.StatusPaused
	case res.Downscaled:
		c.Action, c.To = "downscale", backend.StatusDownscaled
	}
	return c, true
}

// applyFlags brings one resource's quota in line with its flags.
func (l *Limits) applyFlags(ctx context.Context, o Offering, res *waldur.Resource) error {
	c, ok := flagAction(res)
	if !ok {
		return nil
	}
	return l.applyFlag(ctx, o, c)
}

// applyFlag sets the status c asks for; every status is set again, also
// one the object has, so a quota changed by hand is put back.
func (l *Limits) applyFlag(ctx context.Context, o Offering, c FlagChange) error {
	apply := o.Backend.Restore
	switch c.Action {
	case "pause":
		apply = o.Backend.Pause
	case "downscale":
		apply = o.Backend.Downscale
	}
	if err := apply(ctx, c.BackendID); err != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return nil // not created yet, or gone: the order service owns that
		}
		l.applied.WithLabelValues(c.Action, "error").Inc()
		return fmt.Errorf("%s %s %s: %w", c.Action, o.Backend.Type(), c.BackendID, err)
	}
	l.applied.WithLabelValues(c.Action, "ok").Inc()
	l.log.Debug("flags applied", "backend_id", c.BackendID, "action", c.Action)
	return nil
}

// passFilter lists the resources a pass compares: the live ones with an
// object.
func passFilter(o Offering) waldur.ResourceFilter {
	return waldur.ResourceFilter{
		OfferingUUID: o.Config.WaldurOfferingUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred},
		DropEmptyBackendID: true,
	}
}

// flagPlan is what the periodic flag pass asks of every resource of the
// offering it reconciles.
func flagPlan(ctx context.Context, o Offering) ([]FlagChange, error) {
	resources, err := o.Waldur.ListProviderResources(ctx, passFilter(o))
	if err != nil {
		return nil, err
	}
	var out []FlagChange
	for i := range resources {
		if c, ok := flagAction(&resources[i]); ok {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b FlagChange) int { return strings.Compare(a.BackendID, b.BackendID) })
	return out, nil
}

// PlanFlags is the dry run of the flag pass for the offering (its UUID as
// hex): the changes of status it would make, each with the limits in
// force before. The status before is the one the backend's List reads
// on the object; an object it does not list (not sitebus's yet: the
// Python agent's, whose plugins ignored the flags) is active.
func (l *Limits) PlanFlags(ctx context.Context, offeringHex string) ([]FlagChange, error) {
	o, ok := l.offerings[offeringHex]
	if !ok {
		return nil, fmt.Errorf("offering %s is not configured here", offeringHex)
	}
	plan, err := flagPlan(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	objects, err := o.Backend.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the %s objects: %w", o.Backend.Type(), err)
	}
	status := map[string]backend.Status{}
	for _, obj := range objects {
		status[obj.BackendID] = obj.Status
	}
	var out []FlagChange
	for _, c := range plan {
		c.From = cmp.Or(status[c.BackendID], backend.StatusActive)
		if c.From == c.To {
			continue
		}
		if limits, err := o.Backend.Limits(ctx, c.BackendID); err == nil {
			c.Limits = limits
		}
		out = append(out, c)
	}
	return out, nil
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

func (s *Service) syncOffering(ctx context.Context, o Offering) {
	ctx, span := s.tracer.Start(ctx, "reconcile resource flags")
	defer span.End()
	plan, err := flagPlan(ctx, o)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("listing resources for the flag reconcile failed; next try at the next period", "offering", o.Config.Name, "err", err)
		}
		return
	}
	for _, c := range plan {
		if err := s.applyFlag(ctx, o, c); err != nil && ctx.Err() == nil {
			s.log.Warn("flag reconcile of a resource failed", "offering", o.Config.Name, "resource", c.Resource, "err", err)
		}
	}
}
