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
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// ClusterUpdate changes a cluster after an update order: its name
// (Rancher's display name), its worker count per zone (managed), its
// server count (self-managed, 1, 3 or 5) and named nodes to remove. New workers get
// the Vault objects made again for them and removed after (Mastermind
// deletes the AppRole at the end of the create and then fails every
// node-add); removed workers are drained first, and a drain that does not
// finish errs the order with the VM left in place.
const ClusterUpdate = "rancher-cluster-update"

// Update activities.
const (
	actUpdatePlan   = "cluster-provisioner.update-plan"
	actRename       = "cluster-provisioner.rename"
	actRenameBack   = "cluster-provisioner.rename-back"
	actQuotaUp      = "cluster-provisioner.quota-up"
	actQuotaBack    = "cluster-provisioner.quota-back"
	actAddVault     = "cluster-provisioner.add-vault"
	actAddNodes     = "cluster-provisioner.add-nodes"
	actRemoveAdded  = "cluster-provisioner.remove-added-nodes"
	actWaitAdded    = "cluster-provisioner.wait-added-nodes"
	actRemoveNodes  = "cluster-provisioner.drain-and-remove-nodes"
	actQuotaDown    = "cluster-provisioner.quota-down"
	actRecordUpdate = "cluster-provisioner.record-update"
)

// UpdateOutput is the update-plan step's output: what the cluster was
// and what it becomes.
type UpdateOutput struct {
	Record Record                `json:"record"`
	Plan   json.RawMessage       `json:"plan"`
	Resize ranchercluster.Resize `json:"resize"`
	Rename bool                  `json:"rename,omitempty"`
}

// updateDefinition is ClusterUpdate; step builds a step, long (1) for the
// steps that wait for VMs or drains.
func updateDefinition(step func(name, action, compensation string, long int) saga.Step) saga.Definition {
	return saga.Definition{Name: ClusterUpdate, Steps: []saga.Step{
		// Long: an update that comes during its cluster's create waits for it.
		step("plan", actUpdatePlan, "", 1),
		step("rename", actRename, actRenameBack, 0),
		step("quota-up", actQuotaUp, actQuotaBack, 0),
		step("vault", actAddVault, actVaultCleanup, 0),
		step("add-nodes", actAddNodes, actRemoveAdded, 1),
		step("wait-nodes", actWaitAdded, "", 1),
		step("vault-cleanup", actVaultCleanup, "", 0),
		step("remove-nodes", actRemoveNodes, "", 1),
		step("quota-down", actQuotaDown, "", 0),
		step("record", actRecordUpdate, "", 0),
		step("settle", actSettle, "", 0),
	}}
}

func (a *activities) updateActivities() map[string]saga.Activity {
	return map[string]saga.Activity{
		actUpdatePlan: a.updatePlan, actRename: a.rename, actRenameBack: a.renameBack,
		actQuotaUp: a.quotaUp, actQuotaBack: a.quotaBack, actAddVault: a.addVault,
		actAddNodes: a.addNodes, actRemoveAdded: a.removeAdded, actWaitAdded: a.waitAdded,
		actRemoveNodes: a.removeNodes, actQuotaDown: a.quotaDown, actRecordUpdate: a.recordUpdate,
	}
}

// updatePlan reads what the create recorded and plans the change; a
// refusal (the last agent, a name Waldur's rule refuses, the maxima) is
// terminal with nothing done.
func (a *activities) updatePlan(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, false)
	if err != nil {
		return nil, err
	}
	raw, err := a.recordAfterCreate(ctx, r)
	if err != nil {
		return nil, err
	}
	var out UpdateOutput
	if err := json.Unmarshal(raw, &out.Record); err != nil {
		return nil, bus.Terminal(fmt.Errorf("cluster record of %s: %w", r.in.ResourceUUID, err))
	}
	p, err := ranchercluster.UnmarshalPlan(out.Record.Plan)
	if err != nil {
		return nil, bus.Terminal(err)
	}
	u, err := ranchercluster.DecodeUpdateAttributes(r.in.Attributes)
	if err != nil {
		return nil, bus.Terminal(err)
	}
	if u.Name != nil && *u.Name != p.Cluster.DisplayName {
		if p, err = ranchercluster.PlanRename(&r.o.Settings, p, *u.Name); err != nil {
			return nil, bus.Terminal(err)
		}
		out.Rename = true
	}
	// The same count again re-makes the workers the cluster pass removed
	// (their VMs were deleted): the zones are planned back to it.
	if u.WorkerNodesCount != nil && (*u.WorkerNodesCount != p.WorkersPerZone || shortOfWorkers(p)) {
		if p, out.Resize, err = ranchercluster.PlanResize(&r.o.Settings, p, *u.WorkerNodesCount); err != nil {
			return nil, bus.Terminal(err)
		}
	}
	// A new node takes the lowest free number, which a node removed by
	// the same order would free while its VM still exists: removing and
	// adding are separate orders.
	if len(u.RemoveNodes) > 0 && (u.ServerNodesCount != nil || u.WorkerNodesCount != nil) {
		return nil, bus.Terminal(&ranchercluster.AttributeError{Attribute: "remove_nodes",
			Msg: "cannot be combined with a change of server_nodes_count or worker_nodes_count in one order"})
	}
	if len(u.RemoveNodes) > 0 {
		var rs ranchercluster.Resize
		if p, rs, err = ranchercluster.PlanRemoveNodes(&r.o.Settings, p, u.RemoveNodes); err != nil {
			return nil, bus.Terminal(err)
		}
		out.Resize.Remove = append(out.Resize.Remove, rs.Remove...)
	}
	if u.ServerNodesCount != nil {
		var rs ranchercluster.Resize
		if p, rs, err = ranchercluster.PlanServers(&r.o.Settings, p, *u.ServerNodesCount); err != nil {
			return nil, bus.Terminal(err)
		}
		out.Resize.Add = append(out.Resize.Add, rs.Add...)
	}
	if out.Plan, err = p.Marshal(); err != nil {
		return nil, err
	}
	r.log.Info("planned cluster update", "rename", out.Rename, "add", len(out.Resize.Add), "remove", len(out.Resize.Remove))
	return json.Marshal(out)
}

// update is an update step's view: the run (with the new plan and the
// cluster as recorded) and the change.
func (a *activities) update(in saga.ActivityInput) (*run, UpdateOutput, error) {
	var u UpdateOutput
	r, err := a.start(in, true)
	if err != nil {
		return nil, u, err
	}
	if _, err := in.DecodeOutput("plan", &u); err != nil {
		return nil, u, err
	}
	return r, u, nil
}

// madeByUpdate is start's view of an update: the recorded cluster with
// the nodes added so far, and the new plan (returned as JSON).
func (r *run) madeByUpdate(in saga.ActivityInput) (json.RawMessage, error) {
	var u UpdateOutput
	if _, err := in.DecodeOutput("plan", &u); err != nil {
		return nil, err
	}
	r.made = u.Record
	var added ServersOutput
	if _, err := in.DecodeOutput("add-nodes", &added); err != nil {
		return nil, err
	}
	r.made.Nodes = append(slices.Clone(r.made.Nodes), added.Servers...)
	return u.Plan, nil
}

func deadlineLeft(d time.Time) time.Duration { return time.Until(d) }

func (a *activities) rename(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || !u.Rename {
		return nil, err
	}
	return nil, r.o.Rancher.RenameCluster(ctx, r.clusterRef(), r.plan.Cluster.DisplayName)
}

func (a *activities) renameBack(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || !u.Rename {
		return nil, err
	}
	old, err := ranchercluster.UnmarshalPlan(u.Record.Plan)
	if err != nil {
		return nil, bus.Terminal(err)
	}
	return nil, r.o.Rancher.RenameCluster(ctx, r.clusterRef(), old.Cluster.DisplayName)
}

// setQuotas gives each tenant the quota of plan p.
func (r *run) setQuotas(ctx context.Context, p *ranchercluster.Plan) error {
	for _, t := range p.Tenants {
		rec, ok := r.tenant(t.OfferingUUID)
		if !ok || rec.Project.ID == "" {
			continue
		}
		admin, _, err := r.admin(ctx, t.OfferingUUID)
		if err != nil {
			return err
		}
		saved := r.plan
		r.plan = p
		instances, volumes := r.zoneQuota(t.OfferingUUID, t.LoadBalancer)
		r.plan = saved
		if err := admin.SetQuota(ctx, rec.Project.ID, t.Quota, instances, volumes); err != nil {
			return fmt.Errorf("quota of %s: %w", t.Name, err)
		}
	}
	return nil
}

func (a *activities) quotaUp(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || len(u.Resize.Add) == 0 {
		return nil, err
	}
	return nil, r.setQuotas(ctx, r.plan)
}

func (a *activities) quotaBack(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || len(u.Resize.Add) == 0 {
		return nil, err
	}
	old, err := ranchercluster.UnmarshalPlan(u.Record.Plan)
	if err != nil {
		return nil, bus.Terminal(err)
	}
	return nil, r.setQuotas(ctx, old)
}

func (a *activities) quotaDown(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || len(u.Resize.Remove) == 0 {
		return nil, err
	}
	return nil, r.setQuotas(ctx, r.plan)
}

// addVault makes the Vault objects again when nodes are added.
func (a *activities) addVault(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	_, u, err := a.update(in)
	if err != nil || len(u.Resize.Add) == 0 {
		return nil, err
	}
	return a.vault(ctx, in)
}

func (a *activities) addNodes(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil {
		return nil, err
	}
	var out ServersOutput
	undo := func(ctx context.Context) error { return r.removeServers(ctx, out.Servers) }
	if out.Servers, err = r.makeVMs(ctx, "node", u.Resize.Add, r.nodeUserData, nil); err != nil {
		return nil, r.failed(ctx, in, err, undo)
	}
	return json.Marshal(out)
}

func (a *activities) removeAdded(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, _, err := a.update(in)
	if err != nil {
		return nil, err
	}
	var added ServersOutput
	if _, err := in.DecodeOutput("add-nodes", &added); err != nil {
		return nil, err
	}
	return nil, r.removeServers(ctx, added.Servers)
}

func (a *activities) waitAdded(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || len(u.Resize.Add) == 0 {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeouts.Nodes)
	defer cancel()
	var names []string
	for i := range r.made.Nodes {
		s := &r.made.Nodes[i]
		if !slices.ContainsFunc(u.Resize.Add, func(n ranchercluster.NodePlan) bool { return n.Name == s.Name }) {
			continue
		}
		names = append(names, s.Name)
		if err := r.waitServer(ctx, s); err != nil {
			return nil, err
		}
	}
	deadline, _ := ctx.Deadline()
	err = r.o.Rancher.WaitNodesActive(ctx, r.clusterRef().ID, names, deadlineLeft(deadline), func(p rancher.NodeProgress) {
		r.log.Info("added nodes", "order", r.in.OrderUUID, "active", p.Active, "total", p.Total, "waiting", p.Waiting)
	})
	if err != nil {
		return nil, fmt.Errorf("added nodes: %w", err)
	}
	return nil, nil
}

// removeNodes drains each removed agent (bounded; a drain that does not
// finish is terminal and leaves the VM), then deletes its VM, port and
// volumes and its Rancher node. PlanResize and PlanRemoveNodes never
// remove the last agent or server; a plan without either is refused here
// too.
func (a *activities) removeNodes(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil || len(u.Resize.Remove) == 0 {
		return nil, err
	}
	ref := r.clusterRef()
	nodes, err := r.o.Rancher.ListClusterNodes(ctx, ref.ID)
	if err != nil {
		return nil, fmt.Errorf("nodes of %s: %w", ref, err)
	}
	if len(r.plan.Agents("")) == 0 {
		return nil, bus.Terminal(errors.New("refusing to remove the cluster's last agent node"))
	}
	if len(r.plan.Servers()) == 0 {
		return nil, bus.Terminal(errors.New("refusing to remove the cluster's last server node"))
	}
	var removed []string
	for k, n := range u.Resize.Remove {
		if err := r.removeNode(ctx, n.Name, nodes); err != nil {
			// What is gone stays gone (the saga undoes only what this
			// order made): the record keeps exactly the nodes left, and
			// the message says which went and which did not.
			if rerr := a.recordRemoved(ctx, r, u, removed); rerr != nil {
				r.log.Warn("record of the nodes left not written", "err", rerr)
			}
			var left []string
			for _, m := range u.Resize.Remove[k:] {
				left = append(left, m.Name)
			}
			msg := "removed: none"
			if len(removed) > 0 {
				msg = "removed: " + strings.Join(removed, ", ")
			}
			return nil, fmt.Errorf("%w (%s; not removed: %s)", err, msg, strings.Join(left, ", "))
		}
		removed = append(removed, n.Name)
	}
	return nil, nil
}

// removeNode drains a node, deletes its VM (with port and volumes), then
// its Rancher node.
func (r *run) removeNode(ctx context.Context, name string, nodes []rancher.Node) error {
	ref := r.clusterRef()
	i := slices.IndexFunc(r.made.Nodes, func(s ServerRecord) bool { return s.Name == name })
	j := slices.IndexFunc(nodes, func(rn rancher.Node) bool { return rn.RequestedHostname == name })
	if j >= 0 {
		if err := r.o.Rancher.DrainNode(ctx, ref, nodes[j].ID, rancher.DefaultDrainInput()); err != nil {
			return fmt.Errorf("drain %s: %w", name, err)
		}
		if err := r.o.Rancher.WaitDrained(ctx, nodes[j].ID, drainTimeout); err != nil {
			return bus.Terminal(fmt.Errorf("node %s: %w", name, err))
		}
	}
	if i >= 0 {
		if err := r.removeServer(ctx, r.made.Nodes[i]); err != nil {
			return fmt.Errorf("VM %s: %w", name, err)
		}
	}
	if j >= 0 {
		if err := r.o.Rancher.DeleteNode(ctx, ref, nodes[j].ID); err != nil && !isNotFound(err) {
			return fmt.Errorf("rancher node %s: %w", name, err)
		}
	}
	r.log.Info("node removed", "node", name)
	return nil
}

// recordRemoved writes the cluster as a scale-down that failed part-way
// left it: the recorded cluster without the nodes removed, its worker
// count the fewest agents a zone has now.
func (a *activities) recordRemoved(ctx context.Context, r *run, u UpdateOutput, removed []string) error {
	if len(removed) == 0 {
		return nil
	}
	rec := u.Record
	rec.Nodes = slices.DeleteFunc(slices.Clone(rec.Nodes), func(s ServerRecord) bool { return slices.Contains(removed, s.Name) })
	p, err := ranchercluster.UnmarshalPlan(rec.Plan)
	if err != nil {
		return err
	}
	if p, err = planWithout(p, rec.Nodes); err != nil {
		return err
	}
	for i, t := range p.Tenants {
		if n := len(p.Agents(t.OfferingUUID)); i == 0 || n < p.WorkersPerZone {
			p.WorkersPerZone = n
		}
	}
	if rec.Plan, err = p.Marshal(); err != nil {
		return err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return a.plans.Put(ctx, hexUUID(r.in.ResourceUUID), raw)
}

// recordUpdate keeps the new plan and node list for the next update and
// the terminate.
func (a *activities) recordUpdate(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, u, err := a.update(in)
	if err != nil {
		return nil, err
	}
	rec := r.made
	rec.Plan = u.Plan
	rec.Nodes = slices.DeleteFunc(slices.Clone(rec.Nodes), func(s ServerRecord) bool {
		return slices.ContainsFunc(u.Resize.Remove, func(n ranchercluster.NodePlan) bool { return n.Name == s.Name })
	})
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return nil, a.plans.Put(ctx, hexUUID(r.in.ResourceUUID), raw)
}

// shortOfWorkers reports whether a zone of a managed plan has fewer
// agents than its worker count.
func shortOfWorkers(p *ranchercluster.Plan) bool {
	for _, t := range p.Tenants {
		if len(p.Agents(t.OfferingUUID)) < p.WorkersPerZone {
			return true
		}
	}
	return false
}

// createPoll paces an update's wait for the create of its cluster.
const createPoll = 2 * time.Second

// recordAfterCreate is the cluster's record; an update that arrives while
// the create still runs (no record yet, and Waldur has no backend_id for
// the resource, which the create's settle step sets) waits for it, bounded
// by the step's timeout, instead of erring. No record once the create is
// over (a backend_id, or the resource erred or gone) is terminal: this
// sitebus did not make the cluster.
func (a *activities) recordAfterCreate(ctx context.Context, r *run) ([]byte, error) {
	logged := false
	for {
		raw, err := a.plans.Get(ctx, hexUUID(r.in.ResourceUUID))
		if err != nil || raw != nil {
			return raw, err
		}
		res, err := r.o.Waldur.GetResource(ctx, r.in.ResourceUUID, "uuid", "state", "backend_id")
		if err != nil {
			return nil, fmt.Errorf("read resource %s: %w", r.in.ResourceUUID, err)
		}
		if res.BackendID != "" || res.State == waldur.ResourceStateErred || res.State == waldur.ResourceStateTerminated {
			return nil, bus.Terminal(fmt.Errorf("no cluster record for resource %s: this sitebus did not make its cluster", r.in.ResourceUUID))
		}
		if !logged {
			r.log.Info("update waits for the cluster's create", "order", r.in.OrderUUID, "resource_state", res.State)
			logged = true
		}
		t := time.NewTimer(createPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("the cluster of resource %s is still being created: %w", r.in.ResourceUUID, ctx.Err())
		case <-t.C:
		}
	}
}
