package orderflow

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

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/failpoint"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keylock"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Handler supplies the verbs of one kind of offering, as a controller
// supplies Reconcile to controller-runtime's loop: the Flow reads and
// approves the order, holds its resource, calls the verb and settles the
// order. A verb either finishes the work (it returns a nil *Saga: the Flow
// marks the order done) or names the saga that will (the Flow starts it,
// and the saga's settle step or its failure settles the order). A verb
// returns errors and never settles the order itself.
type Handler interface {
	// Create handles Create and Restore orders (o.Type says which).
	Create(ctx context.Context, o *Order) (*Saga, error)
	Update(ctx context.Context, o *Order) (*Saga, error)
	Terminate(ctx context.Context, o *Order) (*Saga, error)
}

// Order is the order a verb handles: Waldur's order as read after
// approval, and the offering it belongs to.
type Order struct {
	*waldur.Order
	// OfferingUUID is the offering's UUID in hex.
	OfferingUUID string
	Log          *slog.Logger
}

// ChangedResource is the UUID of the Waldur resource the order changes
// (its marketplace resource, or the resource for older Waldur versions).
func (o *Order) ChangedResource() string { return resourceUUID(o.Order) }

// OrderHex is the order's UUID in hex, as saga inputs carry it.
func (o *Order) OrderHex() string { return events.HexUUID(o.UUID) }

// Saga is a saga a verb hands the order to: the definition and its input.
// Its ID is the order's ([contract.SagaID]), so a repeated order event
// finds the saga already there.
type Saga struct {
	Definition string
	Input      any
}

// Waldur is what the lifecycle asks of Waldur about orders (waldur.Client).
type Waldur interface {
	GetOrder(ctx context.Context, uuid string, fields ...string) (*waldur.Order, error)
	ApproveOrderByProvider(ctx context.Context, uuid string) error
	SetOrderStateDone(ctx context.Context, uuid string) error
	SetOrderStateErred(ctx context.Context, uuid, message, traceback string) error
}

var _ Waldur = (*waldur.Client)(nil)

// SagaStarter starts sagas (a *saga.Coordinator with the definitions
// registered).
type SagaStarter interface {
	Start(ctx context.Context, def, id string, input any) (saga.Saga, error)
	// EnsureStream makes the stream the sagas' outcomes go to.
	EnsureStream(ctx context.Context) error
}

// FlowOffering is one offering whose orders a Flow settles.
type FlowOffering struct {
	// UUID is the offering's UUID in hex, as events name it.
	UUID    string
	Name    string
	Waldur  Waldur
	Handler Handler
}

// FlowConfig configures a Flow.
type FlowConfig struct {
	// Name is the consumer of the order events and the service in logs
	// ("order", "cluster-provisioner").
	Name string
	// OutcomesConsumer is the consumer of the saga outcomes.
	OutcomesConsumer string
	Offerings        []FlowOffering
	// Sagas are the definitions the handlers start: their failures err
	// the order. Starting one needs the definition registered, so without
	// Starter the Flow makes a coordinator client with these.
	Sagas   []saga.Definition
	Starter SagaStarter
	// MaxDeliver and Backoff bound retries of transient failures (platform
	// or Waldur unreachable); zero values take the bus's defaults (about
	// four minutes of retries) before the order is marked erred.
	MaxDeliver int
	Backoff    bus.Backoff
	// Concurrency is how many order events one process handles at once.
	Concurrency int
	// Owner names this process in the resource leases it holds in cluster
	// ordering mode (the process identity).
	Owner string

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

func (c *FlowConfig) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.OutcomesConsumer == "" {
		c.OutcomesConsumer = c.Name + "-saga-outcomes"
	}
}

// Validate reports a configuration a Flow cannot run with.
func (c *FlowConfig) Validate() error {
	var errs []error
	if !bus.ValidToken(c.Name) {
		errs = append(errs, fmt.Errorf("orderflow: name %q is no consumer name", c.Name))
	}
	for _, o := range c.Offerings {
		if o.UUID == "" || o.Waldur == nil || o.Handler == nil {
			errs = append(errs, fmt.Errorf("orderflow: offering %q without UUID, Waldur client or handler", o.Name))
		}
	}
	return errors.Join(errs...)
}

// Flow is the one order lifecycle: from an order event to the order done
// or erred in Waldur, exactly once.
//
//	handle      an order event: parse, skip non-actionable states
//	process     read the order, approve a pending one, dispatch by type
//	            to the offering's Handler under the resource's key, start
//	            the saga a verb names
//	settle      done (markDone) when the verb finished; erred (markErred)
//	            when it failed for good or on the last attempt
//	onOutcome   a saga that did not succeed: its order erred
type Flow struct {
	bus       *bus.Bus
	cfg       FlowConfig
	log       *slog.Logger
	tracer    trace.Tracer
	offerings map[string]FlowOffering
	starter   SagaStarter
	// resources serialises work on one Waldur resource: in this process
	// (the bus's Locker), and in cluster ordering mode across replicas too
	// (leases), since an order event's subject names the order, not the
	// resource it changes.
	resources keylock.Locker
	subs      bus.Subscriptions
	outcomes  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
}

// Outcomes of an order event, the outcome label of sitebus_orders_total.
const (
	outcomeDone      = "done"
	outcomeErred     = "erred"
	outcomeSkipped   = "skipped"
	outcomeDelegated = "delegated"
)

// NewFlow builds a Flow; Run (or a service around it) starts it.
func NewFlow(b *bus.Bus, cfg FlowConfig) (*Flow, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := newFlow(cfg)
	f.bus = b
	if f.starter == nil && len(cfg.Sagas) > 0 {
		// A coordinator client: it starts sagas; the coordinator that
		// runs them is elsewhere. Starting one may create the saga bucket:
		// with the bus's replica count, or the two would rescale it back
		// and forth.
		coord, err := saga.New(b.JetStream(), saga.Config{Logger: f.log, Replicas: b.Replicas()})
		if err != nil {
			return nil, err
		}
		for _, def := range cfg.Sagas {
			if err := coord.Register(def); err != nil {
				return nil, err
			}
		}
		f.starter = coord
	}
	return f, nil
}

// newFlow is the Flow without a bus: what the unit tests drive.
func newFlow(cfg FlowConfig) *Flow {
	f := &Flow{
		cfg: cfg, log: cfg.Logger.With("service", cfg.Name), starter: cfg.Starter,
		tracer:    cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/services/orderflow"),
		offerings: map[string]FlowOffering{},
		outcomes: telemetry.Register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_orders_total", Help: "Orders settled by the order service, by type and outcome (done, erred, skipped, delegated).",
		}, []string{"type", "outcome"})),
		latency: telemetry.Register(cfg.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sitebus_order_seconds", Help: "From the event entering sitebus to the order settled in Waldur, by type.",
			Buckets: prometheus.ExponentialBuckets(0.002, 2, 16),
		}, []string{"type"})),
	}
	for _, o := range cfg.Offerings {
		f.offerings[o.UUID] = o
	}
	return f
}

// Run consumes order events and saga outcomes until ctx ends.
func (f *Flow) Run(ctx context.Context) error {
	defer f.subs.Stop(30 * time.Second)
	if err := f.start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Ready reports whether the consumers are bound.
func (f *Flow) Ready(ctx context.Context) error {
	if len(f.offerings) == 0 {
		return nil
	}
	return f.subs.Check(ctx)
}

// start binds the consumers: saga outcomes first, order events last. The
// caller stops f.subs.
func (f *Flow) start(ctx context.Context) error {
	var filters []string
	for hex := range f.offerings {
		filters = append(filters, "waldur."+hex+"."+events.Order)
	}
	slices.Sort(filters)
	if len(filters) == 0 {
		return nil
	}
	f.resources = f.bus.Locker()
	// In cluster ordering one order and one resource are held across
	// replicas with leases: the order events by their order (one shared
	// consumer, see bus.ConsumerConfig.KeyLocker: the handler reads the
	// order from Waldur, so which of an order's events comes first does not
	// matter, only that two replicas never work on it at once), and the
	// resource an order changes once the order is read.
	var orderLocker keylock.Locker
	if f.bus.Ordering().Mode == bus.OrderingCluster {
		leases, err := f.bus.EnsureLeases(ctx, f.cfg.Owner, 0)
		if err != nil {
			return err
		}
		f.resources, orderLocker = leases, leases
	}
	if len(f.cfg.Sagas) > 0 && f.starter != nil {
		outcomes, err := f.watchOutcomes(ctx)
		if err != nil {
			return err
		}
		f.subs.Add(outcomes)
	}
	sub, err := bus.Subscribe(ctx, f.bus, bus.ConsumerConfig{
		Name: f.cfg.Name, Stream: bus.EventsStream, FilterSubjects: filters, Partitioned: true,
		MaxDeliver: f.cfg.MaxDeliver, Backoff: f.cfg.Backoff,
		OrderingKey: bus.WaldurEventKey,
		KeyLocker:   orderLocker,
		Concurrency: f.cfg.Concurrency,
	}, f.handle)
	if err != nil {
		return err
	}
	f.subs.Add(sub)
	return nil
}

// handle takes one order event from the bus.
func (f *Flow) handle(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
	d, _ := bus.DeliveryFromContext(ctx)
	return f.handleEvent(ctx, ev, d.LastAttempt())
}

// handleEvent settles the order of one event; lastAttempt says the bus
// will not deliver it again.
//
// A failure is settled here (the order erred, the event done) when no
// retry can fix it (fault.IsTerminal) or when this was the last attempt;
// any other is returned for the bus to retry. A cancelled context is the
// process stopping, not the order failing: it is never reported to Waldur.
func (f *Flow) handleEvent(ctx context.Context, ev *sitebusv1.WaldurEvent, lastAttempt bool) error {
	o, ok := f.offerings[ev.OfferingUuid]
	if !ok {
		return fault.Terminal(fmt.Errorf("order event for offering %s, which has no order_processing_backend here", ev.OfferingUuid))
	}
	var msg events.OrderMessage
	if err := json.Unmarshal(ev.Body, &msg); err != nil || !events.IsUUID(msg.OrderUUID) {
		return fault.Terminal(fmt.Errorf("order event body %q has no valid order_uuid", ev.Body))
	}
	if slices.Contains(events.NonActionableOrderStates, msg.OrderState) {
		return nil
	}
	ctx, span := f.tracer.Start(ctx, "order "+msg.OrderUUID, trace.WithAttributes(
		attribute.String("waldur.order_uuid", msg.OrderUUID), attribute.String("waldur.offering", o.Name)))
	defer span.End()
	log := f.log.With("offering", o.Name, "order", msg.OrderUUID)
	typ, outcome, err := f.process(ctx, o, msg.OrderUUID, log)
	if err != nil {
		// A shutdown is not a failure to report, and a retryable error
		// goes back to the bus while attempts are left.
		settle := lastAttempt || fault.IsTerminal(err)
		if errors.Is(err, context.Canceled) || !settle {
			return err
		}
		// Settle it: Waldur is told what failed, and the message is done.
		if err := markErred(ctx, o.Waldur, msg.OrderUUID, err.Error(), log); err != nil {
			return err
		}
		f.outcomes.WithLabelValues(typ, outcomeErred).Inc()
		return nil
	}
	f.outcomes.WithLabelValues(typ, outcome).Inc()
	if ev.ReceivedAt != nil && outcome == outcomeDone {
		f.latency.WithLabelValues(typ).Observe(time.Since(ev.ReceivedAt.AsTime()).Seconds())
	}
	return nil
}

// process reads the order (the event is only a poke; Waldur is the source
// of truth), approves it if it waits for the provider, and has the
// offering's handler do it.
func (f *Flow) process(ctx context.Context, o FlowOffering, orderUUID string, log *slog.Logger) (typ, outcome string, err error) {
	w := o.Waldur
	order, err := w.GetOrder(ctx, orderUUID)
	if isNotFound(err) {
		log.Warn("order event for an order Waldur does not know; skipped")
		return "unknown", outcomeSkipped, nil
	}
	if err != nil {
		return "unknown", "", fmt.Errorf("get order: %w", err)
	}
	typ = order.Type
	if order.State == waldur.OrderStatePendingProvider {
		// The Python agent's default decision is to accept; so is ours.
		err := w.ApproveOrderByProvider(ctx, orderUUID)
		switch {
		case err == nil:
			// Approval moves the order to executing: no need to ask.
			order.State = waldur.OrderStateExecuting
		case isConflict(err):
			// Someone else decided first: see what they decided.
			if order, err = w.GetOrder(ctx, orderUUID); err != nil {
				return typ, "", fmt.Errorf("get order after approval: %w", err)
			}
		default:
			return typ, "", fmt.Errorf("approve order: %w", err)
		}
	}
	if order.State != waldur.OrderStateExecuting {
		log.Debug("order needs nothing from the site", "state", order.State)
		return typ, outcomeSkipped, nil
	}
	job := &Order{Order: order, OfferingUUID: o.UUID, Log: log}
	var sg *Saga
	err = f.holdingResource(ctx, job, func(ctx context.Context) error {
		var err error
		sg, err = dispatch(ctx, o.Handler, job)
		return err
	})
	if err != nil {
		return typ, "", err
	}
	if sg != nil {
		if err := f.startSaga(ctx, job, sg); err != nil {
			return typ, "", err
		}
		return typ, outcomeDelegated, nil
	}
	if err := failpoint.Inject(ctx, "order/before-done"); err != nil {
		return typ, "", err
	}
	// This run read the order executing while holding the order's ordering
	// key, so no other handler here settled it since.
	return typ, outcomeDone, markDone(ctx, w, orderUUID, false)
}

// dispatch calls the verb of the order's type.
func dispatch(ctx context.Context, h Handler, o *Order) (*Saga, error) {
	switch o.Type {
	case waldur.OrderTypeCreate, waldur.OrderTypeRestore:
		return h.Create(ctx, o)
	case waldur.OrderTypeUpdate:
		return h.Update(ctx, o)
	case waldur.OrderTypeTerminate:
		return h.Terminate(ctx, o)
	}
	return nil, fault.Errorf(fault.Invalid, "order type %q is not supported", o.Type)
}

// startSaga starts the saga a verb named, one per order.
func (f *Flow) startSaga(ctx context.Context, o *Order, sg *Saga) error {
	if f.starter == nil {
		return fault.Terminal(fmt.Errorf("%s: this process starts no sagas", sg.Definition))
	}
	if _, err := f.starter.Start(ctx, sg.Definition, contract.SagaID(o.OrderHex()), sg.Input); err != nil {
		return fmt.Errorf("start %s: %w", sg.Definition, err)
	}
	o.Log.Info("saga started", "saga", sg.Definition, "resource", o.ChangedResource())
	return nil
}

// holdingResource runs fn while nothing else about the order's resource
// is handled (here, and in cluster ordering mode by any replica): the
// event held the order's key, and only the order says which resource it
// changes.
func (f *Flow) holdingResource(ctx context.Context, o *Order, fn func(context.Context) error) error {
	uuid := o.ChangedResource()
	if uuid == "" || f.resources == nil {
		return fn(ctx)
	}
	return keylock.Do(ctx, f.resources, events.ResourceKey(uuid), fn)
}

func resourceUUID(o *waldur.Order) string {
	if o.MarketplaceResourceUUID != "" {
		return o.MarketplaceResourceUUID
	}
	return o.ResourceUUID
}

// Verbs is a Handler made of functions, to compose one offering's verbs
// from several places (the order service's create and terminate, the
// quota service's update). A nil verb refuses the order as unsupported.
type Verbs struct {
	OnCreate, OnUpdate, OnTerminate func(ctx context.Context, o *Order) (*Saga, error)
	// Kind names the offering's kind in the refusal ("rancher-cluster").
	Kind string
}

func (v Verbs) Create(ctx context.Context, o *Order) (*Saga, error) {
	return v.call(ctx, v.OnCreate, o)
}
func (v Verbs) Update(ctx context.Context, o *Order) (*Saga, error) {
	return v.call(ctx, v.OnUpdate, o)
}
func (v Verbs) Terminate(ctx context.Context, o *Order) (*Saga, error) {
	return v.call(ctx, v.OnTerminate, o)
}

func (v Verbs) call(ctx context.Context, fn func(context.Context, *Order) (*Saga, error), o *Order) (*Saga, error) {
	if fn == nil {
		return nil, Unsupported(o, v.Kind)
	}
	return fn(ctx, o)
}

// Unsupported is the error of an order type an offering's kind does not
// handle: terminal, the order is erred at once.
func Unsupported(o *Order, kind string) error {
	if kind == "" {
		return fault.Errorf(fault.Invalid, "order type %q is not supported", o.Type)
	}
	return fault.Errorf(fault.Invalid, "%s orders of %s offerings are not supported yet", o.Type, kind)
}
