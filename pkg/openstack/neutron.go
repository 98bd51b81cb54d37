package openstack

import (
	"context"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/sitebus/sitebus/pkg/fault"
)

// list reads every page of a pager and extracts it.
func list[T any](ctx context.Context, op, obj string, p pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	page, err := p.AllPages(ctx)
	if err != nil {
		return nil, classify(op, obj, err)
	}
	out, err := extract(page)
	if err != nil {
		return nil, classify(op, obj, err)
	}
	return out, nil
}

// EnsureNetwork makes the network n.Name in the client's project.
func (c *Client) EnsureNetwork(ctx context.Context, owner Owner, n NetworkPlan) (Network, bool, error) {
	obj := "network " + n.Name
	found, err := list(ctx, "list networks", obj,
		networks.List(c.network, networks.ListOpts{Name: n.Name, ProjectID: c.projectID}), networks.ExtractNetworks)
	if err != nil {
		return Network{}, false, err
	}
	cands := make([]candidate, len(found))
	for i, f := range found {
		cands[i] = candidate{i, f.Description}
	}
	if i, err := c.pickOwned(ctx, owner, "use", obj, cands); err != nil || i >= 0 {
		if err != nil {
			return Network{}, false, err
		}
		return networkOf(&found[i]), false, nil
	}
	up := true
	r, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: n.Name, Description: owner.Mark(), AdminStateUp: &up}).Extract()
	if err != nil {
		return Network{}, false, classify("create", obj, err)
	}
	c.log.InfoContext(ctx, "created network", "name", n.Name, "id", r.ID, "project", c.projectID, "owner", string(owner))
	return networkOf(r), true, nil
}

// DeleteNetwork deletes the network (absent: done) if it is owner's.
// Neutron refuses while ports use it (409, retryable).
func (c *Client) DeleteNetwork(ctx context.Context, owner Owner, networkID string) error {
	return c.deleteOwned(ctx, owner, "network", networkID, func() (string, string, string, error) {
		r, err := networks.Get(ctx, c.network, networkID).Extract()
		if err != nil {
			return "", "", "", err
		}
		return r.Name, r.Description, r.ProjectID, nil
	}, func() error { return networks.Delete(ctx, c.network, networkID).ExtractErr() })
}

// EnsureSubnet makes the subnet s on networkID: CIDR, gateway, allocation
// pools (the plan's .11-.200), DNS servers, DHCP. An existing subnet whose
// pools differ from the plan's is updated to them (Mastermind narrows the
// pool after the tenant is made).
func (c *Client) EnsureSubnet(ctx context.Context, owner Owner, networkID string, s SubnetPlan) (Subnet, bool, error) {
	obj := "subnet " + s.Name
	found, err := list(ctx, "list subnets", obj,
		subnets.List(c.network, subnets.ListOpts{Name: s.Name, NetworkID: networkID, ProjectID: c.projectID}), subnets.ExtractSubnets)
	if err != nil {
		return Subnet{}, false, err
	}
	cands := make([]candidate, len(found))
	for i, f := range found {
		cands[i] = candidate{i, f.Description}
	}
	pools := make([]subnets.AllocationPool, len(s.AllocationPools))
	for i, p := range s.AllocationPools {
		pools[i] = subnets.AllocationPool{Start: p.Start, End: p.End}
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return Subnet{}, false, err
	}
	if i >= 0 {
		sub := subnetOf(&found[i])
		if found[i].CIDR != s.CIDR {
			return sub, false, newError("use", obj, fmt.Sprintf("it has CIDR %s, the plan %s", found[i].CIDR, s.CIDR), fault.Invalid)
		}
		if slices.Equal(sub.AllocationPools, s.AllocationPools) {
			return sub, false, nil
		}
		r, err := subnets.Update(ctx, c.network, found[i].ID, subnets.UpdateOpts{AllocationPools: pools}).Extract()
		if err != nil {
			return sub, false, classify("narrow the allocation pools of", obj, err)
		}
		c.log.InfoContext(ctx, "updated subnet pools", "name", s.Name, "id", r.ID, "pools", s.AllocationPools)
		return subnetOf(r), false, nil
	}
	dhcp := s.EnableDHCP
	opts := subnets.CreateOpts{NetworkID: networkID, Name: s.Name, Description: owner.Mark(), CIDR: s.CIDR,
		AllocationPools: pools, DNSNameservers: s.DNSNameservers, EnableDHCP: &dhcp, IPVersion: 4}
	if s.IPVersion == 6 {
		opts.IPVersion = 6
	}
	if s.GatewayIP != "" {
		gw := s.GatewayIP
		opts.GatewayIP = &gw
	}
	r, err := subnets.Create(ctx, c.network, opts).Extract()
	if err != nil {
		return Subnet{}, false, classify("create", obj, err)
	}
	c.log.InfoContext(ctx, "created subnet", "name", s.Name, "id", r.ID, "cidr", r.CIDR, "project", c.projectID, "owner", string(owner))
	return subnetOf(r), true, nil
}

// DeleteSubnet deletes the subnet (absent: done) if it is owner's.
func (c *Client) DeleteSubnet(ctx context.Context, owner Owner, subnetID string) error {
	return c.deleteOwned(ctx, owner, "subnet", subnetID, func() (string, string, string, error) {
		r, err := subnets.Get(ctx, c.network, subnetID).Extract()
		if err != nil {
			return "", "", "", err
		}
		return r.Name, r.Description, r.ProjectID, nil
	}, func() error { return subnets.Delete(ctx, c.network, subnetID).ExtractErr() })
}

// EnsureRouter makes the router r with its gateway on r.ExternalNetworkID
// and gives it an interface on subnetID when it has none there.
func (c *Client) EnsureRouter(ctx context.Context, owner Owner, r RouterPlan, subnetID string) (Router, bool, error) {
	obj := "router " + r.Name
	found, err := list(ctx, "list routers", obj,
		routers.List(c.network, routers.ListOpts{Name: r.Name, ProjectID: c.projectID}), routers.ExtractRouters)
	if err != nil {
		return Router{}, false, err
	}
	cands := make([]candidate, len(found))
	for i, f := range found {
		cands[i] = candidate{i, f.Description}
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return Router{}, false, err
	}
	var rt *routers.Router
	created := false
	if i >= 0 {
		rt = &found[i]
		if r.ExternalNetworkID != "" && rt.GatewayInfo.NetworkID != r.ExternalNetworkID {
			if rt, err = routers.Update(ctx, c.network, rt.ID, routers.UpdateOpts{
				GatewayInfo: &routers.GatewayInfo{NetworkID: r.ExternalNetworkID}}).Extract(); err != nil {
				return Router{}, false, classify("set the gateway of", obj, err)
			}
		}
	} else {
		opts := routers.CreateOpts{Name: r.Name, Description: owner.Mark()}
		if r.ExternalNetworkID != "" {
			opts.GatewayInfo = &routers.GatewayInfo{NetworkID: r.ExternalNetworkID}
		}
		if rt, err = routers.Create(ctx, c.network, opts).Extract(); err != nil {
			return Router{}, false, classify("create", obj, err)
		}
		created = true
		c.log.InfoContext(ctx, "created router", "name", r.Name, "id", rt.ID, "project", c.projectID, "owner", string(owner))
	}
	out := Router{ID: rt.ID, Name: rt.Name, ProjectID: rt.ProjectID, ExternalNetworkID: rt.GatewayInfo.NetworkID}
	if out.SubnetIDs, err = c.routerSubnets(ctx, rt.ID); err != nil {
		return out, created, err
	}
	if subnetID != "" && !slices.Contains(out.SubnetIDs, subnetID) {
		if _, err := routers.AddInterface(ctx, c.network, rt.ID, routers.AddInterfaceOpts{SubnetID: subnetID}).Extract(); err != nil {
			return out, created, classify("add an interface on subnet "+subnetID+" to", obj, err)
		}
		out.SubnetIDs = append(out.SubnetIDs, subnetID)
	}
	return out, created, nil
}

// routerSubnets lists the subnets a router has an interface on.
func (c *Client) routerSubnets(ctx context.Context, routerID string) ([]string, error) {
	ps, err := list(ctx, "list interfaces", "of router "+routerID,
		ports.List(c.network, ports.ListOpts{DeviceID: routerID, DeviceOwner: "network:router_interface"}), ports.ExtractPorts)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			out = append(out, ip.SubnetID)
		}
	}
	return out, nil
}

// DeleteRouter removes the router's interfaces and deletes it (absent:
// done) if it is owner's.
func (c *Client) DeleteRouter(ctx context.Context, owner Owner, routerID string) error {
	return c.deleteOwned(ctx, owner, "router", routerID, func() (string, string, string, error) {
		r, err := routers.Get(ctx, c.network, routerID).Extract()
		if err != nil {
			return "", "", "", err
		}
		return r.Name, r.Description, r.ProjectID, nil
	}, func() error {
		subs, err := c.routerSubnets(ctx, routerID)
		if err != nil {
			return err
		}
		for _, s := range subs {
			if _, err := routers.RemoveInterface(ctx, c.network, routerID, routers.RemoveInterfaceOpts{SubnetID: s}).Extract(); err != nil && !gone(err) {
				return err
			}
		}
		return routers.Delete(ctx, c.network, routerID).ExtractErr()
	})
}

// EnsureSecurityGroup makes the group g with its rules; on an existing
// group it adds the rules that are missing (none is removed).
func (c *Client) EnsureSecurityGroup(ctx context.Context, owner Owner, g SecurityGroupPlan) (SecurityGroup, bool, error) {
	obj := "security group " + g.Name
	found, err := list(ctx, "list security groups", obj,
		groups.List(c.network, groups.ListOpts{Name: g.Name, ProjectID: c.projectID}), groups.ExtractGroups)
	if err != nil {
		return SecurityGroup{}, false, err
	}
	cands := make([]candidate, len(found))
	for i, f := range found {
		cands[i] = candidate{i, f.Description}
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return SecurityGroup{}, false, err
	}
	var sg *groups.SecGroup
	created := false
	if i >= 0 {
		sg = &found[i]
	} else {
		if sg, err = groups.Create(ctx, c.network, groups.CreateOpts{Name: g.Name, Description: owner.describe(g.Description)}).Extract(); err != nil {
			return SecurityGroup{}, false, classify("create", obj, err)
		}
		created = true
		c.log.InfoContext(ctx, "created security group", "name", g.Name, "id", sg.ID, "project", c.projectID, "owner", string(owner))
	}
	out := SecurityGroup{ID: sg.ID, Name: sg.Name, ProjectID: sg.ProjectID}
	for _, r := range sg.Rules {
		out.Rules = append(out.Rules, ruleOf(r))
	}
	for _, want := range g.Rules {
		if slices.ContainsFunc(out.Rules, func(r Rule) bool { return sameRule(r.RulePlan, want) }) {
			continue
		}
		r, err := rules.Create(ctx, c.network, rules.CreateOpts{SecGroupID: sg.ID,
			Direction: rules.RuleDirection(want.Direction), EtherType: rules.RuleEtherType(want.EtherType),
			Protocol: rules.RuleProtocol(want.Protocol), PortRangeMin: want.PortRangeMin, PortRangeMax: want.PortRangeMax,
			RemoteIPPrefix: want.RemoteIPPrefix, Description: owner.Mark()}).Extract()
		if err != nil {
			return out, created, classify("add a rule to", fmt.Sprintf("%s (%s %s %d-%d from %s)", obj, want.Direction,
				want.Protocol, want.PortRangeMin, want.PortRangeMax, want.RemoteIPPrefix), err)
		}
		out.Rules = append(out.Rules, ruleOf(*r))
	}
	return out, created, nil
}

// sameRule compares rules as Neutron does when it refuses a duplicate.
func sameRule(a, b RulePlan) bool {
	norm := func(p string) string {
		if p == "0.0.0.0/0" || p == "::/0" {
			return ""
		}
		return p
	}
	return a.Direction == b.Direction && a.EtherType == b.EtherType && a.Protocol == b.Protocol &&
		a.PortRangeMin == b.PortRangeMin && a.PortRangeMax == b.PortRangeMax && norm(a.RemoteIPPrefix) == norm(b.RemoteIPPrefix)
}

// DeleteSecurityGroup deletes the group (absent: done) if it is owner's.
func (c *Client) DeleteSecurityGroup(ctx context.Context, owner Owner, groupID string) error {
	return c.deleteOwned(ctx, owner, "security group", groupID, func() (string, string, string, error) {
		r, err := groups.Get(ctx, c.network, groupID).Extract()
		if err != nil {
			return "", "", "", err
		}
		if r.Name == "default" {
			// Neutron's own group of the project: never the owner's.
			return r.Name, "", r.ProjectID, nil
		}
		return r.Name, r.Description, r.ProjectID, nil
	}, func() error { return groups.Delete(ctx, c.network, groupID).ExtractErr() })
}

// UsableSubnet finds the subnet id where the client's project may put a
// VM: one of the project's own, or on a network shared with every project.
// An administrator's credentials can read and use any project's subnet, so
// a subnet of another project is refused here, not by Neutron: an order
// must not put its VMs into someone else's network. false when there is
// no such subnet.
func (c *Client) UsableSubnet(ctx context.Context, id string) (Subnet, bool, error) {
	obj := "subnet " + id
	sub, err := subnets.Get(ctx, c.network, id).Extract()
	if err != nil {
		if err = classify("read", obj, err); IsNotFound(err) {
			return Subnet{}, false, nil
		}
		return Subnet{}, false, err
	}
	if sub.ProjectID == c.projectID {
		return subnetOf(sub), true, nil
	}
	n, err := networks.Get(ctx, c.network, sub.NetworkID).Extract()
	if err != nil {
		if err = classify("read the network of", obj, err); IsNotFound(err) {
			return Subnet{}, false, nil
		}
		return Subnet{}, false, err
	}
	return subnetOf(sub), n.Shared, nil
}

// SecurityGroups lists the security groups of the client's project (with
// Neutron's default, which listing makes if the project had none).
func (c *Client) SecurityGroups(ctx context.Context) ([]SecurityGroup, error) {
	all, err := list(ctx, "list security groups", "", groups.List(c.network, groups.ListOpts{ProjectID: c.projectID}), groups.ExtractGroups)
	if err != nil {
		return nil, err
	}
	out := make([]SecurityGroup, len(all))
	for i, g := range all {
		out[i] = SecurityGroup{ID: g.ID, Name: g.Name, ProjectID: g.ProjectID}
	}
	return out, nil
}

// securityGroupIDs resolves names or ids of the project's groups.
func (c *Client) securityGroupIDs(ctx context.Context, namesOrIDs []string) ([]string, error) {
	if len(namesOrIDs) == 0 {
		return nil, nil
	}
	all, err := list(ctx, "list security groups", "", groups.List(c.network, groups.ListOpts{ProjectID: c.projectID}), groups.ExtractGroups)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(namesOrIDs))
	for _, n := range namesOrIDs {
		i := slices.IndexFunc(all, func(g groups.SecGroup) bool { return g.ID == n })
		if i < 0 {
			i = slices.IndexFunc(all, func(g groups.SecGroup) bool { return g.Name == n })
		}
		if i < 0 {
			return nil, newError("find", "security group "+n, "no group of that name or id in project "+c.projectID,
				fault.Invalid, fault.NotFound)
		}
		out = append(out, all[i].ID)
	}
	return out, nil
}

// EnsurePort makes the port p (its fixed IP and security groups); an
// existing port gets the spec's security groups. A port of that name with
// another address is a terminal error. A spec with a subnet but no network
// gets the subnet's network (Neutron requires network_id).
func (c *Client) EnsurePort(ctx context.Context, owner Owner, p PortSpec) (Port, bool, error) {
	obj := "port " + p.Name
	if p.NetworkID == "" {
		// Neutron requires network_id on a port; a self-managed order
		// names only its subnet, whose network it is.
		if p.SubnetID == "" {
			return Port{}, false, newError("create", obj, "neither a network nor a subnet is given", fault.Invalid)
		}
		sub, err := subnets.Get(ctx, c.network, p.SubnetID).Extract()
		if err != nil {
			return Port{}, false, classify("read the subnet of", obj+" (subnet "+p.SubnetID+")", err)
		}
		p.NetworkID = sub.NetworkID
	}
	sgs, err := c.securityGroupIDs(ctx, p.SecurityGroups)
	if err != nil {
		return Port{}, false, err
	}
	found, err := list(ctx, "list ports", obj,
		ports.List(c.network, ports.ListOpts{Name: p.Name, NetworkID: p.NetworkID, ProjectID: c.projectID}), ports.ExtractPorts)
	if err != nil {
		return Port{}, false, err
	}
	cands := make([]candidate, len(found))
	for i, f := range found {
		cands[i] = candidate{i, f.Description}
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return Port{}, false, err
	}
	if i >= 0 {
		out := portOf(&found[i])
		if p.FixedIP != "" && !slices.ContainsFunc(out.FixedIPs, func(ip FixedIP) bool { return ip.IPAddress == p.FixedIP }) {
			return out, false, newError("use", obj, fmt.Sprintf("it has addresses %v, the plan %s", out.FixedIPs, p.FixedIP), fault.Invalid)
		}
		if sameSet(out.SecurityGroupIDs, sgs) {
			return out, false, nil
		}
		r, err := ports.Update(ctx, c.network, out.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Extract()
		if err != nil {
			return out, false, classify("set the security groups of", obj, err)
		}
		c.log.InfoContext(ctx, "updated port security groups", "name", p.Name, "id", r.ID, "groups", p.SecurityGroups)
		return portOf(r), false, nil
	}
	opts := ports.CreateOpts{NetworkID: p.NetworkID, Name: p.Name, Description: owner.Mark(), SecurityGroups: &sgs}
	switch {
	case p.FixedIP != "":
		opts.FixedIPs = []ports.IP{{SubnetID: p.SubnetID, IPAddress: p.FixedIP}}
	case p.SubnetID != "":
		opts.FixedIPs = []ports.IP{{SubnetID: p.SubnetID}}
	}
	r, err := ports.Create(ctx, c.network, opts).Extract()
	if err != nil {
		return Port{}, false, classify("create", obj, err)
	}
	c.log.InfoContext(ctx, "created port", "name", p.Name, "id", r.ID, "ips", r.FixedIPs, "project", c.projectID, "owner", string(owner))
	return portOf(r), true, nil
}

// sameSet compares two id lists as sets.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// DeletePort deletes the port (absent: done) if it is owner's.
func (c *Client) DeletePort(ctx context.Context, owner Owner, portID string) error {
	return c.deleteOwned(ctx, owner, "port", portID, func() (string, string, string, error) {
		r, err := ports.Get(ctx, c.network, portID).Extract()
		if err != nil {
			return "", "", "", err
		}
		return r.Name, r.Description, r.ProjectID, nil
	}, func() error { return ports.Delete(ctx, c.network, portID).ExtractErr() })
}

// EnsureFloatingIP gives portID a floating IP from externalNetworkID (the
// one it has, if any).
func (c *Client) EnsureFloatingIP(ctx context.Context, owner Owner, externalNetworkID, portID string) (FloatingIP, bool, error) {
	obj := "floating IP of port " + portID
	found, err := list(ctx, "list floating IPs", obj,
		floatingips.List(c.network, floatingips.ListOpts{PortID: portID, ProjectID: c.projectID}), floatingips.ExtractFloatingIPs)
	if err != nil {
		return FloatingIP{}, false, err
	}
	cands := make([]candidate, len(found))
	for i, f := range found {
		cands[i] = candidate{i, f.Description}
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return FloatingIP{}, false, err
	}
	if i >= 0 {
		return fipOf(&found[i]), false, nil
	}
	r, err := floatingips.Create(ctx, c.network, floatingips.CreateOpts{FloatingNetworkID: externalNetworkID, PortID: portID,
		Description: owner.Mark()}).Extract()
	if err != nil {
		return FloatingIP{}, false, classify("create", obj, err)
	}
	c.log.InfoContext(ctx, "created floating IP", "address", r.FloatingIP, "id", r.ID, "port", portID, "owner", string(owner))
	return fipOf(r), true, nil
}

// DeleteFloatingIP releases the floating IP (absent: done) if it is
// owner's.
func (c *Client) DeleteFloatingIP(ctx context.Context, owner Owner, fipID string) error {
	return c.deleteOwned(ctx, owner, "floating IP", fipID, func() (string, string, string, error) {
		r, err := floatingips.Get(ctx, c.network, fipID).Extract()
		if err != nil {
			return "", "", "", err
		}
		return r.FloatingIP, r.Description, r.ProjectID, nil
	}, func() error { return floatingips.Delete(ctx, c.network, fipID).ExtractErr() })
}

func networkOf(n *networks.Network) Network {
	return Network{ID: n.ID, Name: n.Name, ProjectID: n.ProjectID}
}

func subnetOf(s *subnets.Subnet) Subnet {
	out := Subnet{ID: s.ID, Name: s.Name, ProjectID: s.ProjectID, NetworkID: s.NetworkID, CIDR: s.CIDR, GatewayIP: s.GatewayIP,
		DNSNameservers: s.DNSNameservers, AllocationPools: []AllocationPool{}}
	for _, p := range s.AllocationPools {
		out.AllocationPools = append(out.AllocationPools, AllocationPool{Start: p.Start, End: p.End})
	}
	return out
}

func ruleOf(r rules.SecGroupRule) Rule {
	return Rule{ID: r.ID, RulePlan: RulePlan{Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
		PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax, RemoteIPPrefix: r.RemoteIPPrefix}}
}

func portOf(p *ports.Port) Port {
	out := Port{ID: p.ID, Name: p.Name, ProjectID: p.ProjectID, NetworkID: p.NetworkID, DeviceID: p.DeviceID,
		SecurityGroupIDs: p.SecurityGroups}
	for _, ip := range p.FixedIPs {
		out.FixedIPs = append(out.FixedIPs, FixedIP{SubnetID: ip.SubnetID, IPAddress: ip.IPAddress})
	}
	return out
}

func fipOf(f *floatingips.FloatingIP) FloatingIP {
	return FloatingIP{ID: f.ID, Address: f.FloatingIP, NetworkID: f.FloatingNetworkID, PortID: f.PortID, FixedIP: f.FixedIP}
}
