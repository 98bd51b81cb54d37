package ranchersim

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// ProvisioningCluster is a v1 provisioning cluster as tests see it.
type ProvisioningCluster struct {
	ID        string // "fleet-default/<name>"
	Namespace string
	Name      string
	// ClusterID is its management (v3) cluster, c-m-xxxxxxxx.
	ClusterID   string
	Labels      map[string]string
	Annotations map[string]string
	// Body is the create request's body as sent: compare it byte for
	// byte, or decode it (Spec).
	Body    json.RawMessage
	Created time.Time
}

// Spec is the body's spec, decoded; nil when it has none.
func (p ProvisioningCluster) Spec() map[string]any {
	var m struct {
		Spec map[string]any `json:"spec"`
	}
	_ = json.Unmarshal(p.Body, &m)
	return m.Spec
}

// Cluster is a provisioned management (v3) cluster as tests see it.
type Cluster struct {
	ID             string // c-m-xxxxxxxx
	Name           string // display name (PUT renames it)
	ProvisioningID string // "fleet-default/<name>"
	State          string // provisioning or active
	// Kubeconfigs counts generateKubeconfig calls.
	Kubeconfigs int
	Created     time.Time
}

// Node is a registered node as tests see it.
type Node struct {
	ID, ClusterID, Name        string
	Hostname                   string // also requestedHostname
	Address                    string
	Etcd, ControlPlane, Worker bool
	State                      string // registering, active, draining, drained
	// Drained is the Drained condition's status: "" (none), Unknown,
	// True or False.
	Drained string
	Created time.Time
}

// RegistrationToken is a cluster registration token.
type RegistrationToken struct {
	ID, ClusterID, Token string
	Created              time.Time
}

// ClusterBinding is a cluster role template binding.
type ClusterBinding struct {
	ID, Name, ClusterID, RoleTemplateID string
	UserID, UserPrincipalID             string
	GroupID, GroupPrincipalID           string
	Created                             time.Time
}

// Secret is a v1 secret created through the simulator.
type Secret struct {
	ID, Namespace, Name string
	Type                string // the Secret's type (kubernetes.io/basic-auth)
	Labels, Annotations map[string]string
	// Data is as sent (base64 values); Body the request as sent.
	Data    map[string]string
	Body    json.RawMessage
	Created time.Time
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
		idsOf(inv.ProvisioningClusters, func(p ProvisioningCluster) string { return p.ID }),
		idsOf(inv.Clusters, func(c Cluster) string { return c.ID }),
		idsOf(inv.Nodes, func(n Node) string { return n.ID + "(" + n.Hostname + ")" }),
		idsOf(inv.Tokens, func(t RegistrationToken) string { return t.ID }),
		idsOf(inv.ClusterBindings, func(b ClusterBinding) string { return b.ID }),
		idsOf(inv.Secrets, func(s Secret) string { return s.ID }))
}

func idsOf[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

// Inventory returns a snapshot, each list ordered by id. Reading it does
// not count as a poll.
func (s *Server) Inventory() Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	var inv Inventory
	for _, pc := range s.prov.v1 {
		inv.ProvisioningClusters = append(inv.ProvisioningClusters, toProvisioningCluster(pc))
	}
	for _, mc := range s.prov.clusters {
		inv.Clusters = append(inv.Clusters, s.toCluster(mc))
	}
	for _, n := range s.prov.nodes {
		inv.Nodes = append(inv.Nodes, s.toNode(n))
	}
	for _, t := range s.prov.tokens {
		inv.Tokens = append(inv.Tokens, RegistrationToken{ID: t.id, ClusterID: t.clusterID, Token: t.token, Created: t.created})
	}
	for _, b := range s.prov.crtbs {
		inv.ClusterBindings = append(inv.ClusterBindings, ClusterBinding{ID: b.id, Name: b.name, ClusterID: b.clusterID,
			RoleTemplateID: b.roleTemplateID, UserID: b.userID, UserPrincipalID: b.userPrincipalID,
			GroupID: b.groupID, GroupPrincipalID: b.groupPrincipalID, Created: b.created})
	}
	for _, sec := range s.prov.secrets {
		inv.Secrets = append(inv.Secrets, Secret{ID: sec.id(), Namespace: sec.namespace, Name: sec.name, Type: sec.typ,
			Labels: cloneMap(sec.labels), Annotations: cloneMap(sec.annotations), Data: cloneMap(sec.data),
			Body: append(json.RawMessage(nil), sec.body...), Created: sec.created})
	}
	sort.Slice(inv.ProvisioningClusters, func(i, j int) bool { return inv.ProvisioningClusters[i].ID < inv.ProvisioningClusters[j].ID })
	sort.Slice(inv.Clusters, func(i, j int) bool { return inv.Clusters[i].ID < inv.Clusters[j].ID })
	sort.Slice(inv.Nodes, func(i, j int) bool { return inv.Nodes[i].ID < inv.Nodes[j].ID })
	sort.Slice(inv.Tokens, func(i, j int) bool { return inv.Tokens[i].ID < inv.Tokens[j].ID })
	sort.Slice(inv.ClusterBindings, func(i, j int) bool { return inv.ClusterBindings[i].ID < inv.ClusterBindings[j].ID })
	sort.Slice(inv.Secrets, func(i, j int) bool { return inv.Secrets[i].ID < inv.Secrets[j].ID })
	return inv
}

func toProvisioningCluster(pc *provCluster) ProvisioningCluster {
	return ProvisioningCluster{ID: pc.id(), Namespace: pc.namespace, Name: pc.name, ClusterID: pc.clusterID,
		Labels: cloneMap(pc.labels), Annotations: cloneMap(pc.annotations),
		Body: append(json.RawMessage(nil), pc.body...), Created: pc.created}
}

// toCluster does not count as a read. Caller holds s.mu.
func (s *Server) toCluster(mc *mgmtCluster) Cluster {
	state, _ := s.clusterState(mc, false)
	return Cluster{ID: mc.id, Name: mc.name, ProvisioningID: mc.provID, State: state, Kubeconfigs: mc.kubeconfigs, Created: mc.created}
}

// toNode does not count as a read. Caller holds s.mu.
func (s *Server) toNode(n *node) Node {
	drained, _, _ := s.drained(n, s.nodeFault(n))
	return Node{ID: n.id, ClusterID: n.clusterID, Name: n.name, Hostname: n.hostname, Address: n.address,
		Etcd: n.etcd, ControlPlane: n.controlPlane, Worker: n.worker, State: s.nodeState(n), Drained: drained, Created: n.created}
}

// ProvisioningClusterNamed returns the v1 cluster fleet-default/name.
func (s *Server) ProvisioningClusterNamed(name string) (ProvisioningCluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pc := s.prov.v1[FleetNamespace+"/"+name]
	if pc == nil {
		return ProvisioningCluster{}, false
	}
	return toProvisioningCluster(pc), true
}

// ClusterByID returns a provisioned v3 cluster.
func (s *Server) ClusterByID(id string) (Cluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc := s.prov.clusters[id]
	if mc == nil {
		return Cluster{}, false
	}
	return s.toCluster(mc), true
}

// Nodes returns the nodes of clusterID ("" for all), ordered by id.
func (s *Server) Nodes(clusterID string) []Node {
	var out []Node
	for _, n := range s.Inventory().Nodes {
		if clusterID == "" || n.ClusterID == clusterID {
			out = append(out, n)
		}
	}
	return out
}

// Drains returns the drain actions received, oldest first.
func (s *Server) Drains() []DrainCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]DrainCall(nil), s.prov.drains...)
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
	key := FleetNamespace + "/" + name
	if s.prov.v1[key] != nil {
		return ProvisioningCluster{}, fmt.Errorf("ranchersim: cluster %s exists", key)
	}
	pc := &provCluster{namespace: FleetNamespace, name: name, uid: simkit.NewUUID(), body: body,
		labels: cloneMap(labels), annotations: cloneMap(annotations), created: s.now(),
		reads: s.opts.Provisioning.ClusterNamePolls}
	s.storeProvCluster(pc)
	return toProvisioningCluster(pc), nil
}
