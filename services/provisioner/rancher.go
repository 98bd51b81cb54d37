package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/failpoint"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/vault"
)

// drainTimeout bounds one node's drain (Mastermind's 60 s).
const drainTimeout = time.Minute

// cluster makes the Rancher v1 provisioning cluster (with the registry
// secret when one is configured) and waits for its v3 id. A cluster made
// before a crash is adopted (its ownership annotation names the
// resource); one of that name made for anything else is refused.
func (a *activities) cluster(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	s := &r.o.Settings
	spec := rancher.ClusterSpec{Name: r.plan.Cluster.Name, ResourceUUID: r.in.ResourceUUID, KubernetesVersion: r.plan.Cluster.KubernetesVersion}
	if r.plan.Cluster.PrivateRegistry != "" {
		spec.Registry = &rancher.Registry{URL: r.plan.Cluster.PrivateRegistry, Username: s.PrivateRegistryUser, Password: s.PrivateRegistryPassword}
	}
	pc, err := r.o.Rancher.CreateProvisioningCluster(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("rancher cluster %s: %w", spec.Name, err)
	}
	id := pc.ClusterID
	if id == "" {
		if id, err = r.o.Rancher.WaitV3ClusterID(ctx, spec.Name, a.timeouts.Step/2); err != nil {
			err = fmt.Errorf("v3 id of rancher cluster %s: %w", spec.Name, err)
			return nil, r.failed(ctx, in, err, func(ctx context.Context) error {
				return r.o.Rancher.DeleteCluster(ctx, rancher.ClusterRef{Name: spec.Name, ResourceUUID: r.in.ResourceUUID})
			})
		}
	}
	r.log.Info("Rancher cluster ready for nodes", "cluster", spec.Name, "cluster_id", id, "created", pc.Created)
	return json.Marshal(ClusterOutput{Name: spec.Name, ID: id, Created: pc.Created})
}

// deleteCluster deletes the Rancher cluster sitebus made for the resource
// (Rancher removes its nodes, tokens and bindings with it).
func (a *activities) deleteCluster(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil {
		return nil, err
	}
	ref := r.clusterRef()
	if err := r.o.Rancher.DeleteCluster(ctx, ref); err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("delete rancher cluster %s: %w", ref, err)
	}
	r.log.Info("Rancher cluster removed", "cluster", ref.String())
	return nil, nil
}

// token makes the cluster's registration token (one per cluster, reused
// by a retried step).
func (a *activities) token(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	ref := r.clusterRef()
	t, err := r.o.Rancher.CreateRegistrationToken(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("registration token of %s: %w", ref, err)
	}
	return json.Marshal(TokenOutput{ID: t.ID})
}

// registrationToken reads the token's value again: it is never stored in
// the saga's record.
func (r *run) registrationToken(ctx context.Context) (string, error) {
	ref := r.clusterRef()
	t, found, err := r.o.Rancher.GetRegistrationToken(ctx, ref.ID)
	if err != nil {
		return "", fmt.Errorf("registration token of %s: %w", ref, err)
	}
	if !found || t.Token == "" {
		return "", fmt.Errorf("cluster %s has no registration token yet", ref)
	}
	return t.Token.Reveal(), nil
}

// vault makes the cluster's policy, AppRole and KV secret holding the
// registration token. Without Vault it does nothing.
func (a *activities) vault(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.o.Vault == nil || !r.plan.Vault {
		return nil, err
	}
	cl, err := r.vaultCluster()
	if err != nil {
		return nil, err
	}
	tok, err := r.registrationToken(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.o.Vault.Ensure(ctx, cl, tok); err != nil {
		err = fmt.Errorf("vault objects of cluster %s: %w", cl.UUID(), err)
		return nil, r.failed(ctx, in, err, func(ctx context.Context) error { return r.o.Vault.Cleanup(ctx, cl) })
	}
	r.log.Info("Vault objects ready", "policy", cl.PolicyName(), "role", cl.RoleName())
	return nil, nil
}

// vaultCleanup deletes the policy, AppRole (with every secret-id) and KV
// secret: at the end of a create, when a create compensates and on
// terminate.
func (a *activities) vaultCleanup(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil || r.o.Vault == nil || !r.plan.Vault {
		return nil, err
	}
	cl, err := r.vaultCluster()
	if err != nil {
		return nil, err
	}
	if err := r.o.Vault.Cleanup(ctx, cl); err != nil {
		return nil, fmt.Errorf("vault cleanup of cluster %s: %w", cl.UUID(), err)
	}
	r.log.Info("Vault objects removed", "policy", cl.PolicyName(), "role", cl.RoleName())
	return nil, nil
}

// nodes makes every node VM with its cloud-init, each with a secret-id
// of its own issued right before its VM. A retried attempt adopts the VMs
// made before (their user data is not rewritten; the secret-id issued for
// the retry is never used and goes with the AppRole at cleanup).
func (a *activities) nodes(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	var out ServersOutput
	undo := func(ctx context.Context) error { return r.removeServers(ctx, out.Servers) }
	out.Servers, err = r.makeVMs(ctx, "node", r.plan.Nodes, r.nodeUserData, func(ctx context.Context, made int) error {
		// Crash tests kill the process here, once this many VMs are
		// made (others may be on their way) and the step's output is
		// not recorded.
		return failpoint.Inject(ctx, fmt.Sprintf("provisioner/node-made/%d", made))
	})
	if err != nil {
		return nil, r.failed(ctx, in, err, undo)
	}
	return json.Marshal(out)
}

// nodeUserData renders one node's cloud-config: its role, its data
// volumes, the order's SSH key (self-managed mode) and either its own Vault credentials (a fresh one-use
// secret-id) or, without Vault, the registration token.
func (r *run) nodeUserData(ctx context.Context, n ranchercluster.NodePlan) ([]byte, error) {
	cn := cloudinit.Node{Role: cloudinit.Agent}
	if n.Role == ranchercluster.RoleServer {
		cn.Role = cloudinit.Server
	}
	for _, v := range n.DataVolumes {
		cn.Volumes = append(cn.Volumes, cloudinit.Volume{MountPoint: v.MountPoint, Filesystem: v.Filesystem})
	}
	if n.SSHPublicKey != "" {
		cn.AuthorizedKeys = []string{n.SSHPublicKey}
	}
	if r.o.Vault != nil && r.plan.Vault {
		cl, err := r.vaultCluster()
		if err != nil {
			return nil, err
		}
		roleID, err := r.vaultRoleID(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("vault role-id for %s: %w", n.Name, err)
		}
		secretID, err := r.o.Vault.NewSecretID(ctx, cl, n.Name)
		if err != nil {
			return nil, fmt.Errorf("vault secret-id for %s: %w", n.Name, err)
		}
		cn.Vault = &cloudinit.VaultCredentials{Addr: r.o.Vault.Address(), SecretPath: cl.CLISecretPath(),
			RoleID: roleID, SecretID: secretID, TLSSkipVerify: !r.o.Settings.Vault.TLSVerify}
	} else {
		tok, err := r.nodeToken(ctx)
		if err != nil {
			return nil, err
		}
		cn.RegistrationToken = tok
	}
	ud, err := cloudinit.Render(r.o.CloudInit, cn)
	if err != nil {
		return nil, bus.Terminal(fmt.Errorf("cloud-init of %s: %w", n.Name, err))
	}
	return ud, nil
}

// vaultRoleID is the AppRole's role-id, read once per activity: it is
// the same for every node.
func (r *run) vaultRoleID(ctx context.Context, cl vault.Cluster) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.roleID == "" {
		id, err := r.o.Vault.RoleID(ctx, cl)
		if err != nil {
			return "", err
		}
		r.roleID = id
	}
	return r.roleID, nil
}

// nodeToken is the registration token nodes get without Vault, read once
// per activity: it is the same for every node.
func (r *run) nodeToken(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.token == "" {
		tok, err := r.registrationToken(ctx)
		if err != nil {
			return "", err
		}
		r.token = tok
	}
	return r.token, nil
}

// deleteNodes removes the node VMs (with their ports and volumes) in
// reverse; their Rancher nodes go with the cluster.
func (a *activities) deleteNodes(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil {
		return nil, err
	}
	return nil, r.removeServers(ctx, r.made.Nodes)
}

// progressEvery is how often a create that waits on nodes or on its
// cluster says so again when nothing changed: an order that sits in
// executing for up to an hour must not look dead.
const progressEvery = time.Minute

// waitNodes waits until every VM is ACTIVE, every node is active in
// Rancher and then the Rancher cluster itself is active (Mastermind's
// check_cluster_nodes, then pull_cluster), all bounded by Timeouts.Nodes.
// Progress goes to the log, to the sitebus_cluster_nodes_{active,wanted}
// gauges and to the resource's backend metadata ("progress") whenever it
// changes and at least every progressEvery. A node in error or a VM in
// ERROR is terminal and undoes the create; a deadline reached with every
// VM up but the nodes or the cluster not active is not: the cluster is
// kept, the output says why (WaitOutput.NotReady), settle errs the order
// and the resource, and the cluster pass sets it OK once Rancher shows
// the cluster active.
func (a *activities) waitNodes(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, a.timeouts.Nodes)
	defer cancel()
	deadline, _ := ctx.Deadline()
	for i := range r.made.Nodes {
		if err := r.waitServer(ctx, &r.made.Nodes[i]); err != nil {
			return nil, err
		}
	}
	ref := r.clusterRef()
	names := make([]string, 0, len(r.plan.Nodes))
	for _, n := range r.plan.Nodes {
		names = append(names, n.Name)
	}
	cluster := r.plan.Cluster.Name
	a.nodesWanted.WithLabelValues(cluster).Set(float64(len(names)))
	defer func() {
		a.nodesWanted.DeleteLabelValues(cluster)
		a.nodesActive.DeleteLabelValues(cluster)
	}()
	rep := progressReporter{r: r, ctx: parent, cluster: cluster}
	err = r.o.Rancher.WaitNodesActive(ctx, ref.ID, names, time.Until(deadline), func(p rancher.NodeProgress) {
		a.nodesActive.WithLabelValues(cluster).Set(float64(p.Active))
		msg := fmt.Sprintf("waiting for nodes: %d of %d active", p.Active, p.Total)
		if len(p.Waiting) > 0 {
			msg += "; waiting for " + strings.Join(p.Waiting, ", ")
		}
		rep.report(msg, "active", p.Active, "total", p.Total, "waiting", p.Waiting)
	})
	switch {
	case errors.Is(err, rancher.ErrNodesInactive) || parent.Err() == nil && ctx.Err() != nil:
		// What the last read showed, not the error: the deadline may end
		// the wait in the middle of a request.
		standing := rep.last
		if standing == "" {
			standing = err.Error()
		}
		return r.notReady(fmt.Sprintf("the cluster was not usable within %s: %s", a.timeouts.Nodes, standing))
	case err != nil:
		return nil, fmt.Errorf("nodes of %s: %w", ref, err)
	}
	last, active, err := r.o.Rancher.WaitClusterActive(ctx, ref.ID, time.Until(deadline), func(c rancher.Cluster) {
		if c.State != "active" {
			rep.report("nodes active, waiting for the cluster: "+clusterStanding(c), "state", c.State, "message", c.TransitioningMessage)
		}
	})
	switch {
	case !active && (err == nil || parent.Err() == nil && ctx.Err() != nil):
		return r.notReady(fmt.Sprintf("Rancher did not show cluster %s active within %s: %s", ref, a.timeouts.Nodes, clusterStanding(last)))
	case err != nil:
		return nil, fmt.Errorf("cluster %s: %w", ref, err)
	}
	r.log.Info("cluster active", "cluster", cluster, "order", r.in.OrderUUID)
	return nil, nil
}

// clusterStanding is a v3 cluster's state and Rancher's message on it.
func clusterStanding(c rancher.Cluster) string {
	s := c.State
	if s == "" {
		s = "not read"
	}
	if c.TransitioningMessage != "" {
		s += " (" + c.TransitioningMessage + ")"
	}
	return s
}

// notReady is wait-nodes' outcome for a cluster kept although it was not
// usable in time.
func (r *run) notReady(reason string) (json.RawMessage, error) {
	r.log.Warn("cluster not usable by its deadline; keeping it, the order errs", "order", r.in.OrderUUID, "reason", reason)
	return json.Marshal(WaitOutput{NotReady: reason})
}

// progressReporter logs a create's wait and shows it in the resource's
// backend metadata when it changes, and again every progressEvery.
type progressReporter struct {
	r       *run
	ctx     context.Context
	cluster string
	last    string
	at      time.Time
}

func (p *progressReporter) report(msg string, attrs ...any) {
	if msg == p.last && time.Since(p.at) < progressEvery {
		return
	}
	p.last, p.at = msg, time.Now()
	p.r.log.Info("cluster create waiting", append([]any{"cluster", p.cluster, "order", p.r.in.OrderUUID, "progress", msg}, attrs...)...)
	md := p.r.metadata(p.r.clusterRef().ID)
	md["progress"] = msg
	if err := p.r.o.Waldur.SetResourceBackendMetadata(p.ctx, p.r.in.ResourceUUID, md); err != nil {
		// Only a report: the wait goes on.
		p.r.log.Warn("progress not shown in Waldur", "err", err)
	}
}

// drainAndDeleteNodes is terminate's node step: every registered node is
// asked to drain, then, agents first, each drain is waited for (one that
// fails or times out is logged: the whole cluster goes next), its VM,
// port and volumes deleted, then its Rancher node.
func (a *activities) drainAndDeleteNodes(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	ref := r.clusterRef()
	byName := map[string]rancher.Node{}
	if ref.ID != "" {
		nodes, err := r.o.Rancher.ListClusterNodes(ctx, ref.ID)
		if err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("nodes of %s: %w", ref, err)
		}
		for _, n := range nodes {
			byName[n.RequestedHostname] = n
		}
	}
	role := map[string]string{}
	for _, n := range r.plan.Nodes {
		role[n.Name] = n.Role
	}
	order := slices.Clone(r.made.Nodes)
	slices.Reverse(order)
	slices.SortStableFunc(order, func(x, y ServerRecord) int {
		return boolInt(role[x.Name] == ranchercluster.RoleServer) - boolInt(role[y.Name] == ranchercluster.RoleServer)
	})
	// Every drain is asked for first, so the nodes drain side by side
	// and the waits below overlap instead of adding up.
	draining := map[string]bool{}
	for _, s := range order {
		if rn, ok := byName[s.Name]; ok {
			if err := r.o.Rancher.DrainNode(ctx, ref, rn.ID, rancher.DefaultDrainInput()); err != nil {
				r.log.Warn("drain failed; deleting the node anyway, its cluster goes next", "node", s.Name, "err", err)
				continue
			}
			draining[s.Name] = true
		}
	}
	for _, s := range order {
		rn, registered := byName[s.Name]
		if draining[s.Name] {
			if err := r.o.Rancher.WaitDrained(ctx, rn.ID, drainTimeout); err != nil {
				r.log.Warn("node did not drain; deleting it anyway, its cluster goes next", "node", s.Name, "err", err)
			}
		}
		if err := r.removeServer(ctx, s); err != nil {
			return nil, fmt.Errorf("VM %s: %w", s.Name, err)
		}
		if registered {
			if err := r.o.Rancher.DeleteNode(ctx, ref, rn.ID); err != nil && !isNotFound(err) {
				return nil, fmt.Errorf("rancher node %s: %w", s.Name, err)
			}
		}
	}
	return nil, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
