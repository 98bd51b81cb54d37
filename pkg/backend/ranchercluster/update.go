package ranchercluster

import (
	"fmt"
	"slices"
)

// Resize is what a worker count change does: the agents to add (named
// and laid out like the zone's others) and those to drain and remove.
type Resize struct {
	Add    []NodePlan `json:"add,omitempty"`
	Remove []NodePlan `json:"remove,omitempty"`
}

// PlanResize changes a managed cluster's worker_nodes_count to workers
// per zone. It returns the plan after the change and the nodes to add and
// remove: new agents take the lowest free node numbers (Mastermind's
// get_unique_node_name), and the highest-numbered agents of each zone go
// first. The last agent of a zone is never removed, and the tenants'
// totals must stay within the offering's maxima.
func PlanResize(s *Settings, p *Plan, workers int) (*Plan, Resize, error) {
	if err := readOnly(s); err != nil {
		return nil, Resize{}, err
	}
	const attr = "worker_nodes_count"
	if p.Mode != ModeManaged {
		return nil, Resize{}, &AttributeError{Attribute: attr, Msg: "only a managed cluster's worker count can change; add or remove its nodes instead"}
	}
	if workers < 1 {
		return nil, Resize{}, &AttributeError{Attribute: attr, Msg: msgAgentCount}
	}
	out, err := clonePlan(p)
	if err != nil {
		return nil, Resize{}, err
	}
	var rs Resize
	existing := p.NodeNames()
	var total Quota
	for ti := range out.Tenants {
		t := &out.Tenants[ti]
		agents := p.Agents(t.OfferingUUID)
		if len(agents) == 0 {
			return nil, Resize{}, fmt.Errorf("rancher-cluster plan: zone %s has no agent to copy", t.OfferingSlug)
		}
		per := nodeQuota(agents[0], t)
		switch d := workers - len(agents); {
		case d > 0:
			for _, num := range NextNodeNumbers(out.Cluster.Name, existing, d) {
				n := renameNode(agents[0], NodeName(out.Cluster.Name, num), num)
				existing = append(existing, n.Name)
				rs.Add = append(rs.Add, n)
				out.Nodes = append(out.Nodes, n)
			}
			t.Quota = t.Quota.Add(per.Times(d))
		case d < 0:
			slices.SortFunc(agents, func(a, b NodePlan) int { return b.Number - a.Number })
			gone := agents[:-d]
			rs.Remove = append(rs.Remove, gone...)
			out.Nodes = slices.DeleteFunc(out.Nodes, func(n NodePlan) bool {
				return slices.ContainsFunc(gone, func(g NodePlan) bool { return g.Name == n.Name })
			})
			t.Quota = subtract(t.Quota, per.Times(-d))
		}
		total = total.Add(t.Quota)
	}
	if err := checkMax(s.TenantMax, total); err != nil {
		return nil, Resize{}, err
	}
	out.WorkersPerZone = workers
	return out, rs, nil
}

// PlanServers changes a self-managed cluster's server count to servers:
// 1, 3 or 5, as at create (etcd keeps a quorum only with an odd count).
// New servers are laid out like the first one (zone, subnet, flavor,
// volumes, groups, SSH key) and take the lowest free node numbers; fewer
// servers are removed by name (PlanRemoveNodes), so the order says which.
// A managed cluster keeps the three servers of each zone.
func PlanServers(s *Settings, p *Plan, servers int) (*Plan, Resize, error) {
	if err := readOnly(s); err != nil {
		return nil, Resize{}, err
	}
	const attr = "server_nodes_count"
	if p.Mode != ModeSelfManaged {
		return nil, Resize{}, &AttributeError{Attribute: attr, Msg: "only a self-managed cluster's server count can change; a managed cluster keeps three servers per zone"}
	}
	if servers != 1 && servers != 3 && servers != 5 {
		return nil, Resize{}, &AttributeError{Attribute: attr, Msg: fmt.Sprintf(msgServerCount, servers)}
	}
	have := p.Servers()
	switch {
	case len(have) == 0:
		return nil, Resize{}, fmt.Errorf("rancher-cluster plan: no server to copy")
	case servers < len(have):
		return nil, Resize{}, &AttributeError{Attribute: attr,
			Msg: fmt.Sprintf("the cluster has %d servers: name the ones to remove in remove_nodes", len(have))}
	}
	out, err := clonePlan(p)
	if err != nil {
		return nil, Resize{}, err
	}
	var rs Resize
	existing := p.NodeNames()
	for _, num := range NextNodeNumbers(out.Cluster.Name, existing, servers-len(have)) {
		n := renameNode(have[0], NodeName(out.Cluster.Name, num), num)
		rs.Add = append(rs.Add, n)
		out.Nodes = append(out.Nodes, n)
	}
	return out, rs, nil
}

// PlanRemoveNodes removes the named nodes (each is drained, then its VM
// and Rancher node deleted). The cluster keeps at least one agent and 1,
// 3 or 5 servers; a managed cluster keeps its servers and at least one
// agent per zone, and its worker count becomes the fewest agents a zone
// has left.
func PlanRemoveNodes(s *Settings, p *Plan, names []string) (*Plan, Resize, error) {
	if err := readOnly(s); err != nil {
		return nil, Resize{}, err
	}
	const attr = "remove_nodes"
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, &AttributeError{Attribute: attr, Msg: fmt.Sprintf(format, args...)})
	}
	var rs Resize
	for _, name := range names {
		i := slices.IndexFunc(p.Nodes, func(n NodePlan) bool { return n.Name == name })
		switch {
		case i < 0:
			bad("%s is not a node of this cluster.", name)
		case slices.ContainsFunc(rs.Remove, func(n NodePlan) bool { return n.Name == name }):
			bad("%s is named twice.", name)
		case p.Mode == ModeManaged && p.Nodes[i].Role == RoleServer:
			bad("%s is a server: a managed cluster keeps three servers per zone.", name)
		default:
			rs.Remove = append(rs.Remove, p.Nodes[i])
		}
	}
	if err := joinAttr(errs); err != nil {
		return nil, Resize{}, err
	}
	out, err := clonePlan(p)
	if err != nil {
		return nil, Resize{}, err
	}
	out.Nodes = slices.DeleteFunc(out.Nodes, func(n NodePlan) bool {
		return slices.ContainsFunc(rs.Remove, func(g NodePlan) bool { return g.Name == n.Name })
	})
	if n := len(out.Servers()); p.Mode == ModeSelfManaged && n != 1 && n != 3 && n != 5 {
		bad("the cluster would keep %d servers, and must keep 1, 3 or 5.", n)
	}
	if len(out.Agents("")) == 0 {
		bad("the cluster would keep no agent node: %s", msgAgentCount)
	}
	for ti := range out.Tenants {
		t := &out.Tenants[ti]
		left := len(out.Agents(t.OfferingUUID))
		if left == 0 {
			bad("zone %s would keep no agent node.", t.OfferingSlug)
			continue
		}
		for _, g := range rs.Remove {
			if g.OfferingUUID == t.OfferingUUID {
				t.Quota = subtract(t.Quota, nodeQuota(g, t))
			}
		}
		if ti == 0 || left < out.WorkersPerZone {
			out.WorkersPerZone = left
		}
	}
	if err := joinAttr(errs); err != nil {
		return nil, Resize{}, err
	}
	return out, rs, nil
}

// PlanRename changes the cluster's name (Rancher's display name; the v1
// object's name cannot change) after Waldur's name rule.
func PlanRename(s *Settings, p *Plan, name string) (*Plan, error) {
	if err := readOnly(s); err != nil {
		return nil, err
	}
	if msg := checkClusterName(name); msg != "" {
		return nil, &AttributeError{Attribute: "name", Msg: msg}
	}
	out, err := clonePlan(p)
	if err != nil {
		return nil, err
	}
	out.Cluster.DisplayName = name
	return out, nil
}

// nodeQuota is one node's share of its tenant's quota.
func nodeQuota(n NodePlan, t *TenantPlan) Quota {
	q := Quota{Cores: n.Flavor.VCPUs, RAMMB: n.Flavor.RAMMB}
	for _, v := range append([]VolumePlan{n.SystemVolume}, n.DataVolumes...) {
		q.Gigabytes += v.SizeGB
		if v.Type != "" && t.Quota.GigabytesByType != nil {
			if q.GigabytesByType == nil {
				q.GigabytesByType = map[string]int{}
			}
			q.GigabytesByType[v.Type] += v.SizeGB
		}
	}
	return q
}

func subtract(a, b Quota) Quota {
	neg := Quota{Cores: -b.Cores, RAMMB: -b.RAMMB, Gigabytes: -b.Gigabytes}
	for k, v := range b.GigabytesByType {
		if neg.GigabytesByType == nil {
			neg.GigabytesByType = map[string]int{}
		}
		neg.GigabytesByType[k] = -v
	}
	return a.Add(neg)
}

// renameNode copies a node under a new name and number, its volumes renamed.
func renameNode(n NodePlan, name string, number int) NodePlan {
	out := n
	out.Name, out.Number = name, number
	out.SystemVolume.Name = VolumeName(name, 0)
	out.DataVolumes = slices.Clone(n.DataVolumes)
	for i := range out.DataVolumes {
		out.DataVolumes[i].Name = VolumeName(name, i+1)
	}
	return out
}

// clonePlan deep-copies a plan through its JSON, which is all it is.
func clonePlan(p *Plan) (*Plan, error) {
	b, err := p.Marshal()
	if err != nil {
		return nil, err
	}
	return UnmarshalPlan(b)
}
