package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Offering is one rancher-cluster offering with the clients its sagas use.
type Offering struct {
	Name     string
	Settings ranchercluster.Settings
	Waldur   Waldur
	Cloud    OpenStack
	Rancher  Rancher
	// Vault is nil when vault_host is unset: nodes then get the
	// registration token in their cloud-init.
	Vault     Vault
	CloudInit cloudinit.Settings
	// ArgoCD is nil without argocd_k8s_kubeconfig.
	ArgoCD ArgoCD
}

// Waldur is what the sagas ask of and tell Waldur about resources
// (waldur.Client); orders are the order lifecycle's (Orders).
type Waldur interface {
	GetResource(ctx context.Context, uuid string, fields ...string) (*waldur.Resource, error)
	SetResourceBackendID(ctx context.Context, uuid, backendID string) error
	SetResourceBackendMetadata(ctx context.Context, uuid string, metadata map[string]any) error
	SetResourceEndpoints(ctx context.Context, uuid string, endpoints []waldur.Endpoint) error
	SetResourceErred(ctx context.Context, uuid, message, traceback string) error
	SetResourceOK(ctx context.Context, uuid string) error
}

var _ Waldur = (*waldur.Client)(nil)

// PlanStore keeps each cluster's plan from its create to its terminate.
type PlanStore interface {
	Put(ctx context.Context, resourceHex string, plan []byte) error
	// Get returns nil without a plan.
	Get(ctx context.Context, resourceHex string) ([]byte, error)
	Delete(ctx context.Context, resourceHex string) error
}

// activities run the steps of both sagas.
type activities struct {
	offerings map[string]*Offering // by offering UUID hex
	groups    Groups
	orders    Orders
	plans     PlanStore
	timeouts  Timeouts
	// vmConcurrency is how many VMs a step makes at once.
	vmConcurrency int
	log           *slog.Logger
	// nodesActive and nodesWanted show a create's progress per cluster.
	nodesActive, nodesWanted *prometheus.GaugeVec
	// argocdFailures counts clusters left unregistered with ArgoCD.
	argocdFailures prometheus.Counter
}

func (a *activities) all() map[string]saga.Activity {
	acts := map[string]saga.Activity{
		actPlan:          a.plan,
		actLoadPlan:      a.loadPlan,
		actForgetPlan:    a.forgetPlan,
		actTenants:       a.tenants,
		actDeleteTenants: a.deleteTenants,
		actLBs:           a.loadBalancers,
		actDeleteLBs:     a.deleteLoadBalancers,
		actCluster:       a.cluster,
		actDeleteCluster: a.deleteCluster,
		actToken:         a.token,
		actVault:         a.vault,
		actVaultCleanup:  a.vaultCleanup,
		actNodes:         a.nodes,
		actDeleteNodes:   a.deleteNodes,
		actDrainNodes:    a.drainAndDeleteNodes,
		actWaitNodes:     a.waitNodes,
		actAccess:        a.access,
		actDeleteAccess:  a.deleteAccess,
		actSettle:        a.settle,
		actArgoCD:        a.argocd,
		actDeleteArgoCD:  a.deleteArgoCD,
	}
	// What the platforms refused for good (fault's terminal kinds: invalid,
	// not ours, quota, a VM in ERROR) the saga sees as terminal through
	// fault.Decide, and compensates at once instead of retrying.
	maps.Copy(acts, a.updateActivities())
	return acts
}

// run is what every activity starts from: the input, the offering and
// (but for the plan step) the plan and what earlier steps made.
type run struct {
	in   Input
	o    *Offering
	plan *ranchercluster.Plan
	// made is what the create made so far: from the create saga's
	// outputs, or the record a terminate loaded.
	made Record
	log  *slog.Logger
	// vmLimit is how many VMs a step makes at once (makeVMs).
	vmLimit int
	// mu guards what the VMs made at once share: zones, the clients
	// opened in this activity, by offering UUID and project; images the
	// image ids looked up, by zone and name; roleID the AppRole's role-id
	// and token the registration token once read (each is the same for
	// every node).
	mu     sync.Mutex
	zones  map[string]Zone
	images map[string]string
	roleID string
	token  string
}

// Record is what a create made, kept from its end to the terminate.
type Record struct {
	// OfferingUUID is the offering whose order made the cluster (hex).
	OfferingUUID  string          `json:"offering_uuid,omitempty"`
	Plan          json.RawMessage `json:"plan"`
	Cluster       ClusterOutput   `json:"cluster"`
	Tenants       []TenantRecord  `json:"tenants,omitempty"`
	LoadBalancers []ServerRecord  `json:"load_balancers,omitempty"`
	Nodes         []ServerRecord  `json:"nodes,omitempty"`
	// Erred is the reason the resource is erred in Waldur for (a create
	// not usable by its deadline, or what the cluster pass found); ""
	// when it is OK. Removed are the nodes the pass removed because
	// their VM was deleted; NodeCounts what Waldur's backend metadata
	// shows. The cluster pass keeps them (pass.go).
	Erred      string         `json:"erred,omitempty"`
	Removed    []string       `json:"removed,omitempty"`
	NodeCounts map[string]int `json:"node_counts,omitempty"`
	// VCluster is set instead of Plan for a virtual cluster (vcluster.go).
	VCluster *VClusterRecord `json:"vcluster,omitempty"`
}

func (r *run) owner() openstack.Owner { return openstack.Owner(r.in.ResourceUUID) }

func (r *run) clusterRef() rancher.ClusterRef {
	ref := rancher.ClusterRef{Name: r.plan.Cluster.Name, ResourceUUID: r.in.ResourceUUID, ID: r.made.Cluster.ID}
	if ref.ID == "" {
		ref.ID = r.in.Resource.BackendID
	}
	return ref
}

func (a *activities) start(in saga.ActivityInput, needPlan bool) (*run, error) {
	v, err := decodeInput(in)
	if err != nil {
		return nil, err
	}
	o, ok := a.offerings[v.OfferingUUID]
	if !ok {
		return nil, bus.Terminal(fmt.Errorf("offering %s is not a rancher-cluster offering of this cluster-provisioner", v.OfferingUUID))
	}
	r := &run{in: v, o: o, log: a.log.With("saga", in.SagaID, "step", in.Step, "offering", o.Name, "resource", v.ResourceUUID),
		zones: map[string]Zone{}, images: map[string]string{}, vmLimit: a.vmConcurrency}
	if !needPlan {
		return r, nil
	}
	raw, ok := in.Outputs["plan"]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		// The plan step never completed: nothing was made.
		return r, nil
	}
	switch in.Definition {
	case ClusterTerminate:
		if err := json.Unmarshal(raw, &r.made); err != nil {
			return nil, bus.Terminal(fmt.Errorf("saga %s: cluster record: %w", in.SagaID, err))
		}
		raw = r.made.Plan
	case ClusterUpdate:
		if raw, err = r.madeByUpdate(in); err != nil {
			return nil, err
		}
	default:
		if err := r.madeByCreate(in); err != nil {
			return nil, err
		}
	}
	if r.plan, err = ranchercluster.UnmarshalPlan(raw); err != nil {
		return nil, bus.Terminal(err)
	}
	r.made.Plan = raw
	return r, nil
}

// madeByCreate collects the create's step outputs. The step running now
// has none yet; what it made so far it cleans up itself.
func (r *run) madeByCreate(in saga.ActivityInput) error {
	var t TenantsOutput
	var lbs, nodes ServersOutput
	for step, v := range map[string]any{"cluster": &r.made.Cluster, "tenants": &t, "load-balancers": &lbs, "nodes": &nodes} {
		if _, err := in.DecodeOutput(step, v); err != nil {
			return err
		}
	}
	r.made.Tenants, r.made.LoadBalancers, r.made.Nodes = t.Tenants, lbs.Servers, nodes.Servers
	return nil
}

// catalog adapts the zones' clients to ranchercluster.Catalog.
type catalog struct {
	cloud OpenStack
}

func (c catalog) Flavors(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.Flavor, error) {
	z, err := c.cloud.Connect(ctx, az)
	if err != nil {
		return nil, err
	}
	return z.Flavors(ctx)
}

func (c catalog) VolumeTypes(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.VolumeType, error) {
	z, err := c.cloud.Connect(ctx, az)
	if err != nil {
		return nil, err
	}
	return z.VolumeTypes(ctx)
}

func (c catalog) Subnet(ctx context.Context, az ranchercluster.AZ, id string) (ranchercluster.Subnet, bool, error) {
	z, err := c.cloud.Connect(ctx, az)
	if err != nil {
		return ranchercluster.Subnet{}, false, err
	}
	return z.UsableSubnet(ctx, id)
}

func (c catalog) SecurityGroups(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.SecurityGroup, error) {
	z, err := c.cloud.Connect(ctx, az)
	if err != nil {
		return nil, err
	}
	return z.SecurityGroups(ctx)
}

func (c catalog) SubnetReaches(ctx context.Context, az ranchercluster.AZ, subnetID, externalNetworkID string) (bool, error) {
	z, err := c.cloud.Connect(ctx, az)
	if err != nil {
		return false, err
	}
	return z.SubnetReaches(ctx, subnetID, externalNetworkID)
}

// plan validates the order and computes everything it makes. A refusal
// (backend.ErrInvalid) is terminal: the saga fails with nothing made and
// the order is erred with the attribute and the rule.
func (a *activities) plan(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, false)
	if err != nil {
		return nil, err
	}
	p, err := ranchercluster.PlanCreate(ctx, &r.o.Settings, r.in.Attributes, r.in.Resource.backend(), catalog{r.o.Cloud})
	if err != nil {
		if fault.IsTerminal(err) {
			return nil, bus.Terminal(err)
		}
		return nil, err
	}
	if !r.o.CloudInit.Template.CloudConfig() {
		for _, n := range p.Nodes {
			if n.SSHPublicKey != "" {
				return nil, bus.Terminal(&ranchercluster.AttributeError{Attribute: "ssh_public_key",
					Msg: "this offering's cloud_init_template is not a cloud-config, so it cannot give the nodes an SSH key"})
			}
		}
	}
	r.log.Info("planned cluster", "cluster", p.Cluster.Name, "mode", p.Mode, "zones", len(p.Tenants), "nodes", len(p.Nodes))
	return p.Marshal()
}

// loadPlan is terminate's first step: the plan the create stored.
func (a *activities) loadPlan(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, false)
	if err != nil {
		return nil, err
	}
	raw, err := a.plans.Get(ctx, hexUUID(r.in.ResourceUUID))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, bus.Terminal(fmt.Errorf("no cluster plan is recorded for resource %s: this sitebus did not make its cluster, so it removes nothing", r.in.ResourceUUID))
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, bus.Terminal(fmt.Errorf("cluster record of resource %s: %w", r.in.ResourceUUID, err))
	}
	if _, err := ranchercluster.UnmarshalPlan(rec.Plan); err != nil {
		return nil, bus.Terminal(err)
	}
	return raw, nil
}

func (a *activities) forgetPlan(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, false)
	if err != nil {
		return nil, err
	}
	return nil, a.plans.Delete(ctx, hexUUID(r.in.ResourceUUID))
}

func hexUUID(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "")) }

// vaultCluster names the cluster's Vault objects.
func (r *run) vaultCluster() (vault.Cluster, error) {
	cl, err := vault.ParseCluster(r.plan.ClusterUUIDHex)
	if err != nil {
		return cl, bus.Terminal(err)
	}
	return cl, nil
}
