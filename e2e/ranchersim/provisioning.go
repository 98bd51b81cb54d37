package ranchersim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Besides its own imported cluster (Options.ClusterID), the simulator
// provisions RKE2 "custom" clusters the way Rancher 2.6+ does:
//
//   - POST /v1/provisioning.cattle.io.clusters (steve) stores the
//     provisioning cluster fleet-default/<name> as sent and makes its
//     management (v3) cluster c-m-xxxxxxxx at once; the v1 status names it
//     from the Provisioning.ClusterNamePolls-th read on, as Rancher's
//     controller fills it in a moment after the create answered;
//   - nodes join with a cluster registration token (RegisterPath);
//   - the v3 cluster is "provisioning" until it has an etcd, a control
//     plane and a worker node (one node may carry several roles) and every
//     node is active, then "active", and the v1 status.ready is true;
//   - deleting the v1 or the v3 cluster removes both, with the cluster's
//     nodes, tokens and cluster bindings, as Rancher's finalizers do; v1
//     secrets are separate objects and stay.
//
// Progress is counted in reads, not time, so a test never waits for a
// clock: each API read that shows a node or its cluster is one "poll" of
// it (ProvisioningOptions).

// FleetNamespace is where Rancher keeps provisioning clusters and their
// secrets.
const FleetNamespace = "fleet-default"

// DefaultClusterRoleTemplates are Rancher's built-in cluster role
// templates that the simulator knows; a cluster binding to another one is a
// 422.
var DefaultClusterRoleTemplates = []string{
	"cluster-owner", "cluster-member", "create-ns", "projects-create", "projects-view", "nodes-manage", "nodes-view",
	"storage-manage", "backups-manage", "navlinks-manage", "clusterroletemplatebindings-manage",
	"clusterroletemplatebindings-view", "clustercatalogs-manage", "clustercatalogs-view", "clusterscans-manage",
}

// ProvisioningOptions pace the simulated controllers. A zero field takes
// its default; a negative one means "at once" (no read needed).
type ProvisioningOptions struct {
	// ClusterNamePolls is the read of a new v1 cluster from which its
	// status.clusterName is set (default 2: the first read after the
	// create has none yet, as with Rancher).
	ClusterNamePolls int
	// NodeActivePolls is the read of a registered node from which it is
	// active (default 2: registering first).
	NodeActivePolls int
	// DrainPolls is how many reads after the drain action show the Drained
	// condition Unknown (draining) before it turns True (default 1). The
	// read right after the action shows no Drained condition at all: the
	// drain controller has not picked the node up yet.
	DrainPolls int
}

func (o ProvisioningOptions) withDefaults() ProvisioningOptions {
	def := func(v, d int) int { return max(0, cmp.Or(v, d)) } // 0: d; negative: 0
	o.ClusterNamePolls = def(o.ClusterNamePolls, 2)
	o.NodeActivePolls = def(o.NodeActivePolls, 2)
	o.DrainPolls = def(o.DrainPolls, 1)
	return o
}

// provState is what the provisioning parts keep; Server.mu guards it.
type provState struct {
	v1         simkit.Store[ProvisioningCluster] // by "namespace/name"
	clusters   simkit.Store[Cluster]             // provisioned v3 clusters by id
	nodes      simkit.Store[Node]                // by id "c-m-…:m-…"
	tokens     simkit.Store[RegistrationToken]   // by id "c-m-…:crt-…"
	crtbs      simkit.Store[ClusterBinding]      // by id "c-m-…:crtb-…"
	secrets    simkit.Store[Secret]              // by "namespace/name"
	drains     []DrainCall
	nodeFaults []NodeFault
}

// storeProvCluster stores pc unless its id is taken and makes its
// management cluster, as Rancher's provisioning controller does. Caller
// holds s.mu.
func (s *Server) storeProvCluster(pc *ProvisioningCluster) bool {
	if !s.prov.v1.Put(pc.ID, pc) {
		return false
	}
	mc := &Cluster{Name: pc.Name, ProvisioningID: pc.ID, Created: pc.Created}
	mc.ID = s.prov.clusters.Create(func() string { return "c-m-" + randLower(8) }, mc)
	pc.ClusterID = mc.ID
	s.issueDefaultToken(mc)
	if len(pc.Spec()) == 0 {
		s.addCreatorClusterBinding(mc)
	}
	return true
}

// addCreatorClusterBinding gives the cluster's creator (the API key's
// user) cluster-owner, as Rancher's creator-cluster-owner binding does.
// The simulator adds it to imported clusters only: the provisioned ones'
// tests count their bindings as sitebus makes them. Caller holds s.mu.
func (s *Server) addCreatorClusterBinding(mc *Cluster) {
	cb := &ClusterBinding{Name: "creator-cluster-owner", ClusterID: mc.ID, RoleTemplateID: "cluster-owner",
		Subject:     Subject{UserID: s.opts.UserID, UserPrincipalID: "local://" + s.opts.UserID},
		Annotations: map[string]string{}, Labels: map[string]string{"authz.management.cattle.io/creator-role-binding": "true"},
		creatorID: s.opts.UserID, uuid: simkit.NewUUID(), Created: s.now()}
	cb.ID = cb.ClusterID + ":" + cb.Name
	s.prov.crtbs.Put(cb.ID, cb)
}

// removeCluster deletes a provisioned cluster, its v1 object, nodes,
// registration tokens and cluster role template bindings. Caller holds
// s.mu.
func (s *Server) removeCluster(id string) {
	mc := s.prov.clusters.Delete(id)
	if mc == nil {
		return
	}
	s.prov.v1.Delete(mc.ProvisioningID)
	s.prov.nodes.DeleteFunc(func(n *Node) bool { return n.ClusterID == id })
	s.prov.tokens.DeleteFunc(func(t *RegistrationToken) bool { return t.ClusterID == id })
	s.prov.crtbs.DeleteFunc(func(b *ClusterBinding) bool { return b.ClusterID == id })
	s.log.Debug("cluster removed", "cluster", id, "provisioning", mc.ProvisioningID)
}

// Inventory is everything the provisioning parts hold. The simulator's
// own cluster (Options.ClusterID) and its projects are not in it.
type Inventory struct {
	ProvisioningClusters []ProvisioningCluster
	Clusters             []Cluster
	Nodes                []Node
	Tokens               []RegistrationToken
	ClusterBindings      []ClusterBinding
	Secrets              []Secret
}

// Empty reports whether nothing is left: what a terminate must leave.
func (inv Inventory) Empty() bool {
	return len(inv.ProvisioningClusters)+len(inv.Clusters)+len(inv.Nodes)+len(inv.Tokens)+
		len(inv.ClusterBindings)+len(inv.Secrets) == 0
}

// String lists what is left, for a test's failure message.
func (inv Inventory) String() string {
	return fmt.Sprintf("provisioning clusters %v, clusters %v, nodes %v, tokens %v, cluster bindings %v, secrets %v",
		simkit.Map(inv.ProvisioningClusters, func(p ProvisioningCluster) string { return p.ID }),
		simkit.Map(inv.Clusters, func(c Cluster) string { return c.ID }),
		simkit.Map(inv.Nodes, func(n Node) string { return n.ID + "(" + n.Hostname + ")" }),
		simkit.Map(inv.Tokens, func(t RegistrationToken) string { return t.ID }),
		simkit.Map(inv.ClusterBindings, func(b ClusterBinding) string { return b.ID }),
		simkit.Map(inv.Secrets, func(s Secret) string { return s.ID }))
}

// Inventory returns a snapshot, each list ordered by id. Reading it does
// not count as a poll.
func (s *Server) Inventory() Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := Inventory{ProvisioningClusters: s.prov.v1.Copies(nil), Tokens: s.prov.tokens.Copies(nil),
		ClusterBindings: s.prov.crtbs.Copies(nil), Secrets: s.prov.secrets.Copies(nil)}
	for _, mc := range s.prov.clusters.ListByID(func(mc *Cluster) bool { return !mc.own }) {
		c := *mc // a snapshot, not a read
		c.State, _ = s.clusterState(mc, false)
		inv.Clusters = append(inv.Clusters, c)
	}
	for _, n := range s.prov.nodes.ListByID(nil) {
		inv.Nodes = append(inv.Nodes, s.snapshot(n))
	}
	return inv
}

// ProvisioningClusterNamed returns the v1 cluster fleet-default/name.
func (s *Server) ProvisioningClusterNamed(name string) (ProvisioningCluster, bool) {
	return first(s.Inventory().ProvisioningClusters, func(pc ProvisioningCluster) bool { return pc.ID == FleetNamespace+"/"+name })
}

// ClusterByID returns a provisioned v3 cluster.
func (s *Server) ClusterByID(id string) (Cluster, bool) {
	return first(s.Inventory().Clusters, func(c Cluster) bool { return c.ID == id })
}

// first is the first of items that match accepts.
func first[T any](items []T, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(items, match); i >= 0 {
		return items[i], true
	}
	var zero T
	return zero, false
}

// Nodes returns the nodes of clusterID ("" for all), ordered by id.
func (s *Server) Nodes(clusterID string) []Node {
	return slices.DeleteFunc(s.Inventory().Nodes, func(n Node) bool { return clusterID != "" && n.ClusterID != clusterID })
}

// Drains returns the drain actions received, oldest first.
func (s *Server) Drains() []DrainCall {
	return locked(s, func() []DrainCall { return slices.Clone(s.prov.drains) })
}

// AddProvisioningCluster creates a provisioning cluster behind the
// client's back (someone using Rancher's UI), with the given metadata and
// an RKE2 spec, and returns it with its v3 id, which its status names at
// once.
func (s *Server) AddProvisioningCluster(name string, labels, annotations map[string]string) (ProvisioningCluster, error) {
	if !dnsLabelRe.MatchString(name) {
		return ProvisioningCluster{}, fmt.Errorf("ranchersim: %q is no cluster name", name)
	}
	body, err := json.Marshal(map[string]any{
		"type":     "provisioning.cattle.io.cluster",
		"metadata": map[string]any{"name": name, "namespace": FleetNamespace, "labels": labels, "annotations": annotations},
		"spec":     map[string]any{"kubernetesVersion": "v1.31.7+rke2r1", "rkeConfig": map[string]any{}},
	})
	if err != nil {
		return ProvisioningCluster{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pc := &ProvisioningCluster{ID: FleetNamespace + "/" + name, Namespace: FleetNamespace, Name: name, uid: simkit.NewUUID(),
		Body: body, Labels: simkit.CloneOrEmpty(labels), Annotations: simkit.CloneOrEmpty(annotations), Created: s.now(),
		reads: s.opts.Provisioning.ClusterNamePolls}
	if !s.storeProvCluster(pc) {
		return ProvisioningCluster{}, fmt.Errorf("ranchersim: cluster %s exists", pc.ID)
	}
	return *pc, nil
}
