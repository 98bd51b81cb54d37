package openstack

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/sitebus/sitebus/pkg/fault"
)

// Emptied counts what EmptyProject deleted, by kind (server, volume,
// floating IP, router, port, subnet, network, security group).
type Emptied map[string]int

// EmptyProject deletes everything in the client's project, projectID,
// whoever made it: Nova servers, Cinder volumes, then Neutron's floating
// IPs, routers with their interfaces, ports, subnets, networks and every
// security group, Neutron's "default" included. Deleting a Keystone
// project deletes none of these (Neutron keeps them, the default group
// too, owned by a project id nobody has), so a tenant sitebus made is
// emptied before its project goes. The project must be owner's (its
// description carries the mark; a project that is gone is done); the
// objects in it are not checked one by one, since Neutron makes some
// itself (the default group, a router's ports) and the tenant's users
// may have made others, and all of them go with the tenant. The client must be
// scoped to projectID as an admin (Neutron lets only an admin delete a
// default group); the security groups go last, as any later Neutron call
// in the project makes its default group again.
func (c *Client) EmptyProject(ctx context.Context, owner Owner, projectID string) (Emptied, error) {
	if projectID == "" || projectID != c.projectID {
		return nil, newError("empty", "project "+projectID, "the client is scoped to project "+c.projectID, fault.Rejected)
	}
	obj := "project " + projectID
	proj, err := projects.Get(ctx, c.identity, projectID).Extract()
	if gone(err) {
		return Emptied{}, nil
	}
	if err != nil {
		return nil, classify("read", obj, err)
	}
	obj = fmt.Sprintf("project %s (%s)", proj.Name, proj.ID)
	if !owner.Marks(proj.Description) {
		return nil, notManaged("empty", obj, "", owner)
	}
	out := Emptied{}
	del := func(kind, id, name string, fn func() error) error {
		if err := fn(); err != nil && !gone(err) {
			return classify("delete", fmt.Sprintf("%s %s (%s) in %s", kind, name, id, obj), err)
		}
		out[kind]++
		c.log.InfoContext(ctx, "deleted "+kind+" of an emptied project", "name", name, "id", id, "project", projectID, "owner", string(owner))
		return nil
	}

	svs, err := list(ctx, "list servers", obj, servers.List(c.compute, servers.ListOpts{TenantID: projectID}), servers.ExtractServers)
	if err != nil {
		return out, err
	}
	// Every delete is sent before the first wait: Nova tears the servers
	// down together, and the volumes they used are free once all are gone.
	var deleting []servers.Server
	for _, sv := range svs {
		if sv.TenantID != "" && sv.TenantID != projectID || sv.Status == "DELETED" {
			continue
		}
		if err := del("server", sv.ID, sv.Name, func() error { return servers.Delete(ctx, c.compute, sv.ID).ExtractErr() }); err != nil {
			return out, err
		}
		deleting = append(deleting, sv)
	}
	for _, sv := range deleting {
		if err := c.waitServerGone(ctx, sv.ID, "server "+sv.Name+" ("+sv.ID+")"); err != nil {
			return out, err
		}
	}
	vols, err := list(ctx, "list volumes", obj, volumes.List(c.volume, volumes.ListOpts{}), volumes.ExtractVolumes)
	if err != nil {
		return out, err
	}
	for _, v := range vols {
		if err := del("volume", v.ID, v.Name, func() error { return volumes.Delete(ctx, c.volume, v.ID, volumes.DeleteOpts{}).ExtractErr() }); err != nil {
			return out, err
		}
	}

	fips, err := list(ctx, "list floating IPs", obj, floatingips.List(c.network, floatingips.ListOpts{ProjectID: projectID}), floatingips.ExtractFloatingIPs)
	if err != nil {
		return out, err
	}
	for _, f := range fips {
		if err := del("floating IP", f.ID, f.FloatingIP, func() error { return floatingips.Delete(ctx, c.network, f.ID).ExtractErr() }); err != nil {
			return out, err
		}
	}
	rts, err := list(ctx, "list routers", obj, routers.List(c.network, routers.ListOpts{ProjectID: projectID}), routers.ExtractRouters)
	if err != nil {
		return out, err
	}
	for _, rt := range rts {
		if err := del("router", rt.ID, rt.Name, func() error {
			subs, err := c.routerSubnets(ctx, rt.ID)
			if err != nil {
				return err
			}
			for _, s := range subs {
				if _, err := routers.RemoveInterface(ctx, c.network, rt.ID, routers.RemoveInterfaceOpts{SubnetID: s}).Extract(); err != nil && !gone(err) {
					return err
				}
			}
			return routers.Delete(ctx, c.network, rt.ID).ExtractErr()
		}); err != nil {
			return out, err
		}
	}
	ps, err := list(ctx, "list ports", obj, ports.List(c.network, ports.ListOpts{ProjectID: projectID}), ports.ExtractPorts)
	if err != nil {
		return out, err
	}
	for _, p := range ps {
		// Neutron's own ports go with what they serve: a router's with the
		// router (another project's router may hold an interface here, and
		// Neutron refuses to delete it as a port), DHCP's with its network.
		if strings.HasPrefix(p.DeviceOwner, "network:router") || p.DeviceOwner == "network:dhcp" {
			continue
		}
		if err := del("port", p.ID, p.Name, func() error { return ports.Delete(ctx, c.network, p.ID).ExtractErr() }); err != nil {
			return out, err
		}
	}
	sns, err := list(ctx, "list subnets", obj, subnets.List(c.network, subnets.ListOpts{ProjectID: projectID}), subnets.ExtractSubnets)
	if err != nil {
		return out, err
	}
	for _, s := range sns {
		if err := del("subnet", s.ID, s.Name, func() error { return subnets.Delete(ctx, c.network, s.ID).ExtractErr() }); err != nil {
			return out, err
		}
	}
	nets, err := list(ctx, "list networks", obj, networks.List(c.network, networks.ListOpts{ProjectID: projectID}), networks.ExtractNetworks)
	if err != nil {
		return out, err
	}
	for _, n := range nets {
		if err := del("network", n.ID, n.Name, func() error { return networks.Delete(ctx, c.network, n.ID).ExtractErr() }); err != nil {
			return out, err
		}
	}
	sgs, err := list(ctx, "list security groups", obj, groups.List(c.network, groups.ListOpts{ProjectID: projectID}), groups.ExtractGroups)
	if err != nil {
		return out, err
	}
	// Neutron's default group last: a real Neutron may make it again on
	// a later call in the project.
	slices.SortStableFunc(sgs, func(a, b groups.SecGroup) int {
		return cmp.Compare(boolInt(a.Name == "default"), boolInt(b.Name == "default"))
	})
	for _, g := range sgs {
		if err := del("security group", g.ID, g.Name, func() error { return groups.Delete(ctx, c.network, g.ID).ExtractErr() }); err != nil {
			return out, err
		}
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
