package provisioner

import (
	"context"
	"errors"
	"fmt"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// networking re-makes what the cluster pass finds missing of the
// networking sitebus made for a cluster (Mastermind's pull re-made its
// own objects too; a rule or floating IP deleted by hand cuts the nodes
// off without any VM going wrong):
//
//   - the rules of each security group the record's tenants hold, as the
//     plan lists them; a rule someone added is left alone, and a group
//     that is gone altogether is reported, not made again (its ports
//     would not be in a new one);
//   - the floating IP of each load balancer and node the record gives
//     one, on its port, when the VM is there; the new address goes to
//     the record and, for a load balancer, to Waldur's endpoints.
//
// Only owner's objects are read (one list of groups per tenant, one of
// floating IPs per project that has any) and only the record's are
// touched. It returns the repairs made, whether the record changed, and
// the problems to err the resource with; a port that holds someone
// else's floating IP is such a problem, not a failure of the pass.
func (p *pass) networking(ctx context.Context, r *run, vms map[string]openstack.Server) (repairs int, changed bool, problems []string, err error) {
	own := r.owner()
	for _, t := range r.made.Tenants {
		if len(t.SecurityGroups) == 0 {
			continue
		}
		planned := map[string]openstack.SecurityGroupPlan{}
		for _, tp := range r.plan.Tenants {
			if tp.OfferingUUID == t.OfferingUUID {
				for _, g := range tp.SecurityGroups {
					planned[g.Name] = g
				}
			}
		}
		z, _, err := r.inProject(ctx, t.OfferingUUID, t.Project)
		if err != nil {
			return repairs, changed, problems, err
		}
		owned, err := z.OwnedSecurityGroups(ctx, own)
		if err != nil {
			return repairs, changed, problems, fmt.Errorf("security groups of %s: %w", t.Project.Name, err)
		}
		for _, sg := range t.SecurityGroups {
			want, ok := planned[sg.Name]
			if !ok {
				continue
			}
			have, ok := owned[sg.ID]
			if !ok {
				problems = append(problems, fmt.Sprintf("security group %s (%s) of project %s is gone", sg.Name, sg.ID, t.Project.Name))
				continue
			}
			missing := have.MissingRules(want.Rules)
			if len(missing) == 0 {
				continue
			}
			if _, _, err := z.EnsureSecurityGroup(ctx, own, want); err != nil {
				return repairs, changed, problems, fmt.Errorf("rules of security group %s: %w", sg.Name, err)
			}
			repairs += len(missing)
			p.repairs.WithLabelValues(repairRule).Add(float64(len(missing)))
			for _, m := range missing {
				r.log.Warn("cluster pass: security group rule made again", "group", sg.Name, "direction", m.Direction,
					"protocol", m.Protocol, "ports", fmt.Sprintf("%d-%d", m.PortRangeMin, m.PortRangeMax), "remote", m.RemoteIPPrefix)
			}
		}
	}

	fips := map[string]map[string]openstack.FloatingIP{} // by zone and project
	lbMoved := false
	for _, list := range []struct {
		recs []ServerRecord
		lb   bool
	}{{r.made.LoadBalancers, true}, {r.made.Nodes, false}} {
		for i := range list.recs {
			s := &list.recs[i]
			if s.FloatingIPID == "" || s.PortID == "" {
				continue
			}
			if _, ok := vms[s.ServerID]; !ok {
				continue // a VM that is gone is the node loop's
			}
			z, az, err := r.inProject(ctx, s.OfferingUUID, r.projectByID(s.OfferingUUID, s.ProjectID))
			if err != nil {
				return repairs, changed, problems, err
			}
			key := s.OfferingUUID + "/" + s.ProjectID
			if _, ok := fips[key]; !ok {
				if fips[key], err = z.OwnedFloatingIPs(ctx, own); err != nil {
					return repairs, changed, problems, fmt.Errorf("floating IPs in zone %s: %w", az.Label(), err)
				}
			}
			if _, ok := fips[key][s.FloatingIPID]; ok {
				continue
			}
			if az.ExternalNetworkID == "" {
				problems = append(problems, fmt.Sprintf("the floating IP %s of %s is gone and zone %s has no external_network_id to make it again", s.FloatingIP, s.Name, az.Label()))
				continue
			}
			fip, created, err := z.EnsureFloatingIP(ctx, own, az.ExternalNetworkID, s.PortID)
			if errors.Is(err, backend.ErrNotManaged) {
				problems = append(problems, fmt.Sprintf("the floating IP %s of %s is gone and its port has someone else's", s.FloatingIP, s.Name))
				continue
			}
			if err != nil {
				return repairs, changed, problems, fmt.Errorf("floating IP of %s: %w", s.Name, err)
			}
			changed, lbMoved = true, lbMoved || (list.lb && fip.Address != s.FloatingIP)
			if !created {
				// An earlier pass made it but could not write the record
				// (a saga changed it meanwhile): only the record catches up.
				r.log.Info("cluster pass: floating IP on the port recorded", "vm", s.Name, "address", fip.Address)
				s.FloatingIPID, s.FloatingIP = fip.ID, fip.Address
				continue
			}
			r.log.Warn("cluster pass: floating IP made again", "vm", s.Name, "was", s.FloatingIP, "now", fip.Address)
			s.FloatingIPID, s.FloatingIP = fip.ID, fip.Address
			repairs++
			p.repairs.WithLabelValues(repairFloatingIP).Inc()
		}
	}
	if lbMoved {
		// Waldur shows each load balancer's address as an endpoint.
		if err := r.o.Waldur.SetResourceEndpoints(ctx, r.in.ResourceUUID, r.endpoints(r.made.Cluster.ID)); err != nil {
			return repairs, changed, problems, fmt.Errorf("set_endpoints: %w", err)
		}
	}
	return repairs, changed, problems, nil
}
