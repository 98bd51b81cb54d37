package ranchersim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// RegisterPath is the sim-only endpoint that stands in for a node running
// Rancher's system-agent-install.sh. It is not Rancher's API.
//
//	POST /sim/system-agent/register
//	{"token":    "<cluster registration token>",     // required
//	 "hostname": "k8s-abc-server-1",                  // required: requestedHostname
//	 "roles":    ["etcd","controlplane","worker"],    // at least one
//	 "address":  "10.0.0.11"}                         // optional: ipAddress
//
// It answers 201 with the v3 node (state "registering"; "active" from the
// Provisioning.NodeActivePolls-th read on), or 200 with the node when a
// node of that hostname is already in the cluster (an agent restarted on
// the same machine); 401 when the token is no live registration token of
// any cluster (as the real agent's connect fails); 422 for a missing
// hostname, no role or an unknown role. It needs no API key: the token is
// the credential, as for the real agent. Roles are the install script's
// flags without the dashes (--etcd --controlplane --worker);
// "controlPlane" is accepted too. Faults (Down, AddFault) apply to it.
const RegisterPath = "/sim/system-agent/register"

// Registration is the body of RegisterPath.
type Registration struct {
	Token    string   `json:"token"`
	Hostname string   `json:"hostname"`
	Roles    []string `json:"roles"`
	Address  string   `json:"address"`
}

// ErrRegistrationRefused is RegisterNode's error for a token that is no
// live registration token (the HTTP endpoint's 401).
var ErrRegistrationRefused = errors.New("ranchersim: registration token is not valid")

// NodeDrainInput is Rancher's v3 NodeDrainInput, as a drain call sent it;
// nil is a field left out.
type NodeDrainInput struct {
	DeleteLocalData  *bool  `json:"deleteLocalData,omitempty"`
	Force            *bool  `json:"force,omitempty"`
	GracePeriod      *int64 `json:"gracePeriod,omitempty"`
	IgnoreDaemonSets *bool  `json:"ignoreDaemonSets,omitempty"`
	Timeout          *int64 `json:"timeout,omitempty"`
}

// DrainCall is one ?action=drain received.
type DrainCall struct {
	NodeID, ClusterID, Hostname string
	// Body is the request body as sent; Input is it decoded.
	Body  string
	Input NodeDrainInput
	Time  time.Time
}

// NodeFault makes nodes misbehave. Hostname matches requestedHostname; ""
// matches every node. Faults apply from the next read on, to nodes
// registered before or after.
type NodeFault struct {
	Hostname string `json:"hostname"`
	// NeverActive keeps the node "registering" (an agent that cannot reach
	// Rancher after registering).
	NeverActive bool `json:"never_active"`
	// Error puts the node in state "error" with this message (an agent
	// whose RKE2 install failed).
	Error string `json:"error"`
	// DrainStuck keeps a drain "Unknown" (draining) for ever: a pod that
	// never leaves, a PodDisruptionBudget.
	DrainStuck bool `json:"drain_stuck"`
	// DrainError makes a drain end with the Drained condition False and
	// this message, as Rancher's drain controller reports kubectl's error.
	DrainError string `json:"drain_error"`
}

// node is a v3 Node of a provisioned cluster.
type node struct {
	id, name, clusterID        string
	hostname, address          string
	etcd, controlPlane, worker bool
	reads                      int // reads since registration
	created                    time.Time

	// drainReads counts reads since the last drain action.
	drainAsked bool
	drainReads int
}

// nodeFault is the faults matching n, merged. Caller holds s.mu.
func (s *Server) nodeFault(n *node) NodeFault {
	var f NodeFault
	for _, nf := range s.prov.nodeFaults {
		if nf.Hostname != "" && nf.Hostname != n.hostname {
			continue
		}
		f.NeverActive = f.NeverActive || nf.NeverActive
		f.DrainStuck = f.DrainStuck || nf.DrainStuck
		if nf.Error != "" {
			f.Error = nf.Error
		}
		if nf.DrainError != "" {
			f.DrainError = nf.DrainError
		}
	}
	return f
}

// observeNode counts one read of n, which moves its simulated
// controllers on. Caller holds s.mu.
func (s *Server) observeNode(n *node) {
	n.reads++
	if n.drainAsked {
		n.drainReads++
	}
}

// nodeState is the node's v3 state. Caller holds s.mu.
func (s *Server) nodeState(n *node) string {
	f := s.nodeFault(n)
	if f.Error != "" {
		return "error"
	}
	if f.NeverActive || n.reads < s.opts.Provisioning.NodeActivePolls {
		return "registering"
	}
	switch st, _, _ := s.drained(n, f); st {
	case "", "Unknown":
		if n.drainAsked {
			return "draining"
		}
	case "True":
		return "drained"
	}
	return "active"
}

// drained is the Drained condition's status, reason and message: ""
// (no condition: no drain asked, or the controller has not run yet),
// "Unknown" (draining), "True" or "False" (failed), as Rancher's drain
// controller sets them. Caller holds s.mu.
func (s *Server) drained(n *node, f NodeFault) (status, reason, message string) {
	switch {
	case !n.drainAsked || n.drainReads <= 1:
		return "", "", ""
	case f.DrainStuck || n.drainReads <= 1+s.opts.Provisioning.DrainPolls:
		return "Unknown", "", ""
	case f.DrainError != "":
		return "False", "Error", f.DrainError
	}
	return "True", "", ""
}

// RegisterNode registers a node as RegisterPath does (Go callers: a
// simulated VM in the same process).
func (s *Server) RegisterNode(reg Registration) (Node, error) {
	n, _, apiErr := s.register(reg)
	if apiErr != nil {
		if apiErr.status == http.StatusUnauthorized {
			return Node{}, ErrRegistrationRefused
		}
		return Node{}, fmt.Errorf("ranchersim: register %s: %s", reg.Hostname, apiErr.message)
	}
	return n, nil
}

func (s *Server) registerHTTP(w http.ResponseWriter, r *http.Request) {
	var reg Registration
	if err := json.NewDecoder(r.Body).Decode(&reg); err != nil {
		writeErr(w, invalidBody("Failed to parse body: "+err.Error()))
		return
	}
	n, created, apiErr := s.register(reg)
	if apiErr != nil {
		writeErr(w, apiErr)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.mu.Lock()
	rep := s.nodeRep(simkit.BaseURL(r), s.prov.nodes[n.ID], false)
	s.mu.Unlock()
	simkit.WriteJSON(w, status, rep)
}

func (s *Server) register(reg Registration) (Node, bool, *apiError) {
	if reg.Hostname == "" {
		return Node{}, false, missingRequired("hostname")
	}
	n := &node{hostname: reg.Hostname, address: reg.Address}
	for _, role := range reg.Roles {
		switch strings.ToLower(role) {
		case "etcd":
			n.etcd = true
		case "controlplane", "control-plane":
			n.controlPlane = true
		case "worker":
			n.worker = true
		default:
			return Node{}, false, invalidBody("unknown role " + role + " (etcd, controlplane, worker)")
		}
	}
	if !n.etcd && !n.controlPlane && !n.worker {
		return Node{}, false, missingRequired("roles")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var tok *regToken
	for _, t := range s.prov.tokens {
		if reg.Token != "" && t.token == reg.Token {
			tok = t
		}
	}
	if tok == nil {
		return Node{}, false, newErr(http.StatusUnauthorized, "Unauthorized", "registration token is not valid")
	}
	for _, id := range s.sortedNodeIDs() {
		if old := s.prov.nodes[id]; old.clusterID == tok.clusterID && old.hostname == reg.Hostname {
			return s.toNode(old), false, nil
		}
	}
	n.clusterID = tok.clusterID
	n.created = s.now()
	for n.id == "" || s.prov.nodes[n.id] != nil {
		n.name = "m-" + randLower(12)
		n.id = n.clusterID + ":" + n.name
	}
	s.prov.nodes[n.id] = n
	s.log.Debug("node registered", "id", n.id, "hostname", n.hostname)
	return s.toNode(n), true, nil
}

// sortedNodeIDs gives a stable order (reads move state on). Caller holds
// s.mu.
func (s *Server) sortedNodeIDs() []string {
	ids := make([]string, 0, len(s.prov.nodes))
	for id := range s.prov.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func notFoundNode(id string) *apiError {
	name := id
	if _, n, ok := strings.Cut(id, ":"); ok {
		name = n
	}
	return notFound(`nodes.management.cattle.io "` + name + `" not found`)
}

// listNodes lists nodes with norman filters (clusterId=…), or those of the
// {cluster} in the path. Each listed node counts as read.
func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) *apiError {
	cluster := r.PathValue("cluster")
	b := simkit.BaseURL(r)
	s.mu.Lock()
	if cluster != "" && !s.knownCluster(cluster) {
		s.mu.Unlock()
		return notFoundCluster(cluster)
	}
	conds := conditions(r)
	objs := []map[string]any{}
	for _, id := range s.sortedNodeIDs() {
		n := s.prov.nodes[id]
		if cluster != "" && n.clusterID != cluster {
			continue
		}
		// Filtered before counting, so a list of another cluster's nodes
		// does not move these on.
		if !matches(map[string]any{"clusterId": n.clusterID, "requestedHostname": n.hostname, "hostname": n.hostname}, conds) {
			continue
		}
		objs = append(objs, s.nodeRep(b, n, true))
	}
	s.mu.Unlock()
	writeCollection(w, r, "node", b+"/v3/nodes", objs)
	return nil
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.prov.nodes[r.PathValue("id")]
	if n == nil {
		return notFoundNode(r.PathValue("id"))
	}
	simkit.WriteJSON(w, http.StatusOK, s.nodeRep(simkit.BaseURL(r), n, true))
	return nil
}

// deleteNode removes the node from its cluster (Rancher deletes the
// machine and the Kubernetes node).
func (s *Server) deleteNode(w http.ResponseWriter, r *http.Request) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	n := s.prov.nodes[id]
	if n == nil {
		return notFoundNode(id)
	}
	rep := s.nodeRep(simkit.BaseURL(r), n, false)
	delete(s.prov.nodes, id)
	rep["state"] = "removing"
	rep["transitioning"] = "yes"
	simkit.WriteJSON(w, http.StatusOK, rep)
	return nil
}

// nodeAction serves POST /v3/nodes/<id>?action=drain; the body (Rancher's
// NodeDrainInput) is recorded as sent. Other actions (cordon, uncordon,
// stopDrain) are not simulated.
func (s *Server) nodeAction(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	action := paramValue(r, "action")
	if action == "" {
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "Method POST not supported")
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
		return invalidBody("Failed to read body: " + err.Error())
	}
	var in NodeDrainInput
	if action == "drain" && len(bytes.TrimSpace(buf.Bytes())) > 0 {
		if err := json.Unmarshal(buf.Bytes(), &in); err != nil {
			return invalidBody("Failed to parse body: " + err.Error())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.prov.nodes[id]
	if n == nil {
		return notFoundNode(id)
	}
	if action != "drain" {
		return newErr(http.StatusUnprocessableEntity, "InvalidAction", "Invalid action: "+action)
	}
	n.drainAsked, n.drainReads = true, 0
	s.prov.drains = append(s.prov.drains, DrainCall{NodeID: n.id, ClusterID: n.clusterID, Hostname: n.hostname,
		Body: buf.String(), Input: in, Time: s.now()})
	s.log.Debug("node drain", "id", n.id, "body", buf.String())
	simkit.WriteJSON(w, http.StatusOK, s.nodeRep(simkit.BaseURL(r), n, false))
	return nil
}

// nodeRep is the v3 node; read counts the call as a read of it. Caller
// holds s.mu.
func (s *Server) nodeRep(b string, n *node, read bool) map[string]any {
	if read {
		s.observeNode(n)
	}
	f := s.nodeFault(n)
	state := s.nodeState(n)
	self := b + "/v3/nodes/" + n.id
	ts := n.created.Format(time.RFC3339)
	conds := []map[string]any{}
	if state != "registering" {
		for _, t := range []string{"Initialized", "Provisioned", "Registered", "Ready"} {
			conds = append(conds, map[string]any{"type": t, "status": "True", "lastUpdateTime": ts})
		}
	} else {
		conds = append(conds, map[string]any{"type": "Registered", "status": "Unknown", "lastUpdateTime": ts,
			"message": "waiting for the node's agent to connect"})
	}
	transitioning, msg := "no", ""
	if st, reason, message := s.drained(n, f); st != "" {
		c := map[string]any{"type": "Drained", "status": st, "lastUpdateTime": s.now().Format(time.RFC3339)}
		if reason != "" {
			c["reason"] = reason
		}
		if message != "" {
			c["message"] = message
		}
		conds = append(conds, c)
		if st == "False" {
			transitioning, msg = "error", message
		}
	}
	switch state {
	case "registering", "draining":
		transitioning = "yes"
	case "error":
		transitioning, msg = "error", f.Error
	}
	m := map[string]any{
		"id": n.id, "name": n.name, "type": "node", "baseType": "node",
		"clusterId": n.clusterID, "namespaceId": n.clusterID,
		"hostname": n.hostname, "requestedHostname": n.hostname, "nodeName": n.hostname,
		"ipAddress": n.address, "externalIpAddress": n.address,
		"etcd": n.etcd, "controlPlane": n.controlPlane, "worker": n.worker,
		"unschedulable": n.drainAsked, "conditions": conds,
		"annotations": map[string]string{}, "labels": map[string]string{"kubernetes.io/hostname": n.hostname},
		"links": map[string]string{"self": self, "update": self, "remove": self, "cluster": b + "/v3/clusters/" + n.clusterID},
		"actions": map[string]string{
			"drain": self + "?action=drain", "cordon": self + "?action=cordon",
		},
	}
	timestamps(m, n.created)
	m["state"] = state
	m["transitioning"] = transitioning
	m["transitioningMessage"] = msg
	return m
}

// AddNodeFault injects f; ClearNodeFaults removes them all.
func (s *Server) AddNodeFault(f NodeFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prov.nodeFaults = append(s.prov.nodeFaults, f)
}

// ClearNodeFaults removes every node fault.
func (s *Server) ClearNodeFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prov.nodeFaults = nil
}
