// Package provisioner is the cluster-provisioner service (issue 13): it
// takes the orders of rancher-cluster offerings and runs them as sagas
// that build (or remove) whole Rancher RKE2 clusters on OpenStack, with
// Vault bootstrap of the nodes and the cluster's Keycloak groups. It owns
// its sagas' coordinator, because the steps call OpenStack, Rancher and
// Vault with credentials only this service holds; Keycloak goes through
// keycloak-sync, as everywhere in sitebus.
package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/sagas"
)

// Name is the service name used by --only.
const Name = "cluster-provisioner"

// PlanBucket keeps each cluster's plan between its create and terminate.
const PlanBucket = "sitebus_cluster_plans"

// Config configures the service.
type Config struct {
	// Offerings by offering UUID hex.
	Offerings map[string]*Offering
	Timeouts  Timeouts
	// LeaseTTL and Owner are the coordinator's (see saga.Config).
	LeaseTTL time.Duration
	Owner    string

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

// Service runs the rancher-cluster sagas.
type Service struct {
	bus   *bus.Bus
	cfg   Config
	log   *slog.Logger
	coord *saga.Coordinator
	acts  *activities
	subs  bus.Subscriptions
	ready chan struct{}
}

// New registers the sagas and their activities.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("service", Name)
	for hex, o := range cfg.Offerings {
		if o == nil || o.Waldur == nil || o.Cloud == nil || o.Rancher == nil {
			return nil, fmt.Errorf("cluster-provisioner: offering %s lacks its Waldur, OpenStack or Rancher client", hex)
		}
	}
	coord, err := saga.New(b.JetStream(), saga.Config{Logger: log, Registerer: cfg.Registerer, TracerProvider: cfg.TracerProvider,
		LeaseTTL: cfg.LeaseTTL, Owner: cfg.Owner, Replicas: b.Replicas()})
	if err != nil {
		return nil, err
	}
	cfg.Timeouts.setDefaults()
	acts := &activities{
		offerings: cfg.Offerings, groups: busGroups{b}, timeouts: cfg.Timeouts, log: log,
		plans: &kvPlans{js: b.JetStream(), replicas: b.Replicas()},
		nodesActive: telemetry.Register(cfg.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sitebus_cluster_nodes_active", Help: "Nodes of a cluster being created that Rancher shows active.",
		}, []string{"cluster"})),
		nodesWanted: telemetry.Register(cfg.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sitebus_cluster_nodes_wanted", Help: "Nodes a cluster being created waits for.",
		}, []string{"cluster"})),
	}
	if err := register(coord, acts); err != nil {
		return nil, err
	}
	return &Service{bus: b, cfg: cfg, log: log, coord: coord, acts: acts, ready: make(chan struct{})}, nil
}

func register(coord *saga.Coordinator, acts *activities) error {
	for name, fn := range acts.all() {
		coord.RegisterActivity(name, fn)
	}
	for _, def := range definitions(acts.timeouts) {
		if err := coord.Register(def); err != nil {
			return err
		}
	}
	return nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run consumes the offerings' order events and drives their sagas until
// ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var filters []string
	for hex := range s.cfg.Offerings {
		filters = append(filters, "waldur."+hex+"."+events.Order)
	}
	slices.Sort(filters)
	if len(filters) == 0 {
		close(s.ready)
		<-ctx.Done()
		return nil
	}
	defer s.subs.Stop(30 * time.Second)
	if err := s.coord.EnsureStream(ctx); err != nil {
		return err
	}
	outcomes, err := s.watchOutcomes(ctx)
	if err != nil {
		return err
	}
	s.subs.Add(outcomes)
	sub, err := bus.Subscribe(ctx, s.bus, bus.ConsumerConfig{
		Name: Name, Stream: bus.EventsStream, FilterSubjects: filters, Partitioned: true, OrderingKey: bus.WaldurEventKey,
	}, s.handle)
	if err != nil {
		return err
	}
	s.subs.Add(sub)
	close(s.ready)
	return s.coord.Run(ctx)
}

// Ready reports whether the consumers are bound.
func (s *Service) Ready(ctx context.Context) error {
	select {
	case <-s.ready:
	default:
		return errors.New("cluster-provisioner not started")
	}
	if len(s.cfg.Offerings) == 0 {
		return nil
	}
	return s.subs.Check(ctx)
}

// SagaID is the saga of an order, as the other sagas name theirs.
func SagaID(orderHex string) string { return "order-" + orderHex }

// handle takes one order event: approves a pending order, starts the
// create, update or terminate saga of an executing one.
func (s *Service) handle(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
	o, ok := s.cfg.Offerings[ev.OfferingUuid]
	if !ok {
		return bus.Terminal(fmt.Errorf("order event for offering %s, which is no rancher-cluster offering here", ev.OfferingUuid))
	}
	var msg events.OrderMessage
	if err := json.Unmarshal(ev.Body, &msg); err != nil || !events.IsUUID(msg.OrderUUID) {
		return bus.Terminal(fmt.Errorf("order event body %q has no valid order_uuid", ev.Body))
	}
	if slices.Contains(events.NonActionableOrderStates, msg.OrderState) {
		return nil
	}
	log := s.log.With("offering", o.Name, "order", msg.OrderUUID)
	w := o.Waldur
	order, err := w.GetOrder(ctx, msg.OrderUUID)
	if waldur.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get order: %w", err)
	}
	if order.State == waldur.OrderStatePendingProvider {
		err := w.ApproveOrderByProvider(ctx, msg.OrderUUID)
		switch {
		case err == nil:
			order.State = waldur.OrderStateExecuting
		case waldur.IsConflict(err):
			if order, err = w.GetOrder(ctx, msg.OrderUUID); err != nil {
				return fmt.Errorf("get order after approval: %w", err)
			}
		default:
			return fmt.Errorf("approve order: %w", err)
		}
	}
	if order.State != waldur.OrderStateExecuting {
		return nil
	}
	resUUID := order.MarketplaceResourceUUID
	if resUUID == "" {
		resUUID = order.ResourceUUID
	}
	var def string
	switch order.Type {
	case waldur.OrderTypeCreate:
		def = ClusterCreate
	case waldur.OrderTypeTerminate:
		def = ClusterTerminate
	case waldur.OrderTypeUpdate:
		def = ClusterUpdate
	default:
		return markErred(ctx, o.Waldur, msg.OrderUUID, fmt.Sprintf("%s orders of rancher-cluster offerings are not supported yet", order.Type), log)
	}
	res, err := w.GetResource(ctx, resUUID)
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resUUID, err)
	}
	in := Input{
		OfferingUUID: ev.OfferingUuid, OrderUUID: events.HexUUID(msg.OrderUUID), ResourceUUID: res.UUID,
		Resource: ResourceRef{UUID: res.UUID, Name: res.Name, Slug: res.Slug, BackendID: res.BackendID,
			ProjectUUID: res.ProjectUUID, ProjectSlug: res.ProjectSlug, ProjectName: res.ProjectName,
			CustomerUUID: res.CustomerUUID, CustomerSlug: res.CustomerSlug, CustomerName: res.CustomerName},
		Attributes: order.Attributes,
	}
	if _, err := s.coord.Start(ctx, def, SagaID(events.HexUUID(msg.OrderUUID)), in); err != nil {
		return fmt.Errorf("start %s: %w", def, err)
	}
	log.Info("saga started", "saga", def, "resource", res.UUID)
	return nil
}

// watchOutcomes errs the order of a saga that did not succeed, with the
// step and the reason.
func (s *Service) watchOutcomes(ctx context.Context) (*bus.Subscription, error) {
	var filters []string
	for _, def := range Definitions {
		for _, st := range []saga.Status{saga.StatusCompensated, saga.StatusFailed, saga.StatusParked} {
			filters = append(filters, saga.OutcomeSubject(st, def))
		}
	}
	return bus.SubscribeRaw(ctx, s.bus, bus.ConsumerConfig{Name: Name + "-outcomes", Stream: saga.Stream, FilterSubjects: filters}, s.onOutcome)
}

func (s *Service) onOutcome(ctx context.Context, data []byte) error {
	var sg saga.Saga
	if err := json.Unmarshal(data, &sg); err != nil {
		return bus.Terminal(fmt.Errorf("saga outcome: %w", err))
	}
	var in Input
	if err := json.Unmarshal(sg.Input, &in); err != nil {
		return bus.Terminal(fmt.Errorf("saga %s input: %w", sg.ID, err))
	}
	o, ok := s.cfg.Offerings[in.OfferingUUID]
	if !ok {
		return bus.Terminal(fmt.Errorf("saga %s: offering %s is not configured here", sg.ID, in.OfferingUUID))
	}
	return markErred(ctx, o.Waldur, in.OrderUUID, outcomeMessage(sg), s.log.With("saga", sg.ID))
}

// outcomeMessage is what Waldur shows for a saga that did not succeed.
func outcomeMessage(sg saga.Saga) string {
	msg := sg.Error
	switch sg.Status {
	case saga.StatusParked:
		msg = fmt.Sprintf("%s; undoing it failed too and is parked for an operator (sitebus sagas show %s): %s", sg.Error, sg.ID, sg.ParkReason)
	case saga.StatusCompensated:
		msg += "; everything this order made was removed"
	}
	if sg.Error == "" {
		msg = "saga " + sg.ID + " ended " + string(sg.Status)
	}
	return msg
}

// busGroups sends keycloak-sync's commands.
type busGroups struct{ b *bus.Bus }

func (g busGroups) Ensure(ctx context.Context, key, offeringHex, parent string, children []string) ([]string, error) {
	req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: offeringHex,
		Groups: []*sitebusv1.GroupSpec{{Name: parent, Description: "Rancher cluster " + parent}}}
	for _, c := range children {
		req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: c, Description: "Rancher cluster role group " + c, ParentName: parent})
	}
	var resp sitebusv1.EnsureGroupsResponse
	if err := g.b.Call(ctx, keycloaksync.Name, sagas.CmdEnsureGroups, req, &resp, bus.WithKey(key)); err != nil {
		return nil, err
	}
	var created []string
	for _, gr := range resp.Groups {
		if gr.Created {
			created = append(created, gr.Name)
		}
	}
	return created, nil
}

func (g busGroups) Delete(ctx context.Context, key, offeringHex, parent string, children []string) error {
	req := &sitebusv1.DeleteGroupsRequest{OfferingUuid: offeringHex}
	for _, c := range slices.Backward(children) {
		req.Groups = append(req.Groups, &sitebusv1.GroupRef{Name: c, ParentName: parent})
	}
	req.Groups = append(req.Groups, &sitebusv1.GroupRef{Name: parent})
	return g.b.Call(ctx, keycloaksync.Name, sagas.CmdDeleteGroups, req, &sitebusv1.DeleteGroupsResponse{}, bus.WithKey(key))
}

// kvPlans keeps plans in a JetStream key-value bucket.
type kvPlans struct {
	mu       sync.Mutex
	js       jetstream.JetStream
	replicas int
	kv       jetstream.KeyValue
}

func (p *kvPlans) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kv != nil {
		return p.kv, nil
	}
	kv, err := bus.EnsureKeyValue(ctx, p.js, jetstream.KeyValueConfig{Bucket: PlanBucket, Replicas: p.replicas, Storage: jetstream.FileStorage,
		Description: "rancher-cluster plans, by Waldur resource: what each cluster's terminate removes"})
	if err != nil {
		return nil, err
	}
	p.kv = kv
	return kv, nil
}

func (p *kvPlans) Put(ctx context.Context, key string, plan []byte) error {
	kv, err := p.bucket(ctx)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, key, plan) // repeated while unanswered: bus.EnsureKeyValue
	return err
}

func (p *kvPlans) Get(ctx context.Context, key string) ([]byte, error) {
	kv, err := p.bucket(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key) // repeated while unanswered: bus.EnsureKeyValue
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (p *kvPlans) Delete(ctx context.Context, key string) error {
	kv, err := p.bucket(ctx)
	if err != nil {
		return err
	}
	err = bus.RetryUnanswered(ctx, func(actx context.Context) error { return kv.Delete(actx, key) })
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	return nil
}
