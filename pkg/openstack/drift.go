package openstack

import (
	"context"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// OwnedSecurityGroups lists owner's security groups in the client's
// project with their rules, by id, in one call: the cluster pass compares
// them with the plan's to find rules deleted by hand.
func (c *Client) OwnedSecurityGroups(ctx context.Context, owner Owner) (map[string]SecurityGroup, error) {
	all, err := list(ctx, "list security groups", "", groups.List(c.network, groups.ListOpts{ProjectID: c.projectID}), groups.ExtractGroups)
	if err != nil {
		return nil, err
	}
	out := map[string]SecurityGroup{}
	for _, g := range all {
		if !owner.Marks(g.Description) || g.Name == "default" {
			continue
		}
		sg := SecurityGroup{ID: g.ID, Name: g.Name, ProjectID: g.ProjectID}
		for _, r := range g.Rules {
			sg.Rules = append(sg.Rules, ruleOf(r))
		}
		out[g.ID] = sg
	}
	return out, nil
}

// MissingRules are the rules of want that g lacks, compared as Neutron
// compares rules when it refuses a duplicate. Rules g has beyond want
// (someone's own) are not reported: sitebus never removes them.
func (g SecurityGroup) MissingRules(want []RulePlan) []RulePlan {
	var out []RulePlan
	for _, w := range want {
		if !slices.ContainsFunc(g.Rules, func(r Rule) bool { return sameRule(r.RulePlan, w) }) {
			out = append(out, w)
		}
	}
	return out
}

// OwnedFloatingIPs lists owner's floating IPs in the client's project, by
// id, in one call: the cluster pass finds those released by hand.
func (c *Client) OwnedFloatingIPs(ctx context.Context, owner Owner) (map[string]FloatingIP, error) {
	all, err := list(ctx, "list floating IPs", "", floatingips.List(c.network, floatingips.ListOpts{ProjectID: c.projectID}),
		floatingips.ExtractFloatingIPs)
	if err != nil {
		return nil, err
	}
	out := map[string]FloatingIP{}
	for i := range all {
		if owner.Marks(all[i].Description) {
			out[all[i].ID] = fipOf(&all[i])
		}
	}
	return out, nil
}

// routerInterface reports whether a port's device_owner is a router's
// interface: a plain router's, a distributed (DVR) one's or an HA one's.
func routerInterface(deviceOwner string) bool {
	return strings.HasPrefix(deviceOwner, "network:router_interface") ||
		deviceOwner == "network:ha_router_replicated_interface"
}

// SubnetReaches reports whether a router with an interface on subnetID
// has its gateway on externalNetworkID: Neutron associates a floating IP
// from that network with a port on the subnet only then
// (ExternalGatewayForFloatingIPNotFound otherwise). One list of the
// subnet's ports, then a read of each router found.
func (c *Client) SubnetReaches(ctx context.Context, subnetID, externalNetworkID string) (bool, error) {
	obj := "subnet " + subnetID
	ps, err := list(ctx, "list the router interfaces of", obj,
		ports.List(c.network, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{SubnetID: subnetID}}}), ports.ExtractPorts)
	if err != nil {
		return false, err
	}
	var seen []string
	for _, p := range ps {
		if !routerInterface(p.DeviceOwner) || p.DeviceID == "" || slices.Contains(seen, p.DeviceID) {
			continue
		}
		seen = append(seen, p.DeviceID)
		rt, err := routers.Get(ctx, c.network, p.DeviceID).Extract()
		if gone(err) {
			continue
		}
		if err != nil {
			return false, classify("read the router of", obj, err)
		}
		if rt.GatewayInfo.NetworkID == externalNetworkID {
			return true, nil
		}
	}
	return false, nil
}
