package provisioner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// world is every platform the saga reaches, in memory: OpenStack zones,
// Rancher, Vault, Keycloak groups and Waldur, with one call log, so a
// test sees what was made, in which order, and what is left.
type world struct {
	mu    sync.Mutex
	seq   int
	objs  map[string]*object // OpenStack objects by id
	calls []string

	// failServer names a VM that goes to ERROR when it boots.
	failServer string
	// unrouted are subnet ids no router connects to an external network.
	unrouted []string
	// flaky makes the first call of a method name fail retryably, once.
	flaky map[string]bool
	// serverCall, when set, runs at the start of every EnsureServer
	// outside the lock; the func it returns runs when the call ends
	// (vms_test.go counts the calls in flight with it).
	serverCall func(ctx context.Context, name string) (func(), error)

	clusters map[string]string // Rancher v1 name → v3 id
	tokens   map[string]string // v3 id → token
	bindings map[string]bool   // cluster/role/group
	drained  []string
	// drainStuck makes every drain time out; renamed is the last name
	// the cluster was given.
	drainStuck   bool
	renamed      string
	deletedNodes []string

	policies, roles map[string]bool
	kv              map[string]string
	secretIDs       []string

	groups map[string]bool

	orderState string
	backendID  string
	metadata   map[string]any
	endpoints  []waldur.Endpoint
	// clusterState is what Rancher shows of the v3 cluster ("" is
	// active); resourceState and resourceError Waldur's of the resource.
	clusterState                 string
	resourceState, resourceError string
	orderError                   string
}

type object struct {
	kind, name, id, project, owner string
	fixedIP, status, userData      string
	rules                          []ranchercluster.RulePlan
	pools                          []ranchercluster.AllocationPool
	volumes, ports, sgs            []string
}

func newWorld() *world {
	return &world{objs: map[string]*object{}, flaky: map[string]bool{}, clusters: map[string]string{}, tokens: map[string]string{},
		bindings: map[string]bool{}, policies: map[string]bool{}, roles: map[string]bool{}, kv: map[string]string{},
		groups: map[string]bool{}, orderState: waldur.OrderStateExecuting}
}

func (w *world) log(format string, args ...any) {
	w.calls = append(w.calls, fmt.Sprintf(format, args...))
}

// fail reports a retryable failure for method the first time it is
// called when flaky.
func (w *world) fail(method string) error {
	if w.flaky[method] {
		w.flaky[method] = false
		return errors.New(method + ": 503 Service Unavailable")
	}
	return nil
}

// inventory lists the OpenStack objects left, as "kind name".
func (w *world) inventory() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, o := range w.objs {
		out = append(out, o.kind+" "+o.name)
	}
	sort.Strings(out)
	return out
}

func (w *world) byKind(kind string) []*object {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*object
	for _, o := range w.objs {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// --- OpenStack ---------------------------------------------------------

type fakeCloud struct{ w *world }

func (c fakeCloud) Connect(_ context.Context, az ranchercluster.AZ) (Zone, error) {
	return &fakeZone{w: c.w, project: "admin-" + az.Slug}, nil
}

func (c fakeCloud) Scoped(_ context.Context, _ Zone, p openstack.Project) (Zone, error) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if _, ok := c.w.objs[p.ID]; !ok {
		return nil, fault.Errorf(fault.Invalid, "scope: project %s does not exist", p.ID)
	}
	return &fakeZone{w: c.w, project: p.ID}, nil
}

func (c fakeCloud) Forget(string) {}

type fakeZone struct {
	w       *world
	project string
}

func (z *fakeZone) ProjectID() string { return z.project }

func (z *fakeZone) Flavors(context.Context) ([]ranchercluster.Flavor, error) {
	return []ranchercluster.Flavor{
		{ID: "f-medium", Name: "m1.medium", VCPUs: 2, RAMMB: 4096, DiskGB: 40},
		{ID: "f-large", Name: "m1.large", VCPUs: 4, RAMMB: 8192, DiskGB: 80},
		{ID: "f-xlarge", Name: "m1.xlarge", VCPUs: 8, RAMMB: 16384, DiskGB: 160},
	}, nil
}

func (z *fakeZone) VolumeTypes(context.Context) ([]ranchercluster.VolumeType, error) {
	return []ranchercluster.VolumeType{{ID: "vt-ssd", Name: "ssd"}}, nil
}

func (z *fakeZone) ImageID(context.Context, string) (string, error) { return "img-1", nil }

// UsableSubnet finds every subnet: the saga tests' orders name subnets the
// fake world does not model.
func (z *fakeZone) UsableSubnet(_ context.Context, id string) (openstack.Subnet, bool, error) {
	return openstack.Subnet{ID: id, ProjectID: z.project}, true, nil
}

func (z *fakeZone) SecurityGroups(context.Context) ([]openstack.SecurityGroup, error) {
	return []openstack.SecurityGroup{{ID: "sg-default-" + z.project, Name: "default", ProjectID: z.project}}, nil
}

// ensure finds kind/name in scope (project "" for Keystone) or makes it.
func (z *fakeZone) ensure(kind, name, scope string, owner openstack.Owner, fill func(*object)) (*object, bool, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	if err := z.w.fail("ensure " + kind); err != nil {
		return nil, false, err
	}
	for _, o := range z.w.objs {
		if o.kind == kind && o.name == name && o.project == scope {
			if o.owner != string(owner) {
				return nil, false, fault.Errorf(fault.NotManaged, "%s %s is not ours", kind, name)
			}
			return o, false, nil
		}
	}
	z.w.seq++
	o := &object{kind: kind, name: name, id: fmt.Sprintf("%s-%d", kind, z.w.seq), project: scope, owner: string(owner)}
	if fill != nil {
		fill(o)
	}
	z.w.objs[o.id] = o
	z.w.log("create %s %s in %q", kind, name, scope)
	return o, true, nil
}

func (z *fakeZone) remove(kind, id string, owner openstack.Owner) error {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	o, ok := z.w.objs[id]
	if !ok {
		return nil
	}
	if o.kind != kind || o.owner != string(owner) {
		return fault.Errorf(fault.NotManaged, "%s %s is not ours", kind, id)
	}
	delete(z.w.objs, id)
	z.w.log("delete %s %s", kind, o.name)
	return nil
}

func (z *fakeZone) EnsureProject(_ context.Context, owner openstack.Owner, name, description string) (openstack.Project, bool, error) {
	o, created, err := z.ensure("project", name, "", owner, nil)
	if err != nil {
		return openstack.Project{}, false, err
	}
	return openstack.Project{ID: o.id, Name: name, Description: description}, created, nil
}

func (z *fakeZone) DeleteProject(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("project", id, owner)
}

func (z *fakeZone) EnsureUser(_ context.Context, owner openstack.Owner, name string, _ config.Secret, _ string) (openstack.User, bool, error) {
	o, created, err := z.ensure("user", name, "", owner, nil)
	if err != nil {
		return openstack.User{}, false, err
	}
	return openstack.User{ID: o.id, Name: name}, created, nil
}

func (z *fakeZone) DeleteUser(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("user", id, owner)
}

func (z *fakeZone) SetQuota(_ context.Context, projectID string, q ranchercluster.Quota, instances, volumes int) error {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	z.w.log("quota %s cores=%d instances=%d volumes=%d", projectID, q.Cores, instances, volumes)
	return nil
}

func (z *fakeZone) EnsureNetwork(_ context.Context, owner openstack.Owner, n ranchercluster.NetworkPlan) (openstack.Network, bool, error) {
	o, created, err := z.ensure("network", n.Name, z.project, owner, nil)
	if err != nil {
		return openstack.Network{}, false, err
	}
	return openstack.Network{ID: o.id, Name: n.Name, ProjectID: z.project}, created, nil
}

func (z *fakeZone) DeleteNetwork(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("network", id, owner)
}

func (z *fakeZone) EnsureSubnet(_ context.Context, owner openstack.Owner, networkID string, s ranchercluster.SubnetPlan) (openstack.Subnet, bool, error) {
	o, created, err := z.ensure("subnet", s.Name, z.project, owner, func(o *object) { o.pools = s.AllocationPools })
	if err != nil {
		return openstack.Subnet{}, false, err
	}
	return openstack.Subnet{ID: o.id, Name: s.Name, NetworkID: networkID, CIDR: s.CIDR, AllocationPools: o.pools}, created, nil
}

func (z *fakeZone) DeleteSubnet(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("subnet", id, owner)
}

func (z *fakeZone) EnsureRouter(_ context.Context, owner openstack.Owner, r ranchercluster.RouterPlan, _ string) (openstack.Router, bool, error) {
	o, created, err := z.ensure("router", r.Name, z.project, owner, nil)
	if err != nil {
		return openstack.Router{}, false, err
	}
	return openstack.Router{ID: o.id, Name: r.Name}, created, nil
}

func (z *fakeZone) DeleteRouter(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("router", id, owner)
}

// EnsureSecurityGroup makes the group, or adds the rules an existing
// one lacks, as Neutron's client does.
func (z *fakeZone) EnsureSecurityGroup(_ context.Context, owner openstack.Owner, g ranchercluster.SecurityGroupPlan) (openstack.SecurityGroup, bool, error) {
	o, created, err := z.ensure("security-group", g.Name, z.project, owner, func(o *object) { o.rules = slices.Clone(g.Rules) })
	if err != nil {
		return openstack.SecurityGroup{}, false, err
	}
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	for _, want := range g.Rules {
		if !slices.Contains(o.rules, want) {
			o.rules = append(o.rules, want)
			z.w.log("add rule %s %s %d to %s", want.Direction, want.Protocol, want.PortRangeMin, g.Name)
		}
	}
	return openstack.SecurityGroup{ID: o.id, Name: g.Name}, created, nil
}

func (z *fakeZone) OwnedSecurityGroups(_ context.Context, owner openstack.Owner) (map[string]openstack.SecurityGroup, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	z.w.log("list security groups in %q", z.project)
	out := map[string]openstack.SecurityGroup{}
	for _, o := range z.w.objs {
		if o.kind == "security-group" && o.project == z.project && o.owner == string(owner) {
			sg := openstack.SecurityGroup{ID: o.id, Name: o.name, ProjectID: o.project}
			for _, r := range o.rules {
				sg.Rules = append(sg.Rules, openstack.Rule{RulePlan: r})
			}
			out[o.id] = sg
		}
	}
	return out, nil
}

func (z *fakeZone) OwnedFloatingIPs(_ context.Context, owner openstack.Owner) (map[string]openstack.FloatingIP, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	z.w.log("list floating IPs in %q", z.project)
	out := map[string]openstack.FloatingIP{}
	for _, o := range z.w.objs {
		if o.kind == "floating-ip" && o.project == z.project && o.owner == string(owner) {
			out[o.id] = openstack.FloatingIP{ID: o.id, PortID: strings.TrimPrefix(o.name, "fip-")}
		}
	}
	return out, nil
}

func (z *fakeZone) SubnetReaches(_ context.Context, subnetID, _ string) (bool, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	return !slices.Contains(z.w.unrouted, subnetID), nil
}

// EmptyProject removes every object left in the project, as a purge
// before the project's deletion does.
func (z *fakeZone) EmptyProject(_ context.Context, _ openstack.Owner, projectID string) (openstack.Emptied, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	if err := z.w.fail("empty project"); err != nil {
		return nil, err
	}
	out := openstack.Emptied{}
	for id, o := range z.w.objs {
		if o.project == projectID && o.kind != "project" {
			delete(z.w.objs, id)
			out[o.kind]++
			z.w.log("delete %s %s (emptying its project)", o.kind, o.name)
		}
	}
	return out, nil
}

func (z *fakeZone) DeleteSecurityGroup(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("security-group", id, owner)
}

func (z *fakeZone) EnsurePort(_ context.Context, owner openstack.Owner, p openstack.PortSpec) (openstack.Port, bool, error) {
	o, created, err := z.ensure("port", p.Name, z.project, owner, func(o *object) { o.fixedIP, o.sgs = p.FixedIP, p.SecurityGroups })
	if err != nil {
		return openstack.Port{}, false, err
	}
	return openstack.Port{ID: o.id, Name: p.Name, FixedIPs: []openstack.FixedIP{{SubnetID: p.SubnetID, IPAddress: o.fixedIP}}}, created, nil
}

func (z *fakeZone) DeletePort(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("port", id, owner)
}

func (z *fakeZone) EnsureFloatingIP(_ context.Context, owner openstack.Owner, _, portID string) (openstack.FloatingIP, bool, error) {
	o, created, err := z.ensure("floating-ip", "fip-"+portID, z.project, owner, nil)
	if err != nil {
		return openstack.FloatingIP{}, false, err
	}
	return openstack.FloatingIP{ID: o.id, Address: "203.0.113." + strings.TrimPrefix(o.id, "floating-ip-"), PortID: portID}, created, nil
}

func (z *fakeZone) DeleteFloatingIP(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("floating-ip", id, owner)
}

func (z *fakeZone) EnsureVolume(_ context.Context, owner openstack.Owner, v openstack.VolumeSpec) (openstack.Volume, bool, error) {
	o, created, err := z.ensure("volume", v.Name, z.project, owner, nil)
	if err != nil {
		return openstack.Volume{}, false, err
	}
	return openstack.Volume{ID: o.id, Name: v.Name, SizeGB: v.SizeGB, Status: "available"}, created, nil
}

func (z *fakeZone) DeleteVolume(_ context.Context, owner openstack.Owner, id string) error {
	return z.remove("volume", id, owner)
}

func (z *fakeZone) EnsureServer(ctx context.Context, owner openstack.Owner, s openstack.ServerSpec) (openstack.Server, bool, error) {
	if hook := z.w.serverCall; hook != nil {
		done, err := hook(ctx, s.Name)
		if err != nil {
			return openstack.Server{}, false, err
		}
		defer done()
	}
	z.w.mu.Lock()
	if err := z.w.fail("ensure server " + s.Name); err != nil {
		z.w.mu.Unlock()
		return openstack.Server{}, false, err
	}
	z.w.mu.Unlock()
	o, created, err := z.ensure("server", s.Name, z.project, owner, func(o *object) {
		o.userData, o.volumes, o.ports, o.status = string(s.UserData), s.VolumeIDs, s.PortIDs, "BUILD"
	})
	if err != nil {
		return openstack.Server{}, false, err
	}
	return openstack.Server{ID: o.id, Name: s.Name, Status: o.status}, created, nil
}

func (z *fakeZone) OwnedServers(_ context.Context, owner openstack.Owner) (map[string]openstack.Server, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	out := map[string]openstack.Server{}
	for _, o := range z.w.objs {
		if o.kind == "server" && o.project == z.project && o.owner == string(owner) {
			out[o.id] = openstack.Server{ID: o.id, Name: o.name, Status: o.status}
		}
	}
	return out, nil
}

func (z *fakeZone) WaitServerActive(_ context.Context, id string) (openstack.Server, error) {
	z.w.mu.Lock()
	defer z.w.mu.Unlock()
	o, ok := z.w.objs[id]
	if !ok {
		return openstack.Server{}, fault.Errorf(fault.Invalid, "server %s is gone", id)
	}
	if o.name == z.w.failServer {
		o.status = "ERROR"
		return openstack.Server{}, fault.Errorf(fault.Invalid, "server %s (%s) went to ERROR: No valid host was found", o.name, id)
	}
	o.status = "ACTIVE"
	var addrs []string
	for _, p := range o.ports {
		if po, ok := z.w.objs[p]; ok && po.fixedIP != "" {
			addrs = append(addrs, po.fixedIP)
		}
	}
	return openstack.Server{ID: id, Name: o.name, Status: o.status, Addresses: addrs}, nil
}

// DeleteServer deletes the server and, as Nova does with
// delete_on_termination, its volumes.
func (z *fakeZone) DeleteServer(ctx context.Context, owner openstack.Owner, id string) error {
	z.w.mu.Lock()
	o, ok := z.w.objs[id]
	z.w.mu.Unlock()
	if !ok {
		return nil
	}
	if err := z.remove("server", id, owner); err != nil {
		return err
	}
	for _, v := range o.volumes {
		if err := z.remove("volume", v, owner); err != nil {
			return err
		}
	}
	return nil
}

// --- Rancher -----------------------------------------------------------

type fakeRancher struct{ w *world }

func (r fakeRancher) CreateProvisioningCluster(_ context.Context, spec rancher.ClusterSpec) (rancher.ProvisioningCluster, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if id, ok := r.w.clusters[spec.Name]; ok {
		return rancher.ProvisioningCluster{Name: spec.Name, ClusterID: id}, nil
	}
	r.w.clusters[spec.Name] = "c-m-" + fmt.Sprintf("%08d", len(r.w.clusters)+1)
	r.w.log("rancher create cluster %s k8s=%s", spec.Name, spec.KubernetesVersion)
	return rancher.ProvisioningCluster{Name: spec.Name, Created: true}, nil
}

func (r fakeRancher) WaitV3ClusterID(_ context.Context, name string, _ time.Duration) (string, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.clusters[name], nil
}

func (r fakeRancher) CreateRegistrationToken(_ context.Context, ref rancher.ClusterRef) (rancher.RegistrationToken, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if _, ok := r.w.tokens[ref.ID]; !ok {
		r.w.tokens[ref.ID] = "tok-" + ref.ID
		r.w.log("rancher create token %s", ref.ID)
	}
	return rancher.RegistrationToken{ID: "t-" + ref.ID, ClusterID: ref.ID, Token: config.Secret(r.w.tokens[ref.ID])}, nil
}

func (r fakeRancher) GetRegistrationToken(_ context.Context, id string) (rancher.RegistrationToken, bool, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	t, ok := r.w.tokens[id]
	return rancher.RegistrationToken{ID: "t-" + id, ClusterID: id, Token: config.Secret(t)}, ok, nil
}

// registered: a node VM registers when it is ACTIVE and its cloud-init
// carries a secret-id Vault issued.
func (r fakeRancher) registered() map[string]bool {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	out := map[string]bool{}
	for _, o := range r.w.objs {
		if o.kind != "server" || o.status != "ACTIVE" {
			continue
		}
		for _, s := range r.w.secretIDs {
			if strings.Contains(o.userData, s) {
				out[o.name] = true
			}
		}
	}
	return out
}

func (r fakeRancher) ListClusterNodes(_ context.Context, clusterID string) ([]rancher.Node, error) {
	var out []rancher.Node
	for name := range r.registered() {
		out = append(out, rancher.Node{ID: "n-" + name, ClusterID: clusterID, RequestedHostname: name, State: "active"})
	}
	return out, nil
}

func (r fakeRancher) WaitNodesActive(_ context.Context, _ string, hostnames []string, _ time.Duration, progress func(rancher.NodeProgress)) error {
	reg := r.registered()
	p := rancher.NodeProgress{Total: len(hostnames)}
	for _, h := range hostnames {
		if reg[h] {
			p.Active++
		} else {
			p.Waiting = append(p.Waiting, h+": missing")
		}
	}
	progress(p)
	if p.Active != p.Total {
		return fmt.Errorf("%w: %v", rancher.ErrNodesInactive, p.Waiting)
	}
	return nil
}

func (r fakeRancher) GetCluster(_ context.Context, id string) (rancher.Cluster, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	state := r.w.clusterState
	if state == "" {
		state = "active"
	}
	return rancher.Cluster{ID: id, State: state, TransitioningMessage: map[bool]string{true: "", false: "waiting for the cluster agent"}[state == "active"]}, nil
}

func (r fakeRancher) WaitClusterActive(ctx context.Context, id string, _ time.Duration, progress func(rancher.Cluster)) (rancher.Cluster, bool, error) {
	c, err := r.GetCluster(ctx, id)
	if err != nil {
		return c, false, err
	}
	progress(c)
	return c, c.State == "active", nil
}

func (r fakeRancher) DrainNode(_ context.Context, _ rancher.ClusterRef, nodeID string, _ rancher.DrainInput) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.drained = append(r.w.drained, nodeID)
	r.w.log("rancher drain %s", nodeID)
	return nil
}

func (r fakeRancher) WaitDrained(context.Context, string, time.Duration) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.w.drainStuck {
		return rancher.ErrDrainTimeout
	}
	return nil
}

func (r fakeRancher) DeleteNode(_ context.Context, _ rancher.ClusterRef, nodeID string) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.log("rancher delete node %s", nodeID)
	r.w.deletedNodes = append(r.w.deletedNodes, nodeID)
	return nil
}

func (r fakeRancher) DeleteCluster(_ context.Context, ref rancher.ClusterRef) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if id, ok := r.w.clusters[ref.Name]; ok {
		delete(r.w.clusters, ref.Name)
		delete(r.w.tokens, id)
		for k := range r.w.bindings {
			if strings.HasPrefix(k, id+"/") {
				delete(r.w.bindings, k)
			}
		}
		r.w.log("rancher delete cluster %s", ref.Name)
	}
	return nil
}

func (r fakeRancher) RenameCluster(_ context.Context, _ rancher.ClusterRef, name string) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.renamed = name
	return nil
}

func (r fakeRancher) EnsureClusterGroupBinding(_ context.Context, ref rancher.ClusterRef, role, group string) (bool, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	k := ref.ID + "/" + role + "/" + group
	if r.w.bindings[k] {
		return false, nil
	}
	r.w.bindings[k] = true
	r.w.log("rancher bind %s", k)
	return true, nil
}

func (r fakeRancher) DeleteClusterGroupBinding(_ context.Context, ref rancher.ClusterRef, role, group string) error {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	delete(r.w.bindings, ref.ID+"/"+role+"/"+group)
	return nil
}

func (r fakeRancher) GenerateKubeconfig(_ context.Context, ref rancher.ClusterRef) (config.Secret, error) {
	return config.Secret(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %s
  cluster: {server: "https://rancher.example.com/k8s/clusters/%s"}
users:
- name: %s
  user: {token: "kubeconfig-u-1:s3cret"}
contexts:
- name: %s
  context: {cluster: %s, user: %s}
current-context: %s
`, ref.Name, ref.ID, ref.Name, ref.Name, ref.Name, ref.Name, ref.Name)), nil
}

// --- Vault, Keycloak, Waldur -------------------------------------------

type fakeVault struct{ w *world }

func (v fakeVault) Address() string { return "http://vault.test:8200" }

func (v fakeVault) Ensure(_ context.Context, cl vault.Cluster, tok string) error {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	v.w.policies[cl.PolicyName()], v.w.roles[cl.RoleName()], v.w.kv[cl.SecretPath()] = true, true, tok
	v.w.log("vault ensure %s", cl.Hex())
	return nil
}

func (v fakeVault) RoleID(_ context.Context, cl vault.Cluster) (string, error) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	if !v.w.roles[cl.RoleName()] {
		return "", fmt.Errorf("role %s: %w", cl.RoleName(), backend.ErrNotFound)
	}
	return "role-" + cl.Hex(), nil
}

func (v fakeVault) NewSecretID(_ context.Context, cl vault.Cluster, node string) (string, error) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	if !v.w.roles[cl.RoleName()] {
		return "", fmt.Errorf("role %s: %w", cl.RoleName(), backend.ErrNotFound)
	}
	id := fmt.Sprintf("secret-%d-%s", len(v.w.secretIDs)+1, node)
	v.w.secretIDs = append(v.w.secretIDs, id)
	v.w.log("vault secret-id %s", node)
	return id, nil
}

func (v fakeVault) Cleanup(_ context.Context, cl vault.Cluster) error {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	delete(v.w.policies, cl.PolicyName())
	delete(v.w.roles, cl.RoleName())
	delete(v.w.kv, cl.SecretPath())
	v.w.log("vault cleanup %s", cl.Hex())
	return nil
}

type fakeGroups struct{ w *world }

func (g fakeGroups) Ensure(_ context.Context, _, _, parent string, children []string) ([]string, error) {
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	var created []string
	for _, n := range append([]string{parent}, children...) {
		if !g.w.groups[n] {
			g.w.groups[n] = true
			created = append(created, n)
		}
	}
	return created, nil
}

func (g fakeGroups) Delete(_ context.Context, _, _, parent string, children []string) error {
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	for _, n := range append(slices.Clone(children), parent) {
		delete(g.w.groups, n)
	}
	return nil
}

type fakeWaldur struct{ w *world }

func (f fakeWaldur) GetResource(_ context.Context, uuid string, _ ...string) (*waldur.Resource, error) {
	return &waldur.Resource{UUID: uuid}, nil
}

// fakeOrders settles the world's one order as the order lifecycle does:
// done only while it is executing.
type fakeOrders struct{ w *world }

func (f fakeOrders) MarkErred(_ context.Context, _, _, msg string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if f.w.orderState == waldur.OrderStateExecuting {
		f.w.orderState, f.w.orderError = waldur.OrderStateErred, msg
	}
	return nil
}

func (f fakeWaldur) SetResourceErred(_ context.Context, _, msg, _ string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.resourceState, f.w.resourceError = "Erred", msg
	return nil
}

func (f fakeWaldur) SetResourceOK(context.Context, string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.resourceState, f.w.resourceError = "OK", ""
	return nil
}

func (f fakeOrders) MarkDone(context.Context, string, string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if f.w.orderState == waldur.OrderStateExecuting {
		f.w.orderState = waldur.OrderStateDone
	}
	return nil
}

func (f fakeWaldur) SetResourceBackendID(_ context.Context, _, id string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.backendID = id
	return nil
}

func (f fakeWaldur) SetResourceBackendMetadata(_ context.Context, _ string, md map[string]any) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.metadata = md
	return nil
}

func (f fakeWaldur) SetResourceEndpoints(_ context.Context, _ string, eps []waldur.Endpoint) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.endpoints = eps
	return nil
}

// memPlans is PlanStore in memory, and the cluster pass's records: a
// record's revision counts its writes.
type memPlans struct {
	mu   sync.Mutex
	m    map[string][]byte
	revs map[string]uint64
}

func (p *memPlans) Put(_ context.Context, k string, v []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put(k, v)
	return nil
}

func (p *memPlans) put(k string, v []byte) {
	if p.revs == nil {
		p.revs = map[string]uint64{}
	}
	p.m[k] = v
	p.revs[k]++
}

func (p *memPlans) Entries(context.Context) ([]recordEntry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []recordEntry
	for k, v := range p.m {
		out = append(out, recordEntry{Key: k, Value: v, Rev: p.revs[k]})
	}
	return out, nil
}

func (p *memPlans) Update(_ context.Context, k string, v []byte, rev uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.revs[k] != rev {
		return fmt.Errorf("record %s is at revision %d, not %d", k, p.revs[k], rev)
	}
	p.put(k, v)
	return nil
}

func (p *memPlans) Get(_ context.Context, k string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[k], nil
}

func (p *memPlans) Delete(_ context.Context, k string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, k)
	return nil
}
