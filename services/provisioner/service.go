// Package provisioner is the cluster-provisioner service: it runs the
// orders of rancher-cluster offerings as sagas that build (or remove)
// whole Rancher RKE2 clusters on OpenStack, with Vault bootstrap of the
// nodes and the cluster's Keycloak groups. The order lifecycle (reading,
// approving, starting the saga, settling the order) is services/orderflow's,
// which services/app runs in the same process over these offerings; this
// package supplies the sagas and, through Input, what each order starts. It owns
// its sagas' coordinator, because the steps call OpenStack, Rancher and
// Vault with credentials only this service holds; Keycloak goes through
// keycloak-sync, as everywhere in sitebus.
package provisioner

import (
	"context"
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
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Name is the service name used by --only.
const Name = contract.ClusterProvisioner

// PlanBucket keeps each cluster's plan between its create and terminate.
const PlanBucket = "sitebus_cluster_plans"

// Config configures the service.
type Config struct {
	// Offerings by offering UUID hex.
	Offerings map[string]*Offering
	// VClusters are the vcluster offerings, by offering UUID hex.
	VClusters map[string]*VClusterOffering
	Timeouts  Timeouts
	// VMConcurrency is how many VMs a create or scale-up step makes at
	// once (sitebus.cluster_vm_concurrency); 0 is DefaultVMConcurrency,
	// 1 makes them one after another.
	VMConcurrency int
	// LeaseTTL and Owner are the coordinator's (see saga.Config).
	LeaseTTL time.Duration
	// SagaRetention is how long a finished saga is kept (see saga.Config).
	SagaRetention time.Duration
	Owner         string
	// PullPeriod is how often the cluster pass pulls every cluster
	// (pass.go); 0 runs none.
	PullPeriod time.Duration
	// Orders marks an order done when its saga's settle step has told
	// Waldur what was made: the order lifecycle (services/orderflow) is
	// the one place that settles orders.
	Orders Orders

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

// Orders settles orders (services/orderflow's Flow).
type Orders interface {
	MarkDone(ctx context.Context, offeringUUID, orderUUID string) error
	// MarkErred errs an order whose saga finished without undoing what
	// it made: a cluster that was not usable by its readiness deadline.
	MarkErred(ctx context.Context, offeringUUID, orderUUID, message string) error
}

// Service runs the rancher-cluster sagas.
type Service struct {
	bus   *bus.Bus
	cfg   Config
	log   *slog.Logger
	coord *saga.Coordinator
	acts  *activities
	pass  *pass
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
		LeaseTTL: cfg.LeaseTTL, Owner: cfg.Owner, Retention: cfg.SagaRetention, Replicas: b.Replicas()})
	if err != nil {
		return nil, err
	}
	cfg.Timeouts.setDefaults()
	if cfg.VMConcurrency <= 0 {
		cfg.VMConcurrency = DefaultVMConcurrency
	}
	acts := &activities{
		offerings: cfg.Offerings, groups: busGroups{b}, orders: cfg.Orders, timeouts: cfg.Timeouts, log: log,
		vmConcurrency: cfg.VMConcurrency,
		plans:         &kvPlans{js: b.JetStream(), replicas: b.Replicas()},
		nodesActive: telemetry.Register(cfg.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sitebus_cluster_nodes_active", Help: "Nodes of a cluster being created that Rancher shows active.",
		}, []string{"cluster"})),
		nodesWanted: telemetry.Register(cfg.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sitebus_cluster_nodes_wanted", Help: "Nodes a cluster being created waits for.",
		}, []string{"cluster"})),
		argocdFailures: telemetry.Register(cfg.Registerer, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sitebus_cluster_argocd_failures_total",
			Help: "Clusters whose registration with ArgoCD failed for good; the cluster stays, its backend metadata has argocd_error.",
		})),
	}
	if err := register(coord, acts); err != nil {
		return nil, err
	}
	if err := registerVCluster(coord, cfg, acts.plans, acts.groups, busMembers{b}, log); err != nil {
		return nil, err
	}
	ps := &pass{offerings: cfg.Offerings, vclusters: cfg.VClusters, records: acts.plans.(*kvPlans), log: log.With("component", "cluster-pass"),
		repairs: telemetry.Register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_cluster_repairs_total",
			Help: "What the cluster pass repaired, by kind: node_removed (its VM was deleted), binding (a group binding made again), resource_erred, resource_ok, node_counts (Waldur's metadata updated), security_group_rule and floating_ip (sitebus's own, deleted by hand, made again).",
		}, []string{"kind"}))}
	return &Service{bus: b, cfg: cfg, log: log, coord: coord, acts: acts, pass: ps, ready: make(chan struct{})}, nil
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

// Run drives the sagas until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if len(s.cfg.Offerings) == 0 && len(s.cfg.VClusters) == 0 {
		close(s.ready)
		<-ctx.Done()
		return nil
	}
	if err := s.coord.EnsureStream(ctx); err != nil {
		return err
	}
	close(s.ready)
	ctx, cancel := context.WithCancel(ctx)
	var passes sync.WaitGroup
	if s.cfg.PullPeriod > 0 {
		passes.Go(func() { s.pass.runPasses(ctx, s.cfg.PullPeriod) })
	}
	err := s.coord.Run(ctx)
	cancel()
	passes.Wait()
	return err
}

// Ready reports whether the consumers are bound.
func (s *Service) Ready(ctx context.Context) error {
	select {
	case <-s.ready:
	default:
		return errors.New("cluster-provisioner not started")
	}
	return nil
}

// Definitions are the rancher-cluster sagas, for the order lifecycle that
// starts them and errs the order of one that fails.
func Definitions() []saga.Definition {
	var t Timeouts
	t.setDefaults()
	return append(definitions(t), vclusterDefinitions(t)...)
}

// Input is the saga input of a rancher-cluster order: the resource as the
// plan names its objects, and the order's attributes.
func (s *Service) Input(ctx context.Context, offeringUUID string, order *waldur.Order) (Input, error) {
	o, ok := s.cfg.Offerings[offeringUUID]
	if !ok {
		return Input{}, fault.Terminal(fmt.Errorf("offering %s is no rancher-cluster offering here", offeringUUID))
	}
	return InputOf(ctx, o, offeringUUID, order)
}

// busGroups sends keycloak-sync's commands.
type busGroups struct{ b *bus.Bus }

func (g busGroups) Ensure(ctx context.Context, key, offeringHex, parent string, children []string) ([]string, error) {
	req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: offeringHex,
		Groups: []*sitebusv1.GroupSpec{{Name: parent, Description: "Rancher cluster " + parent}}}
	for _, c := range children {
		req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: c, Description: "Rancher cluster role group " + c, ParentName: parent})
	}
	resp, err := contract.EnsureGroups.Call(ctx, g.b, req, bus.WithKey(key))
	if err != nil {
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
	_, err := contract.DeleteGroups.Call(ctx, g.b, req, bus.WithKey(key))
	return err
}

// busMembers sends the membership service's sync-resource.
type busMembers struct{ b *bus.Bus }

func (m busMembers) Sync(ctx context.Context, key, offeringHex, resourceUUID string) error {
	_, err := contract.SyncResource.Call(ctx, m.b, &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resourceUUID}, bus.WithKey(key))
	return err
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
