package ranchersim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
}

// drainPolls is how many reads after the drain action show the Drained
// condition Unknown (draining) before it turns True. The read right after
// the action shows no Drained condition at all: the drain controller has
// not picked the node up yet.
const drainPolls = 1

func (o ProvisioningOptions) withDefaults() ProvisioningOptions {
	def := func(v, d int) int { return max(0, cmp.Or(v, d)) } // 0: d; negative: 0
	o.ClusterNamePolls = def(o.ClusterNamePolls, 2)
	o.NodeActivePolls = def(o.NodeActivePolls, 2)
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
	// Rancher's provisioningv2 controller makes the v1 cluster's
	// namespace the v3 cluster's fleet workspace (spec.fleetWorkspaceName).
	mc := &Cluster{Name: pc.Name, ProvisioningID: pc.ID, FleetWorkspaceName: pc.Namespace, Created: pc.Created}
	mc.ID = s.prov.clusters.Create(func() string { return "c-m-" + randName(8) }, mc)
	pc.ClusterID = mc.ID
	if len(pc.Spec()) == 0 { // imported
		s.issueDefaultToken(mc)
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

// Inventory returns a snapshot, each list ordered by id; not a poll.
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
		c := *n // a snapshot, not a read
		var drained [3]string
		c.State, _, drained = s.nodeStatus(n)
		c.Drained = drained[0]
		inv.Nodes = append(inv.Nodes, c)
	}
	return inv
}

// ProvisioningClusterNamed returns the v1 cluster name in whichever fleet
// workspace (namespace) it is: fleet-default unless its maker chose one.
func (s *Server) ProvisioningClusterNamed(name string) (ProvisioningCluster, bool) {
	return first(s.Inventory().ProvisioningClusters, func(pc ProvisioningCluster) bool { return pc.Name == name })
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

// ProvisioningCluster is a provisioning.cattle.io/v1 Cluster as tests see
// it.
type ProvisioningCluster struct {
	ID        string // "fleet-default/<name>"
	Namespace string
	Name      string
	// ClusterID is its management (v3) cluster, c-m-xxxxxxxx.
	ClusterID   string
	Labels      map[string]string
	Annotations map[string]string
	// Body is the create request's body as sent, on which the
	// representation is built: compare it byte for byte, or decode it
	// (Spec).
	Body    json.RawMessage
	Created time.Time

	uid   string
	reads int
}

// Spec is the body's spec, decoded; nil when it has none.
func (p ProvisioningCluster) Spec() map[string]any {
	var m struct {
		Spec map[string]any `json:"spec"`
	}
	_ = json.Unmarshal(p.Body, &m)
	return m.Spec
}

// Secret is a core/v1 Secret created through steve.
type Secret struct {
	ID, Namespace, Name string
	Type                string // the Secret's type (kubernetes.io/basic-auth)
	Labels, Annotations map[string]string
	// Data is as sent (base64 values); Body the request as sent.
	Data    map[string]string
	Body    json.RawMessage
	Created time.Time

	uid string
}

// dnsLabelRe is a Kubernetes object name as Rancher's webhook accepts for a
// provisioning cluster (an RFC 1123 label: it becomes a namespace-like
// name in several places).
var dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// v1Meta is the part of a v1 create body the simulator reads.
type v1Meta struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Type     string            `json:"type"`
}

// readV1Body reads a steve create body, keeping its bytes, and the
// namespace from the path or the body (the path wins, as steve's does).
func readV1Body(r *http.Request) ([]byte, v1Meta, *apiError) {
	var meta v1Meta
	body, _ := io.ReadAll(r.Body) // in memory: the call log read it
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, meta, steveErr(http.StatusUnprocessableEntity, "InvalidBodyContent", "failed to parse body: "+err.Error())
	}
	meta.Metadata.Namespace = cmp.Or(r.PathValue("ns"), meta.Metadata.Namespace)
	if meta.Metadata.Namespace == "" {
		return nil, meta, steveErr(http.StatusUnprocessableEntity, "Invalid", "metadata.namespace: Required value")
	}
	return body, meta, nil
}

func (s *Server) createV1Cluster(r *http.Request, _ struct{}) (any, error) {
	body, meta, err := readV1Body(r)
	name := meta.Metadata.Name
	switch {
	case err != nil:
		return nil, err
	case !dnsLabelRe.MatchString(name):
		return nil, steveErr(http.StatusUnprocessableEntity, "Invalid",
			`Cluster.provisioning.cattle.io "`+name+`" is invalid: metadata.name: Invalid value: "`+name+
				`": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`)
	}
	pc := &ProvisioningCluster{ID: meta.Metadata.Namespace + "/" + name, Namespace: meta.Metadata.Namespace, Name: name,
		uid: simkit.NewUUID(), Body: body, Labels: simkit.CloneOrEmpty(meta.Metadata.Labels),
		Annotations: simkit.CloneOrEmpty(meta.Metadata.Annotations), Created: s.now()}
	if !s.storeProvCluster(pc) {
		return nil, steveErr(http.StatusConflict, "AlreadyExists", `clusters.provisioning.cattle.io "`+name+`" already exists`)
	}
	s.log.Debug("provisioning cluster created", "id", pc.ID, "cluster", pc.ClusterID)
	return simkit.Created(s.v1ClusterRep(simkit.BaseURL(r), pc, false)), nil
}

// v1ClusterRep is the steve object: the create body as sent, with the
// server's metadata, links and status. read counts the call as a read of
// the cluster (and its nodes).
func (s *Server) v1ClusterRep(b string, pc *ProvisioningCluster, read bool) map[string]any {
	// The create checked that the body is an object with metadata.
	var m map[string]any
	_ = json.Unmarshal(pc.Body, &m)
	meta := m["metadata"].(map[string]any)
	if read {
		pc.reads++
	}
	self := b + "/v1/provisioning.cattle.io.clusters/" + pc.ID
	m["id"], m["type"], m["apiVersion"], m["kind"] = pc.ID, "provisioning.cattle.io.cluster", "provisioning.cattle.io/v1", "Cluster"
	m["links"] = map[string]string{"self": self, "update": self, "remove": self, "view": b + "/apis/provisioning.cattle.io/v1/namespaces/" + pc.Namespace + "/clusters/" + pc.Name}
	maps.Copy(meta, map[string]any{"name": pc.Name, "namespace": pc.Namespace, "uid": pc.uid, "generation": 1,
		"resourceVersion": strconv.Itoa(int(pc.Created.UnixNano() % 1e9)), "creationTimestamp": pc.Created.Format(time.RFC3339)})
	ready := false
	status := map[string]any{"observedGeneration": 1, "clientSecretName": pc.Name + "-kubeconfig", "fleetWorkspaceName": pc.Namespace}
	if mc := s.prov.clusters.Get(pc.ClusterID); mc != nil {
		cs, _ := s.clusterState(mc, read)
		ready = cs == "active"
		if pc.reads >= s.opts.Provisioning.ClusterNamePolls {
			status["clusterName"] = mc.ID
		}
	}
	status["ready"], status["agentDeployed"] = ready, ready
	status["conditions"] = []map[string]any{
		{"type": "Ready", "status": map[bool]string{true: "True", false: "Unknown"}[ready], "lastUpdateTime": pc.Created.Format(time.RFC3339)},
		{"type": "Provisioned", "status": "True", "lastUpdateTime": pc.Created.Format(time.RFC3339)},
	}
	m["status"] = status
	meta["state"] = map[string]any{"name": map[bool]string{true: "active", false: "provisioning"}[ready], "error": false, "transitioning": !ready, "message": ""}
	return m
}

func (s *Server) createSecret(r *http.Request, _ struct{}) (any, error) {
	body, meta, err := readV1Body(r)
	if err != nil {
		return nil, err
	}
	var in struct {
		XType string            `json:"_type"`
		Data  map[string]string `json:"data"`
	}
	_ = json.Unmarshal(body, &in)
	// steve's type field names the schema ("secret"); the Secret's own
	// type is _type. Waldur puts the Secret type into type, which steve
	// then takes as the Secret's.
	typ := in.XType
	if typ == "" && meta.Type != "secret" {
		typ = meta.Type
	}
	sec := &Secret{Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, uid: simkit.NewUUID(),
		Type: cmp.Or(typ, "Opaque"), Body: body, Labels: simkit.CloneOrEmpty(meta.Metadata.Labels),
		Annotations: simkit.CloneOrEmpty(meta.Metadata.Annotations), Data: simkit.CloneOrEmpty(in.Data), Created: s.now()}
	switch {
	case sec.Name == "" && meta.Metadata.GenerateName == "":
		return nil, steveErr(http.StatusUnprocessableEntity, "Invalid", "metadata.name: Required value: name or generateName is required")
	case sec.Name == "":
		sec.ID = s.prov.secrets.Create(func() string {
			sec.Name = meta.Metadata.GenerateName + randName(5)
			return sec.Namespace + "/" + sec.Name
		}, sec)
	case !s.prov.secrets.Put(sec.Namespace+"/"+sec.Name, sec):
		return nil, steveErr(http.StatusConflict, "AlreadyExists", `secrets "`+sec.Name+`" already exists`)
	default:
		sec.ID = sec.Namespace + "/" + sec.Name
	}
	return simkit.Created(secretRep(simkit.BaseURL(r), sec)), nil
}

func secretRep(b string, sec *Secret) map[string]any {
	self := b + "/v1/secrets/" + sec.ID
	return map[string]any{
		"id": sec.ID, "type": "secret", "_type": sec.Type, "apiVersion": "v1", "kind": "Secret",
		"links": map[string]string{"self": self, "update": self, "remove": self},
		"metadata": map[string]any{
			"name": sec.Name, "namespace": sec.Namespace, "uid": sec.uid,
			"labels": simkit.CloneOrEmpty(sec.Labels), "annotations": simkit.CloneOrEmpty(sec.Annotations),
			"creationTimestamp": sec.Created.Format(time.RFC3339),
		},
		"data": simkit.CloneOrEmpty(sec.Data),
	}
}
