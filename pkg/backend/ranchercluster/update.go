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
	existing := make([]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		existing = append(existing, n.Name)
	}
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
