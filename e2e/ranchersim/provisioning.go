package ranchersim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Provisioned clusters (issue 13's cluster-provisioner).
//
// Besides its own imported cluster (Options.ClusterID), the simulator
// provisions RKE2 "custom" clusters the way Rancher 2.6+ does:
//
//   - POST /v1/provisioning.cattle.io.clusters (steve) stores the
//     provisioning cluster fleet-default/<name> with the body as sent, and
//     makes its management (v3) cluster c-m-xxxxxxxx at once; the v1
//     object's status.clusterName names it only from the
//     Provisioning.ClusterNamePolls-th read on, as Rancher's controller
//     fills it in a moment after the create answered;
//   - nodes join with a cluster registration token through the sim-only
//     POST /sim/system-agent/register, which stands in for a VM running
//     system-agent-install.sh (nodes.go);
//   - the v3 cluster is "provisioning" until it has an etcd, a control
//     plane and a worker node (one node may carry several roles) and every
//     node is active, then "active", and the v1 status.ready is true;
//   - deleting the v1 or the v3 cluster removes both, with the cluster's
//     nodes, registration tokens and cluster role template bindings, as
//     Rancher's finalizers do; v1 secrets are separate objects and stay.
//
// Progress is counted in reads, not time, so a test never waits for a
// clock: each API read that shows a node, or its cluster, is one "poll" of
// it (see ProvisioningOptions).

// FleetNamespace is where Rancher keeps provisioning clusters and their
// secrets.
const FleetNamespace = "fleet-default"

// DefaultClusterRoleTemplates are Rancher's built-in cluster role
// templates that the simulator knows when Options.ClusterRoleTemplates is
// empty.
var DefaultClusterRoleTemplates = []string{
	"cluster-owner", "cluster-member", "create-ns", "projects-create", "projects-view",
	"nodes-manage", "nodes-view", "storage-manage", "backups-manage", "navlinks-manage",
	"clusterroletemplatebindings-manage", "clusterroletemplatebindings-view",
	"clustercatalogs-manage", "clustercatalogs-view", "clusterscans-manage",
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

// Defaults of ProvisioningOptions.
const (
	DefaultClusterNamePolls = 2
	DefaultNodeActivePolls  = 2
	DefaultDrainPolls       = 1
)

func (o ProvisioningOptions) withDefaults() ProvisioningOptions {
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	def(&o.ClusterNamePolls, DefaultClusterNamePolls)
	def(&o.NodeActivePolls, DefaultNodeActivePolls)
	def(&o.DrainPolls, DefaultDrainPolls)
	return o
}

// provState is what the provisioning parts keep; Server.mu guards it.
type provState struct {
	v1           map[string]*provCluster    // by "namespace/name"
	clusters     map[string]*mgmtCluster    // provisioned v3 clusters by id
	nodes        map[string]*node           // by id "c-m-…:m-…"
	tokens       map[string]*regToken       // by id "c-m-…:crt-…"
	crtbs        map[string]*clusterBinding // by id "c-m-…:crtb-…"
	secrets      map[string]*v1Secret       // by "namespace/name"
	drains       []DrainCall
	nodeFaults   []NodeFault
	clusterRoles map[string]bool
}

func newProvState(clusterRoles []string) provState {
	p := provState{
		v1: map[string]*provCluster{}, clusters: map[string]*mgmtCluster{}, nodes: map[string]*node{},
		tokens: map[string]*regToken{}, crtbs: map[string]*clusterBinding{}, secrets: map[string]*v1Secret{},
		clusterRoles: map[string]bool{},
	}
	for _, r := range clusterRoles {
		p.clusterRoles[r] = true
	}
	return p
}

// provCluster is a provisioning.cattle.io/v1 Cluster. body is the create
// request as sent; the representation is built on it.
type provCluster struct {
	namespace, name, uid string
	body                 []byte
	labels, annotations  map[string]string
	clusterID            string // the management cluster's id
	reads                int
	created              time.Time
}

func (p *provCluster) id() string { return p.namespace + "/" + p.name }

// v1Secret is a core/v1 Secret created through steve.
type v1Secret struct {
	namespace, name, uid, typ string
	body                      []byte
	labels, annotations       map[string]string
	data                      map[string]string // base64, as sent
	created                   time.Time
}

func (sec *v1Secret) id() string { return sec.namespace + "/" + sec.name }

// provisioningRoutes adds the v1 (steve) routes, the v3 routes of
// provisioned clusters and the sim-only node registration.
func (s *Server) provisioningRoutes(mux *http.ServeMux, api func(string, handler)) {
	for _, coll := range []string{"/v1/provisioning.cattle.io.clusters", "/v1/provisioning.cattle.io.cluster"} {
		v1Clusters.routes(s, api, coll, s.createV1Cluster)
	}
	v1Secrets.routes(s, api, "/v1/secrets", s.createSecret)

	api("PUT /v3/clusters/{cluster}", s.updateCluster)
	api("DELETE /v3/clusters/{cluster}", s.deleteCluster)

	// Waldur's client posts to the singular; the collection link is the
	// plural. norman matches type names case-insensitively.
	for _, coll := range []string{"/v3/clusterregistrationtoken", "/v3/clusterregistrationtokens", "/v3/clusterRegistrationTokens"} {
		api("GET "+coll, tokensType.list(s))
		api("POST "+coll, s.createToken)
		api("GET "+coll+"/{id}", tokensType.get(s))
	}
	api("GET /v3/clusters/{cluster}/clusterregistrationtokens", tokensType.list(s))
	api("GET /v3/clusters/{cluster}/clusterRegistrationTokens", tokensType.list(s))

	for _, coll := range []string{"/v3/clusterroletemplatebindings", "/v3/clusterRoleTemplateBindings"} {
		api("GET "+coll, clusterBindingsType.list(s))
		api("POST "+coll, s.createClusterBinding)
		api("GET "+coll+"/{id}", clusterBindingsType.get(s))
		api("DELETE "+coll+"/{id}", clusterBindingsType.remove(s))
	}
	api("GET /v3/clusters/{cluster}/clusterroletemplatebindings", clusterBindingsType.list(s))
	api("GET /v3/clusters/{cluster}/clusterRoleTemplateBindings", clusterBindingsType.list(s))

	api("GET /v3/nodes", s.listNodes)
	api("GET /v3/clusters/{cluster}/nodes", s.listNodes)
	api("GET /v3/nodes/{id}", s.getNode)
	api("DELETE /v3/nodes/{id}", s.deleteNode)
	api("POST /v3/nodes/{id}", s.nodeAction)

	// Not Rancher's API: what a VM running system-agent-install.sh does
	// (nodes.go). It takes the registration token instead of an API key
	// and sits behind the fault middleware, so Down fails it too.
	mux.HandleFunc("POST "+RegisterPath, s.registerHTTP)
}

// v1Err is steve's error body: {"type":"error","links":{},"code":…,
// "message":…,"status":…}.
func v1Err(w http.ResponseWriter, status int, code, msg string) {
	simkit.WriteJSON(w, status, map[string]any{"type": "error", "links": map[string]string{}, "code": code, "message": msg, "status": status})
}

// dnsLabelRe is a Kubernetes object name as Rancher's webhook accepts for a
// provisioning cluster (an RFC 1123 label: it becomes a namespace-like
// name in several places).
var dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// v1Meta is the part of a v1 create body the simulator reads.
type v1Meta struct {
	Type     string `json:"type"`
	Metadata struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Namespace    string            `json:"namespace"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// readV1Body reads a steve create body, keeping its bytes, and the
// namespace from the path or the body (the path wins, as steve's does).
func readV1Body(w http.ResponseWriter, r *http.Request) ([]byte, v1Meta, bool) {
	var meta v1Meta
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, 4<<20)); err != nil {
		v1Err(w, http.StatusUnprocessableEntity, "InvalidBodyContent", "failed to read body: "+err.Error())
		return nil, meta, false
	}
	if err := json.Unmarshal(buf.Bytes(), &meta); err != nil {
		v1Err(w, http.StatusUnprocessableEntity, "InvalidBodyContent", "failed to parse body: "+err.Error())
		return nil, meta, false
	}
	if ns := r.PathValue("ns"); ns != "" {
		meta.Metadata.Namespace = ns
	}
	if meta.Metadata.Namespace == "" {
		v1Err(w, http.StatusUnprocessableEntity, "Invalid", "metadata.namespace: Required value")
		return nil, meta, false
	}
	return buf.Bytes(), meta, true
}

func (s *Server) createV1Cluster(w http.ResponseWriter, r *http.Request) *apiError {
	body, meta, ok := readV1Body(w, r)
	if !ok {
		return nil
	}
	name := meta.Metadata.Name
	if !dnsLabelRe.MatchString(name) {
		v1Err(w, http.StatusUnprocessableEntity, "Invalid",
			`Cluster.provisioning.cattle.io "`+name+`" is invalid: metadata.name: Invalid value: "`+name+
				`": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := meta.Metadata.Namespace + "/" + name
	if s.prov.v1[key] != nil {
		v1Err(w, http.StatusConflict, "AlreadyExists", `clusters.provisioning.cattle.io "`+name+`" already exists`)
		return nil
	}
	pc := &provCluster{
		namespace: meta.Metadata.Namespace, name: name, uid: simkit.NewUUID(), body: body,
		labels: cloneMap(meta.Metadata.Labels), annotations: cloneMap(meta.Metadata.Annotations), created: s.now(),
	}
	s.storeProvCluster(pc)
	s.log.Debug("provisioning cluster created", "id", key, "cluster", pc.clusterID)
	simkit.WriteJSON(w, http.StatusCreated, s.v1ClusterRep(simkit.BaseURL(r), pc, false))
	return nil
}

// storeProvCluster stores pc and makes its management cluster, as
// Rancher's provisioning controller does. Caller holds s.mu.
func (s *Server) storeProvCluster(pc *provCluster) {
	mc := &mgmtCluster{name: pc.name, provID: pc.id(), created: pc.created}
	for mc.id == "" || mc.id == s.opts.ClusterID || s.prov.clusters[mc.id] != nil {
		mc.id = "c-m-" + randLower(8)
	}
	pc.clusterID = mc.id
	s.prov.v1[pc.id()] = pc
	s.prov.clusters[mc.id] = mc
}

// removeCluster deletes a provisioned cluster, its v1 object, nodes,
// registration tokens and cluster role template bindings. Caller holds
// s.mu.
func (s *Server) removeCluster(id string) {
	mc := s.prov.clusters[id]
	if mc == nil {
		return
	}
	delete(s.prov.clusters, id)
	delete(s.prov.v1, mc.provID)
	maps.DeleteFunc(s.prov.nodes, func(_ string, n *node) bool { return n.clusterID == id })
	maps.DeleteFunc(s.prov.tokens, func(_ string, t *regToken) bool { return t.clusterID == id })
	maps.DeleteFunc(s.prov.crtbs, func(_ string, b *clusterBinding) bool { return b.clusterID == id })
	s.log.Debug("cluster removed", "cluster", id, "provisioning", mc.provID)
}

// v1ClusterRep is the steve object: the create body as sent, with the
// server's metadata, links and status. read counts the call as a read of
// the cluster (and its nodes).
func (s *Server) v1ClusterRep(b string, pc *provCluster, read bool) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(pc.body, &m)
	if m == nil {
		m = map[string]any{}
	}
	if read {
		pc.reads++
	}
	self := b + "/v1/provisioning.cattle.io.clusters/" + pc.id()
	m["id"] = pc.id()
	m["type"] = "provisioning.cattle.io.cluster"
	m["apiVersion"] = "provisioning.cattle.io/v1"
	m["kind"] = "Cluster"
	m["links"] = map[string]string{"self": self, "update": self, "remove": self, "view": b + "/apis/provisioning.cattle.io/v1/namespaces/" + pc.namespace + "/clusters/" + pc.name}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["name"] = pc.name
	meta["namespace"] = pc.namespace
	meta["uid"] = pc.uid
	meta["generation"] = 1
	meta["resourceVersion"] = strconv.Itoa(int(pc.created.UnixNano() % 1e9))
	meta["creationTimestamp"] = pc.created.Format(time.RFC3339)
	state, ready := "provisioning", false
	status := map[string]any{"observedGeneration": 1, "ready": false, "agentDeployed": false,
		"clientSecretName": pc.name + "-kubeconfig"}
	if mc := s.prov.clusters[pc.clusterID]; mc != nil {
		cs, _ := s.clusterState(mc, read)
		ready = cs == "active"
		if ready {
			state = "active"
		}
		if pc.reads >= s.opts.Provisioning.ClusterNamePolls {
			status["clusterName"] = mc.id
		}
	}
	status["ready"] = ready
	status["agentDeployed"] = ready
	status["conditions"] = []map[string]any{
		{"type": "Ready", "status": pyBool(ready), "lastUpdateTime": pc.created.Format(time.RFC3339)},
		{"type": "Provisioned", "status": "True", "lastUpdateTime": pc.created.Format(time.RFC3339)},
	}
	m["status"] = status
	meta["state"] = map[string]any{"name": state, "error": false, "transitioning": !ready, "message": ""}
	return m
}

// pyBool is a condition status.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "Unknown"
}

// writeV1Collection writes steve's collection envelope.
func writeV1Collection(w http.ResponseWriter, r *http.Request, typ string, data []map[string]any) {
	sortByID(data)
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"type": "collection", "resourceType": typ, "count": len(data), "revision": "1",
		"links":       map[string]string{"self": simkit.BaseURL(r) + r.URL.Path},
		"createTypes": map[string]string{typ: simkit.BaseURL(r) + r.URL.Path},
		"actions":     map[string]string{},
		"data":        data,
	})
}

func (s *Server) createSecret(w http.ResponseWriter, r *http.Request) *apiError {
	body, meta, ok := readV1Body(w, r)
	if !ok {
		return nil
	}
	var in struct {
		Type  string            `json:"type"`
		XType string            `json:"_type"`
		Data  map[string]string `json:"data"`
	}
	_ = json.Unmarshal(body, &in)
	// steve's type field names the schema ("secret"); the Secret's own
	// type is _type. Waldur puts the Secret type into type, which steve
	// then takes as the Secret's.
	typ := in.XType
	if typ == "" && in.Type != "" && in.Type != "secret" {
		typ = in.Type
	}
	typ = cmp.Or(typ, "Opaque")
	s.mu.Lock()
	defer s.mu.Unlock()
	name := meta.Metadata.Name
	switch {
	case name == "" && meta.Metadata.GenerateName == "":
		v1Err(w, http.StatusUnprocessableEntity, "Invalid", "metadata.name: Required value: name or generateName is required")
		return nil
	case name == "":
		for name == "" || s.prov.secrets[meta.Metadata.Namespace+"/"+name] != nil {
			name = meta.Metadata.GenerateName + randName(5)
		}
	case s.prov.secrets[meta.Metadata.Namespace+"/"+name] != nil:
		v1Err(w, http.StatusConflict, "AlreadyExists", `secrets "`+name+`" already exists`)
		return nil
	}
	sec := &v1Secret{namespace: meta.Metadata.Namespace, name: name, uid: simkit.NewUUID(), typ: typ, body: body,
		labels: cloneMap(meta.Metadata.Labels), annotations: cloneMap(meta.Metadata.Annotations),
		data: cloneMap(in.Data), created: s.now()}
	s.prov.secrets[sec.id()] = sec
	simkit.WriteJSON(w, http.StatusCreated, secretRep(simkit.BaseURL(r), sec))
	return nil
}

func secretRep(b string, sec *v1Secret) map[string]any {
	self := b + "/v1/secrets/" + sec.id()
	return map[string]any{
		"id": sec.id(), "type": "secret", "_type": sec.typ, "apiVersion": "v1", "kind": "Secret",
		"links": map[string]string{"self": self, "update": self, "remove": self},
		"metadata": map[string]any{
			"name": sec.name, "namespace": sec.namespace, "uid": sec.uid,
			"labels": cloneMap(sec.labels), "annotations": cloneMap(sec.annotations),
			"creationTimestamp": sec.created.Format(time.RFC3339),
		},
		"data": cloneMap(sec.data),
	}
}

// labelSelector is a list of key=value (or key==value) terms.
type labelSelector map[string]string

func parseLabelSelector(s string) (labelSelector, string) {
	sel := labelSelector{}
	for term := range strings.SplitSeq(s, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		k, v, ok := strings.Cut(term, "=")
		if !ok || k == "" || strings.ContainsAny(k, "!<>") {
			return nil, "unable to parse requirement: only equality terms (key=value) are simulated: " + term
		}
		sel[k] = strings.TrimPrefix(v, "=")
	}
	return sel, ""
}

func (sel labelSelector) matches(labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
