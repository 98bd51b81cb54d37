package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// The cluster pass is Mastermind's pull_clusters and pull_cluster_nodes:
// every PullPeriod each cluster this sitebus made (a record in
// PlanBucket) is read from Rancher (the cluster, its nodes, its group
// bindings) and from OpenStack (its VMs, one list per zone and project),
// and what drifted is repaired:
//
//   - a VM that is gone (deleted by hand): its Rancher node is deleted, its
//     port and volumes too, and the node leaves the record and the plan,
//     so a later update or terminate sees the cluster as it is;
//   - group bindings sitebus made that are missing are made again;
//   - security group rules and floating IPs sitebus made that were
//     deleted by hand are made again (networking.go): only the groups of
//     the record's tenants, with the plan's rules, and the floating IPs
//     the record names; anything else in the project is left alone;
//   - the node counts in Waldur's backend metadata are kept current;
//   - the resource is erred in Waldur with every problem found (a VM in
//     ERROR, a node not active in Rancher, a zone short of its workers,
//     the cluster not active), and set OK again when none is left.
//
// "Repaired" is the cluster being whole again, as Mastermind's cluster
// state follows Rancher's: every node active and its VM ACTIVE, the
// cluster active, and each zone with its worker count. A removed worker
// is replaced by an update order of the same worker_nodes_count (or any
// scale-up), which plans the zone back to its count. A removed server
// node is not re-made (Mastermind has no server add either); it is
// reported and errs the resource only when no server is left, as
// Mastermind's check_cluster_nodes.
//
// Each repair is logged and counted in sitebus_cluster_repairs_total by
// kind. A record changed by a saga meanwhile (its KV revision moved) is
// left for the next pass.

// Repair kinds, the label of sitebus_cluster_repairs_total.
const (
	repairNodeRemoved = "node_removed"
	repairBinding     = "binding"
	repairErred       = "resource_erred"
	repairOK          = "resource_ok"
	repairNodeCounts  = "node_counts"
	repairRule        = "security_group_rule"
	repairFloatingIP  = "floating_ip"
)

// passRecords reads and writes records with their KV revision.
type passRecords interface {
	Entries(ctx context.Context) ([]recordEntry, error)
	Update(ctx context.Context, key string, value []byte, rev uint64) error
}

type recordEntry struct {
	Key   string
	Value []byte
	Rev   uint64
}

// pass pulls every cluster once.
type pass struct {
	offerings map[string]*Offering
	vclusters map[string]*VClusterOffering
	records   passRecords
	log       *slog.Logger
	repairs   *prometheus.CounterVec
}

// PassStats are what one pass did, for its log line and for benchmarks.
type PassStats struct {
	Clusters, Repairs, Failed int
	Took                      time.Duration
}

// run pulls every cluster; one that cannot be read is logged and left
// for the next pass.
func (p *pass) run(ctx context.Context) (PassStats, error) {
	start := time.Now()
	var st PassStats
	entries, err := p.records.Entries(ctx)
	if err != nil {
		return st, fmt.Errorf("read cluster records: %w", err)
	}
	for _, e := range entries {
		n, err := p.cluster(ctx, e)
		st.Clusters++
		st.Repairs += n
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			st.Failed++
			p.log.WarnContext(ctx, "cluster pass: a cluster was not pulled; the next pass retries", "record", e.Key, "err", err)
		}
	}
	st.Took = time.Since(start)
	return st, nil
}

// cluster pulls one cluster and repairs it; it returns the repairs made.
func (p *pass) cluster(ctx context.Context, e recordEntry) (int, error) {
	var rec Record
	if err := json.Unmarshal(e.Value, &rec); err != nil {
		return 0, err
	}
	if rec.VCluster != nil {
		return p.vcluster(ctx, e, rec)
	}
	plan, err := ranchercluster.UnmarshalPlan(rec.Plan)
	if err != nil {
		return 0, err
	}
	o, ok := p.offerings[rec.OfferingUUID]
	if !ok && rec.OfferingUUID == "" && len(p.offerings) == 1 {
		// A record written before records named their offering.
		for _, only := range p.offerings {
			o = only
		}
		ok = true
	}
	if !ok || rec.Cluster.ID == "" {
		return 0, nil // another deployment's, or a create still running
	}
	r := &run{in: Input{OfferingUUID: rec.OfferingUUID, ResourceUUID: plan.ResourceUUID}, o: o, plan: plan, made: rec,
		log: p.log.With("resource", plan.ResourceUUID, "cluster", plan.Cluster.Name), zones: map[string]Zone{}, images: map[string]string{}}
	ref := r.clusterRef()
	cl, err := o.Rancher.GetCluster(ctx, ref.ID)
	if err != nil {
		return 0, fmt.Errorf("rancher cluster %s: %w", ref, err)
	}
	rnodes, err := o.Rancher.ListClusterNodes(ctx, ref.ID)
	if err != nil {
		return 0, fmt.Errorf("nodes of %s: %w", ref, err)
	}
	byHost := map[string]rancher.Node{}
	for _, n := range rnodes {
		byHost[n.RequestedHostname] = n
	}
	vms, err := r.ownedServers(ctx)
	if err != nil {
		return 0, err
	}

	repairs := 0
	var problems []string
	changed := false
	for _, s := range slices.Clone(r.made.Nodes) {
		vm, exists := vms[s.ServerID]
		switch {
		case s.ServerID == "":
			continue
		case !exists:
			if err := r.removeGoneNode(ctx, s, byHost[s.Name]); err != nil {
				return repairs, err
			}
			changed = true
			repairs++
			p.repairs.WithLabelValues(repairNodeRemoved).Inc()
			r.log.Warn("cluster pass: node removed, its VM was deleted", "node", s.Name, "vm", s.ServerID)
			continue
		case vm.Status == "ERROR":
			problems = append(problems, fmt.Sprintf("VM %s is in ERROR: %s", s.Name, vm.Fault))
			continue
		}
		switch n, ok := byHost[s.Name]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("node %s is not registered in Rancher", s.Name))
		case n.State != "active":
			problems = append(problems, fmt.Sprintf("node %s is %s in Rancher", s.Name, n.State))
		}
	}
	if changed {
		if r.plan, err = planWithout(r.plan, r.made.Nodes); err != nil {
			return repairs, err
		}
		if r.made.Plan, err = r.plan.Marshal(); err != nil {
			return repairs, err
		}
	}
	problems = append(problems, r.shortfall()...)
	if cl.State != "active" {
		problems = append(problems, "Rancher shows the cluster "+clusterStanding(cl))
	}

	if kp := r.plan.Keycloak; kp != nil {
		for _, b := range kp.RoleGroups {
			created, err := o.Rancher.EnsureClusterGroupBinding(ctx, ref, b.RoleTemplate, b.Group)
			if err != nil {
				return repairs, fmt.Errorf("bind group %s as %s: %w", b.Group, b.RoleTemplate, err)
			}
			if created {
				repairs++
				p.repairs.WithLabelValues(repairBinding).Inc()
				r.log.Warn("cluster pass: group binding made again", "group", b.Group, "role", b.RoleTemplate)
			}
		}
	}

	made, moved, found, err := p.networking(ctx, r, vms)
	repairs += made
	changed = changed || moved
	problems = append(problems, found...)
	if err != nil {
		return repairs, err
	}

	counts := r.nodeCounts(vms, byHost)
	if !maps.Equal(counts, r.made.NodeCounts) {
		md := r.metadata(ref.ID)
		md["node_counts"] = counts
		if len(r.made.Removed) > 0 {
			md["removed_nodes"] = r.made.Removed
		}
		if err := o.Waldur.SetResourceBackendMetadata(ctx, plan.ResourceUUID, md); err != nil {
			return repairs, fmt.Errorf("set_backend_metadata: %w", err)
		}
		r.made.NodeCounts, changed = counts, true
		repairs++
		p.repairs.WithLabelValues(repairNodeCounts).Inc()
		r.log.Info("cluster pass: node counts updated in Waldur", "counts", counts)
	}

	reason := strings.Join(problems, "; ")
	told, err := p.standing(ctx, o.Waldur, r.log, plan.ResourceUUID, reason, r.made.Erred)
	if err != nil {
		return repairs, err
	}
	if told {
		if reason == "" {
			r.made.Removed = nil // the removals Waldur showed are over
		}
		r.made.Erred, changed = reason, true
		repairs++
	}
	if !changed {
		return repairs, nil
	}
	raw, err := json.Marshal(r.made)
	if err != nil {
		return repairs, err
	}
	return repairs, p.records.Update(ctx, e.Key, raw, e.Rev)
}

// standing tells Waldur that a resource's standing changed: set_as_erred
// when reason is a problem Waldur does not show yet (erred is the one it
// shows), set_as_ok when the problems are over. It reports whether it told
// Waldur anything; the caller then records reason as the resource's Erred.
// The rancher-cluster and the vcluster passes share it.
func (p *pass) standing(ctx context.Context, w Waldur, log *slog.Logger, resourceUUID, reason, erred string) (bool, error) {
	switch {
	case reason != "" && reason != erred:
		if err := w.SetResourceErred(ctx, resourceUUID, reason, ""); err != nil {
			return false, fmt.Errorf("set_as_erred: %w", err)
		}
		p.repairs.WithLabelValues(repairErred).Inc()
		log.Warn("cluster pass: resource erred", "reason", reason)
	case reason == "" && erred != "":
		if err := w.SetResourceOK(ctx, resourceUUID); err != nil {
			return false, fmt.Errorf("set_as_ok: %w", err)
		}
		p.repairs.WithLabelValues(repairOK).Inc()
		log.Info("cluster pass: resource OK again", "was", erred)
	default:
		return false, nil
	}
	return true, nil
}

// ownedServers are the resource's VMs in every zone and project of the
// cluster, by id: one list call per zone and project.
func (r *run) ownedServers(ctx context.Context) (map[string]openstack.Server, error) {
	out := map[string]openstack.Server{}
	for _, pl := range places(&r.made, r.plan) {
		z, az, err := r.inProject(ctx, pl.offering, pl.project)
		if err != nil {
			return nil, err
		}
		vms, err := z.OwnedServers(ctx, r.owner())
		if err != nil {
			return nil, fmt.Errorf("servers in zone %s: %w", az.Label(), err)
		}
		maps.Copy(out, vms)
	}
	return out, nil
}

// removeGoneNode deletes the Rancher node of a VM that is gone, and what
// the VM leaves behind (port, floating IP, volumes), then drops it from
// the record.
func (r *run) removeGoneNode(ctx context.Context, s ServerRecord, rn rancher.Node) error {
	if rn.ID != "" {
		if err := r.o.Rancher.DeleteNode(ctx, r.clusterRef(), rn.ID); err != nil && !isNotFound(err) {
			return fmt.Errorf("rancher node %s: %w", s.Name, err)
		}
	}
	if err := r.removeServer(ctx, s); err != nil {
		return fmt.Errorf("what VM %s left: %w", s.Name, err)
	}
	r.made.Nodes = slices.DeleteFunc(r.made.Nodes, func(x ServerRecord) bool { return x.Name == s.Name })
	if !slices.Contains(r.made.Removed, s.Name) {
		r.made.Removed = append(r.made.Removed, s.Name)
	}
	return nil
}

// planWithout is p with only the nodes the record still has.
func planWithout(p *ranchercluster.Plan, left []ServerRecord) (*ranchercluster.Plan, error) {
	raw, err := p.Marshal()
	if err != nil {
		return nil, err
	}
	out, err := ranchercluster.UnmarshalPlan(raw)
	if err != nil {
		return nil, err
	}
	out.Nodes = slices.DeleteFunc(out.Nodes, func(n ranchercluster.NodePlan) bool {
		return !slices.ContainsFunc(left, func(s ServerRecord) bool { return s.Name == n.Name })
	})
	return out, nil
}

// shortfall says which zones lack workers of their count, and whether no
// server is left (Mastermind's check_cluster_nodes).
func (r *run) shortfall() []string {
	var out []string
	servers := 0
	for _, n := range r.plan.Nodes {
		if n.Role == ranchercluster.RoleServer {
			servers++
		}
	}
	if servers == 0 {
		out = append(out, "no server node is left")
	}
	for _, t := range r.plan.Tenants {
		if n := len(r.plan.Agents(t.OfferingUUID)); n < r.plan.WorkersPerZone {
			msg := fmt.Sprintf("zone %s has %d of %d workers", t.OfferingSlug, n, r.plan.WorkersPerZone)
			if len(r.made.Removed) > 0 {
				msg += " (removed because their VMs were deleted: " + strings.Join(r.made.Removed, ", ") +
					"; an update with the same worker_nodes_count makes them again)"
			}
			out = append(out, msg)
		}
	}
	return out
}

// nodeCounts are the cluster's nodes as Waldur's metadata shows them.
func (r *run) nodeCounts(vms map[string]openstack.Server, byHost map[string]rancher.Node) map[string]int {
	c := map[string]int{"servers": 0, "agents": 0, "active": 0, "erred": 0}
	role := map[string]string{}
	for _, n := range r.plan.Nodes {
		role[n.Name] = n.Role
	}
	for _, s := range r.made.Nodes {
		if role[s.Name] == ranchercluster.RoleServer {
			c["servers"]++
		} else {
			c["agents"]++
		}
		if vms[s.ServerID].Status == "ERROR" || byHost[s.Name].State == "error" {
			c["erred"]++
		} else if byHost[s.Name].State == "active" {
			c["active"]++
		}
	}
	return c
}

// runPasses runs a pass every period until ctx ends.
func (p *pass) runPasses(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := p.run(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.WarnContext(ctx, "cluster pass failed", "err", err)
			}
			continue
		}
		p.log.InfoContext(ctx, "cluster pass", "clusters", st.Clusters, "repairs", st.Repairs, "failed", st.Failed, "took", st.Took.Round(time.Millisecond))
	}
}

// Entries reads every record with its revision.
func (p *kvPlans) Entries(ctx context.Context) ([]recordEntry, error) {
	kv, err := p.bucket(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []recordEntry
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			_ = keys.Stop()
			return nil, err
		}
		out = append(out, recordEntry{Key: k, Value: e.Value(), Rev: e.Revision()})
	}
	return out, nil
}

// Update writes a record if it is still at rev: a saga that changed it
// meanwhile wins, and the next pass reads its version.
func (p *kvPlans) Update(ctx context.Context, key string, value []byte, rev uint64) error {
	kv, err := p.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Update(ctx, key, value, rev); err != nil {
		return fmt.Errorf("record of %s changed meanwhile; the next pass reads it again: %w", key, err)
	}
	return nil
}
