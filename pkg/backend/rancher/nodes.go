package rancher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// RegistrationToken is a cluster registration token. Token is the
// credential nodes join with; the commands embed it too, so a token is
// logged by its id alone (LogValue).
type RegistrationToken struct {
	ID, ClusterID       string
	Token               config.Secret
	Command             string
	NodeCommand         string
	InsecureCommand     string
	InsecureNodeCommand string
	ManifestURL         string
}

// LogValue keeps the token and the commands that embed it out of logs.
func (t RegistrationToken) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", t.ID), slog.String("cluster", t.ClusterID))
}

type tokenJSON struct {
	ID                  string `json:"id"`
	ClusterID           string `json:"clusterId"`
	Token               string `json:"token"`
	Command             string `json:"command"`
	NodeCommand         string `json:"nodeCommand"`
	InsecureCommand     string `json:"insecureCommand"`
	InsecureNodeCommand string `json:"insecureNodeCommand"`
	ManifestURL         string `json:"manifestUrl"`
}

func (t tokenJSON) toToken() RegistrationToken {
	return RegistrationToken{ID: t.ID, ClusterID: t.ClusterID, Token: config.Secret(t.Token), Command: t.Command,
		NodeCommand: t.NodeCommand, InsecureCommand: t.InsecureCommand, InsecureNodeCommand: t.InsecureNodeCommand,
		ManifestURL: t.ManifestURL}
}

// GetRegistrationToken returns a registration token of the v3 cluster
// whose value Rancher has filled in, if any (found false otherwise), with
// Mastermind's look-up: the whole collection (limit=-1) filtered by
// clusterId, filtered again here.
func (c *ClusterClient) GetRegistrationToken(ctx context.Context, clusterID string) (RegistrationToken, bool, error) {
	all, err := list[tokenJSON](ctx, c.api, "/v3/clusterregistrationtokens", "limit=-1&clusterId="+url.QueryEscape(clusterID))
	if err != nil {
		return RegistrationToken{}, false, err
	}
	for _, t := range all {
		if t.ClusterID == clusterID && t.Token != "" {
			return t.toToken(), true, nil
		}
	}
	return RegistrationToken{}, false, nil
}

// CreateRegistrationToken returns the cluster's registration token,
// creating one (Mastermind's POST to the singular path) only when the
// cluster has none: a retried step reuses it. Rancher fills a new token's
// value in a moment later; that is waited for, bounded.
func (c *ClusterClient) CreateRegistrationToken(ctx context.Context, ref ClusterRef) (RegistrationToken, error) {
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return RegistrationToken{}, err
	}
	if t, found, err := c.GetRegistrationToken(ctx, id); found || err != nil {
		return t, err
	}
	var created tokenJSON
	if err := c.api.do(ctx, http.MethodPost, "/v3/clusterregistrationtoken", "",
		map[string]string{"type": "clusterRegistrationToken", "clusterId": id}, &created); err != nil {
		return RegistrationToken{}, err
	}
	c.log.Info("created Rancher cluster registration token", "cluster", id, "token_id", created.ID)
	if created.Token != "" {
		return created.toToken(), nil
	}
	var t RegistrationToken
	done, err := c.pollUntil(ctx, tokenWait, func(ctx context.Context) (bool, error) {
		var found bool
		var err error
		t, found, err = c.GetRegistrationToken(ctx, id)
		return found, err
	})
	if err == nil && !done {
		err = fmt.Errorf("Rancher has not filled in registration token %s of cluster %s within %s; retry", created.ID, id, tokenWait) //nolint:staticcheck // a message for Waldur
	}
	return t, err
}

// Node is a v3 node.
type Node struct {
	ID, Name, ClusterID        string
	Hostname                   string
	RequestedHostname          string
	IPAddress                  string
	Etcd, ControlPlane, Worker bool
	// State is registering, active, draining, drained, unavailable, ….
	State                string
	Transitioning        string
	TransitioningMessage string
	Conditions           []NodeCondition
}

// NodeCondition is one of a node's conditions.
type NodeCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Condition returns the node's condition of type t, if it has one.
func (n Node) Condition(t string) (NodeCondition, bool) {
	for _, c := range n.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return NodeCondition{}, false
}

type nodeJSON struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	ClusterID            string          `json:"clusterId"`
	Hostname             string          `json:"hostname"`
	RequestedHostname    string          `json:"requestedHostname"`
	IPAddress            string          `json:"ipAddress"`
	Etcd                 bool            `json:"etcd"`
	ControlPlane         bool            `json:"controlPlane"`
	Worker               bool            `json:"worker"`
	State                string          `json:"state"`
	Transitioning        string          `json:"transitioning"`
	TransitioningMessage string          `json:"transitioningMessage"`
	Conditions           []NodeCondition `json:"conditions"`
}

func (n nodeJSON) toNode() Node { return Node(n) }

// ListClusterNodes lists the v3 cluster's nodes (the cluster's nodes
// link, as Mastermind), matched to VMs by RequestedHostname.
func (c *ClusterClient) ListClusterNodes(ctx context.Context, clusterID string) ([]Node, error) {
	all, err := list[nodeJSON](ctx, c.api, "/v3/clusters/"+url.PathEscape(clusterID)+"/nodes", "")
	if err != nil {
		return nil, err
	}
	out := make([]Node, 0, len(all))
	for _, n := range all {
		if n.ClusterID == "" || n.ClusterID == clusterID {
			out = append(out, n.toNode())
		}
	}
	return out, nil
}

// GetNode reads a node (backend.ErrNotFound when there is none).
func (c *ClusterClient) GetNode(ctx context.Context, nodeID string) (Node, error) {
	var n nodeJSON
	if err := c.api.do(ctx, http.MethodGet, "/v3/nodes/"+url.PathEscape(nodeID), "", nil, &n); err != nil {
		return Node{}, err
	}
	return n.toNode(), nil
}

// ownedNode checks that the node is in the cluster sitebus made for ref;
// found is false when the node is gone.
func (c *ClusterClient) ownedNode(ctx context.Context, ref ClusterRef, nodeID string) (n Node, found bool, err error) {
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return Node{}, false, err
	}
	n, err = c.GetNode(ctx, nodeID)
	if errors.Is(err, backend.ErrNotFound) {
		return Node{}, false, nil
	}
	if err != nil {
		return Node{}, false, err
	}
	if n.ClusterID != id {
		return Node{}, false, fault.Errorf(fault.NotManaged, "Rancher node %s (%s) is in cluster %s, not in %s; refusing to touch it",
			nodeID, n.RequestedHostname, n.ClusterID, id)
	}
	return n, true, nil
}

// NodeProgress is how far a cluster's expected nodes are.
type NodeProgress struct {
	Active, Total int
	// Waiting lists the hostnames not active yet, each with its state
	// ("missing" when it has not registered).
	Waiting []string
}

// Errors of WaitNodesActive; both are terminal (the create saga then
// compensates instead of retrying a long wait blindly).
var (
	ErrNodeFailed    = errors.New("Rancher node failed")                 //nolint:staticcheck // a message for Waldur, Rancher is a name
	ErrNodesInactive = errors.New("Rancher nodes did not become active") //nolint:staticcheck // a message for Waldur, Rancher is a name
)

// NodesActive reads the cluster's nodes once and reports which of the
// hostnames (matched by requestedHostname, as Mastermind) are active. A
// node in state "error" is ErrNodeFailed (terminal); registering,
// unavailable, missing and the other transient states are waiting.
func (c *ClusterClient) NodesActive(ctx context.Context, clusterID string, hostnames []string) (NodeProgress, error) {
	nodes, err := c.ListClusterNodes(ctx, clusterID)
	if err != nil {
		return NodeProgress{}, err
	}
	byHost := map[string]Node{}
	for _, n := range nodes {
		byHost[n.RequestedHostname] = n
	}
	p := NodeProgress{Total: len(hostnames)}
	for _, h := range hostnames {
		n, ok := byHost[h]
		switch {
		case !ok:
			p.Waiting = append(p.Waiting, h+" (missing)")
		case n.State == "active":
			p.Active++
		case n.State == "error":
			return p, fmt.Errorf("%w: %s (%s) in cluster %s: %s", ErrNodeFailed, h, n.ID, clusterID, n.TransitioningMessage)
		default:
			p.Waiting = append(p.Waiting, h+" ("+n.State+")")
		}
	}
	return p, nil
}

// WaitNodesActive polls until every hostname is an active node of the
// cluster, at most timeout; progress (optional) sees each read's result.
// A node in error (ErrNodeFailed) or nodes not all active in time
// (ErrNodesInactive) are fault.Rejected, terminal: the wait already lasted
// longer than a retry would be worth, and Mastermind errs the order too.
func (c *ClusterClient) WaitNodesActive(ctx context.Context, clusterID string, hostnames []string, timeout time.Duration,
	progress func(NodeProgress)) error {
	var last NodeProgress
	done, err := c.pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		p, err := c.NodesActive(ctx, clusterID, hostnames)
		if err != nil {
			return false, err
		}
		last = p
		if progress != nil {
			progress(p)
		}
		return p.Active == p.Total, nil
	})
	if errors.Is(err, ErrNodeFailed) {
		return fault.Mark(err, fault.Rejected)
	}
	if err != nil {
		return err
	}
	if !done {
		return fault.Mark(fmt.Errorf("%w within %s in cluster %s: %d of %d active; waiting for %s", ErrNodesInactive, timeout,
			clusterID, last.Active, last.Total, strings.Join(last.Waiting, ", ")), fault.Rejected)
	}
	return nil
}

// DeleteNode deletes a node of the cluster sitebus made for ref; a node
// already gone is done.
func (c *ClusterClient) DeleteNode(ctx context.Context, ref ClusterRef, nodeID string) error {
	n, found, err := c.ownedNode(ctx, ref, nodeID)
	if err != nil || !found {
		return err
	}
	err = c.api.do(ctx, http.MethodDelete, "/v3/nodes/"+url.PathEscape(nodeID), "", nil, nil)
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	c.log.Info("deleted Rancher node", "node", nodeID, "hostname", n.RequestedHostname, "cluster", n.ClusterID)
	return nil
}

// DrainInput is Rancher's v3 NodeDrainInput.
type DrainInput struct {
	DeleteLocalData  bool  `json:"deleteLocalData"`
	Force            bool  `json:"force"`
	IgnoreDaemonSets bool  `json:"ignoreDaemonSets"`
	GracePeriod      int64 `json:"gracePeriod"`
	Timeout          int64 `json:"timeout"`
}

// DefaultDrainInput is the body Mastermind's drain sends (reference A.8):
// evict everything but DaemonSets, pods' own grace periods, 60 s.
func DefaultDrainInput() DrainInput {
	return DrainInput{DeleteLocalData: true, Force: true, IgnoreDaemonSets: true, GracePeriod: -1, Timeout: 60}
}

// DrainNode asks Rancher to drain a node of the cluster sitebus made for
// ref (POST ?action=drain); WaitDrained waits for the outcome. A node
// already gone is an error: there is nothing to drain, and the caller
// must not take that for drained workloads.
func (c *ClusterClient) DrainNode(ctx context.Context, ref ClusterRef, nodeID string, in DrainInput) error {
	n, found, err := c.ownedNode(ctx, ref, nodeID)
	if err != nil {
		return err
	}
	if !found {
		return notFoundf("Rancher node %s of cluster %s does not exist; nothing to drain", nodeID, ref)
	}
	if err := c.api.do(ctx, http.MethodPost, "/v3/nodes/"+url.PathEscape(nodeID), "action=drain", in, nil); err != nil {
		return err
	}
	c.log.Info("draining Rancher node", "node", nodeID, "hostname", n.RequestedHostname, "cluster", n.ClusterID,
		"timeout_s", in.Timeout)
	return nil
}

// Drain errors, with Mastermind's messages: both are terminal (the VM is
// then not deleted, and the order errs).
var (
	ErrDrainFailed  = errors.New("Node drain failed.")  //nolint:staticcheck // Mastermind's message
	ErrDrainTimeout = errors.New("Node drain timeout.") //nolint:staticcheck // Mastermind's message
)

// DrainError is a drain that failed or did not finish.
type DrainError struct {
	Kind   error // ErrDrainFailed or ErrDrainTimeout
	NodeID string
	Detail string
}

func (e *DrainError) Error() string {
	return e.Kind.Error() + " (Rancher node " + e.NodeID + ": " + e.Detail + ")"
}

// Is makes a DrainError match its kind and fault.Rejected (terminal):
// Mastermind's drain errs the order too, as a disruption budget or a stuck
// pod does not yield to a retry.
func (e *DrainError) Is(target error) bool { return target == e.Kind || target == fault.Rejected }

// DrainStatus reads the node's Drained condition as Rancher's drain
// controller sets it: "True" is drained, "False" (Rancher) or "error"
// (Mastermind's reading) failed with the condition's message, anything
// else — Unknown, transitioning, or no condition at all because the
// controller has not run yet — is pending.
func DrainStatus(n Node) (done bool, err error) {
	c, ok := n.Condition("Drained")
	if !ok {
		return false, nil
	}
	switch strings.ToLower(c.Status) {
	case "true":
		return true, nil
	case "false", "error":
		detail := c.Message
		if detail == "" {
			detail = n.TransitioningMessage
		}
		if detail == "" {
			detail = "Drained is " + c.Status
		}
		return false, &DrainError{Kind: ErrDrainFailed, NodeID: n.ID, Detail: detail}
	}
	return false, nil
}

// WaitDrained polls the node until its drain finished (nil), failed
// (ErrDrainFailed) or did not finish within timeout (ErrDrainTimeout;
// DefaultDrainWait when timeout is 0). Both failures are terminal.
func (c *ClusterClient) WaitDrained(ctx context.Context, nodeID string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultDrainWait
	}
	last := "no Drained condition yet"
	done, err := c.pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		n, err := c.GetNode(ctx, nodeID)
		if err != nil {
			return false, err
		}
		if cond, ok := n.Condition("Drained"); ok {
			last = "Drained is " + cond.Status
		}
		return DrainStatus(n)
	})
	if err != nil {
		return err
	}
	if !done {
		return &DrainError{Kind: ErrDrainTimeout, NodeID: nodeID, Detail: last + " after " + timeout.String()}
	}
	c.log.Info("drained Rancher node", "node", nodeID)
	return nil
}

// clusterBindingJSON is a clusterroletemplatebinding.
type clusterBindingJSON struct {
	ID               string `json:"id"`
	ClusterID        string `json:"clusterId"`
	RoleTemplateID   string `json:"roleTemplateId"`
	GroupPrincipalID string `json:"groupPrincipalId"`
}

// findClusterBindings looks the group's bindings with role on the cluster
// up with Mastermind's unencoded filter query, filtered again here.
func (c *ClusterClient) findClusterBindings(ctx context.Context, clusterID, role, principal string) ([]clusterBindingJSON, error) {
	all, err := list[clusterBindingJSON](ctx, c.api, "/v3/clusterroletemplatebindings",
		"roleTemplateId="+role+"&clusterId="+clusterID+"&groupPrincipalId="+principal)
	if err != nil {
		return nil, err
	}
	var out []clusterBindingJSON
	for _, b := range all {
		if b.ClusterID == clusterID && b.RoleTemplateID == role && b.GroupPrincipalID == principal {
			out = append(out, b)
		}
	}
	return out, nil
}

func checkClusterBinding(role, group string) error {
	if err := checkGroup(group); err != nil {
		return err
	}
	if !roleRe.MatchString(role) {
		return fault.Errorf(fault.Invalid, "%q is not a Rancher role template id", role)
	}
	return nil
}

// EnsureClusterGroupBinding binds the Keycloak group
// (keycloakoidc_group://<group>) to the cluster sitebus made for ref with
// role, unless bound already; created says whether this call made it. A
// 409 (Rancher made the same binding meanwhile) counts as bound.
func (c *ClusterClient) EnsureClusterGroupBinding(ctx context.Context, ref ClusterRef, role, group string) (created bool, err error) {
	if err := checkClusterBinding(role, group); err != nil {
		return false, err
	}
	id, err := c.ownedV3(ctx, ref)
	if err != nil {
		return false, err
	}
	principal := GroupPrincipalID(group)
	found, err := c.findClusterBindings(ctx, id, role, principal)
	if err != nil || len(found) > 0 {
		return false, err
	}
	var b clusterBindingJSON
	err = c.api.do(ctx, http.MethodPost, "/v3/clusterroletemplatebindings", "", map[string]string{
		"type": "clusterRoleTemplateBinding", "roleTemplateId": role, "clusterId": id, "groupPrincipalId": principal,
	}, &b)
	if errors.Is(err, ErrConflict) {
		found, err := c.findClusterBindings(ctx, id, role, principal)
		if err == nil && len(found) == 0 {
			return false, &APIError{kind: ErrConflict, msg: "Rancher refused the binding of " + group + " to cluster " + id +
				" as a duplicate but lists none; retry"}
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	c.log.Info("bound Keycloak group to Rancher cluster", "cluster", id, "group", group, "role", role, "binding", b.ID)
	return true, nil
}

// DeleteClusterGroupBinding deletes the group's bindings with role on the
// cluster sitebus made for ref; none, or no cluster, is done.
func (c *ClusterClient) DeleteClusterGroupBinding(ctx context.Context, ref ClusterRef, role, group string) error {
	if err := checkClusterBinding(role, group); err != nil {
		return err
	}
	id, err := c.ownedV3(ctx, ref)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	found, err := c.findClusterBindings(ctx, id, role, GroupPrincipalID(group))
	if err != nil {
		return err
	}
	for _, b := range found {
		err := c.api.do(ctx, http.MethodDelete, "/v3/clusterroletemplatebindings/"+url.PathEscape(b.ID), "", nil, nil)
		if err != nil && !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		c.log.Info("unbound Keycloak group from Rancher cluster", "cluster", id, "group", group, "role", role, "binding", b.ID)
	}
	return nil
}
