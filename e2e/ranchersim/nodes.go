package ranchersim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// RegisterPath is the sim-only endpoint that stands in for a node running
// Rancher's system-agent-install.sh (it is not Rancher's API): POST a
// Registration. It answers 201 with the v3 node (state "registering";
// "active" from the Provisioning.NodeActivePolls-th read on), or 200 with
// the node when a node of that hostname is already in the cluster (an
// agent restarted on the same machine); 401 when the token is no live
// registration token of any cluster (as the real agent's connect fails);
// 422 for a missing hostname, no role or an unknown role. It needs no API
// key: the token is the credential, as for the real agent. Faults (Down,
// AddFault) apply to it.
const RegisterPath = "/sim/system-agent/register"

// Registration is the body of RegisterPath.
type Registration struct {
	Token    string `json:"token"`    // a cluster registration token's
	Hostname string `json:"hostname"` // the node's requestedHostname
	// Roles are the install script's flags without the dashes (etcd,
	// controlplane, worker); "controlPlane" is accepted too.
	Roles   []string `json:"roles"`
	Address string   `json:"address"` // optional: its ipAddress
}

// ErrRegistrationRefused is what a node's agent (e2e/vmboot) reports when
// RegisterPath answers 401: the token is no live registration token.
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

// Node is a v3 node of a provisioned cluster as tests see it.
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

	reads      int  // since registration
	drainAsked bool // a drain action came
	drainReads int  // since the last drain action
}

// nodeFault is the faults matching n, merged. Caller holds s.mu.
func (s *Server) nodeFault(n *Node) NodeFault {
	var f NodeFault
	for _, nf := range s.prov.nodeFaults {
		if nf.Hostname == "" || nf.Hostname == n.Hostname {
			f.NeverActive = f.NeverActive || nf.NeverActive
			f.DrainStuck = f.DrainStuck || nf.DrainStuck
			f.Error = cmp.Or(nf.Error, f.Error)
			f.DrainError = cmp.Or(nf.DrainError, f.DrainError)
		}
	}
	return f
}

// observeNode counts one read of n, which moves its simulated
// controllers on. Caller holds s.mu.
func (s *Server) observeNode(n *Node) {
	n.reads++
	if n.drainAsked {
		n.drainReads++
	}
}

// nodeStatus is n's v3 state and transitioning message, and its Drained
// condition (status, reason, message; no status when the drain
// controller has not run: no drain asked, or not yet), as Rancher's
// controllers set them. Caller holds s.mu.
func (s *Server) nodeStatus(n *Node) (state, msg string, drained [3]string) {
	f := s.nodeFault(n)
	switch {
	case !n.drainAsked || n.drainReads <= 1:
	case f.DrainStuck || n.drainReads <= 1+drainPolls:
		drained[0] = "Unknown"
	case f.DrainError != "":
		drained, msg = [3]string{"False", "Error", f.DrainError}, f.DrainError
	default:
		drained[0] = "True"
	}
	switch {
	case f.Error != "":
		return "error", f.Error, drained
	case f.NeverActive || n.reads < s.opts.Provisioning.NodeActivePolls:
		return "registering", msg, drained
	case drained[0] == "True":
		return "drained", msg, drained
	case n.drainAsked && drained[0] != "False":
		return "draining", msg, drained
	}
	return "active", msg, drained
}

// register adds the node reg describes (201), or answers the one of its
// hostname already in the token's cluster (200).
func (s *Server) register(r *http.Request, reg Registration) (any, error) {
	if reg.Hostname == "" {
		return nil, missingRequired("hostname")
	}
	n := &Node{Hostname: reg.Hostname, Address: reg.Address}
	flags := map[string]*bool{"etcd": &n.Etcd, "controlplane": &n.ControlPlane, "control-plane": &n.ControlPlane, "worker": &n.Worker}
	for _, role := range reg.Roles {
		flag := flags[strings.ToLower(role)]
		if flag == nil {
			return nil, invalidBody("unknown role " + role + " (etcd, controlplane, worker)")
		}
		*flag = true
	}
	if !n.Etcd && !n.ControlPlane && !n.Worker {
		return nil, missingRequired("roles")
	}
	tok := s.prov.tokens.Find(func(t *RegistrationToken) bool { return reg.Token != "" && t.Token == reg.Token })
	if tok == nil {
		return nil, unauthorized
	}
	if old := s.prov.nodes.Find(func(o *Node) bool { return o.ClusterID == tok.ClusterID && o.Hostname == reg.Hostname }); old != nil {
		return s.nodeRep(simkit.BaseURL(r), old, false), nil
	}
	n.ClusterID, n.Created = tok.ClusterID, s.now()
	n.ID = s.prov.nodes.Create(func() string { n.Name = "m-" + randName(12); return n.ClusterID + ":" + n.Name }, n)
	s.log.Debug("node registered", "id", n.ID, "hostname", n.Hostname)
	return simkit.Created(s.nodeRep(simkit.BaseURL(r), n, false)), nil
}

// nodeAction serves POST /v3/nodes/<id>?action=drain; the body (Rancher's
// NodeDrainInput) is recorded as sent. Other actions (cordon, uncordon,
// stopDrain) are not simulated.
func (s *Server) nodeAction(r *http.Request, _ struct{}) (any, error) {
	action := paramValue(r, "action")
	if action == "" {
		return nil, errNoPost
	}
	body, _ := io.ReadAll(r.Body) // in memory: the call log read it
	var in NodeDrainInput
	if action == "drain" && len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, invalidBody("Failed to parse body: " + err.Error())
		}
	}
	n := s.prov.nodes.Get(r.PathValue("id"))
	switch {
	case n == nil:
		return nil, nodesType.notFound(r.PathValue("id"))
	case action != "drain":
		return nil, invalidAction(action)
	}
	n.drainAsked, n.drainReads = true, 0
	s.prov.drains = append(s.prov.drains, DrainCall{NodeID: n.ID, ClusterID: n.ClusterID, Hostname: n.Hostname,
		Body: string(body), Input: in, Time: s.now()})
	s.log.Debug("node drain", "id", n.ID, "body", string(body))
	return s.nodeRep(simkit.BaseURL(r), n, false), nil
}

// nodeRep is the v3 node; read counts the call as a read of it. Caller
// holds s.mu.
func (s *Server) nodeRep(b string, n *Node, read bool) map[string]any {
	if read {
		s.observeNode(n)
	}
	state, msg, drained := s.nodeStatus(n)
	self := b + "/v3/nodes/" + n.ID
	ts := n.Created.Format(time.RFC3339)
	var conds []map[string]any
	if state == "registering" {
		conds = []map[string]any{{"type": "Registered", "status": "Unknown", "lastUpdateTime": ts,
			"message": "waiting for the node's agent to connect"}}
	} else {
		conds = simkit.Map([]string{"Initialized", "Provisioned", "Registered", "Ready"}, func(t string) map[string]any {
			return map[string]any{"type": t, "status": "True", "lastUpdateTime": ts}
		})
	}
	if drained[0] != "" {
		c := map[string]any{"type": "Drained", "status": drained[0], "lastUpdateTime": s.now().Format(time.RFC3339)}
		if drained[1] != "" {
			c["reason"], c["message"] = drained[1], drained[2]
		}
		conds = append(conds, c)
	}
	transitioning := map[bool]string{false: "no", true: "error"}[state == "error" || drained[0] == "False"]
	if state == "registering" || state == "draining" {
		transitioning = "yes"
	}
	m := normanObj("node", self, n.Created, map[string]any{
		"id": n.ID, "name": n.Name, "clusterId": n.ClusterID, "namespaceId": n.ClusterID,
		"hostname": n.Hostname, "requestedHostname": n.Hostname, "nodeName": n.Hostname,
		"ipAddress": n.Address, "externalIpAddress": n.Address,
		"etcd": n.Etcd, "controlPlane": n.ControlPlane, "worker": n.Worker,
		"unschedulable": n.drainAsked, "conditions": conds,
		"annotations": map[string]string{}, "labels": map[string]string{"kubernetes.io/hostname": n.Hostname},
	}, map[string]string{"cluster": b + "/v3/clusters/" + n.ClusterID},
		map[string]string{"drain": self + "?action=drain", "cordon": self + "?action=cordon"})
	m["state"], m["transitioning"], m["transitioningMessage"] = state, transitioning, msg
	return m
}

// AddNodeFault injects f.
func (s *Server) AddNodeFault(f NodeFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prov.nodeFaults = append(s.prov.nodeFaults, f)
}

// ClearNodeFaults removes every fault AddNodeFault injected: the nodes
// behave from the next read on (an agent that reaches Rancher again).
func (s *Server) ClearNodeFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prov.nodeFaults = nil
}
