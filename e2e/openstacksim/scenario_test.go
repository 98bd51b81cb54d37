package openstacksim_test

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

// TestTenantBuildAndTeardownLeavesNothing makes what the cluster-provisioner
// makes per availability zone (reference A.2, E.1), checks the simulator
// holds exactly that, then deletes it in reverse and finds the inventory
// empty.
func TestTenantBuildAndTeardownLeavesNothing(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, VolumePolls: -1,
		AvailabilityZones: []string{"az-a"}})
	ctx := ctxT(t)
	ac := clientsOf(t, admin(t, sim))
	proj, c := tenant(t, sim, "os-tenant-vm-offering")

	n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "k8s-int-net"}).Extract()).of(t)
	sub := must(subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: n.ID, Name: "k8s-sub-net",
		CIDR: "192.168.42.0/24", IPVersion: gophercloud.IPv4,
		AllocationPools: []subnets.AllocationPool{{Start: "192.168.42.10", End: "192.168.42.200"}}}).Extract()).of(t)
	must(subnets.Update(ctx, c.network, sub.ID, subnets.UpdateOpts{
		AllocationPools: []subnets.AllocationPool{{Start: "192.168.42.11", End: "192.168.42.200"}}}).Extract()).of(t)
	rt := must(routers.Create(ctx, c.network, routers.CreateOpts{Name: "k8s-router",
		GatewayInfo: &routers.GatewayInfo{NetworkID: sim.ExternalNetworkID()}}).Extract()).of(t)
	must(routers.AddInterface(ctx, c.network, rt.ID, routers.AddInterfaceOpts{SubnetID: sub.ID}).Extract()).of(t)
	var sgIDs []string
	for name, ports := range map[string][]int{"k8s_admin": {22, 6443}, "k8s_public": {80, 443}} {
		g := must(groups.Create(ctx, c.network, groups.CreateOpts{Name: name}).Extract()).of(t)
		for _, p := range ports {
			must(rules.Create(ctx, c.network, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4,
				Protocol: rules.ProtocolTCP, PortRangeMin: p, PortRangeMax: p, RemoteIPPrefix: "0.0.0.0/0", SecGroupID: g.ID}).Extract()).of(t)
		}
		sgIDs = append(sgIDs, g.ID)
	}
	lbPort := must(ports.Create(ctx, c.network, ports.CreateOpts{NetworkID: n.ID, Name: "k8s-lb-port",
		FixedIPs: []ports.IP{{SubnetID: sub.ID, IPAddress: "192.168.42.10"}}, SecurityGroups: &sgIDs}).Extract()).of(t)
	img := imageID(t, c, "ubuntu-22.04")
	lb := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: "k8s-lb-c1", FlavorRef: "1", ImageRef: img,
		Networks: []servers.Network{{Port: lbPort.ID}}, UserData: []byte("#cloud-config\n")}, nil).Extract()).of(t)
	fip := must(floatingips.Create(ctx, c.network, floatingips.CreateOpts{FloatingNetworkID: sim.ExternalNetworkID(),
		PortID: lbPort.ID}).Extract()).of(t)
	data := must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: "k8s-server-1-data", Size: 10}, nil).Extract()).of(t)
	node := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: "k8s-server-1", FlavorRef: "2",
		Networks: []servers.Network{{UUID: n.ID}}, SecurityGroups: []string{"k8s_admin", "default"},
		BlockDevice: []servers.BlockDevice{
			{BootIndex: 0, SourceType: servers.SourceImage, DestinationType: servers.DestinationVolume, UUID: img,
				VolumeSize: 20, DeleteOnTermination: true},
			{BootIndex: -1, SourceType: servers.SourceVolume, DestinationType: servers.DestinationVolume, UUID: data.ID,
				DeleteOnTermination: true},
		}}, nil).Extract()).of(t)
	for _, id := range []string{lb.ID, node.ID} {
		if err := servers.WaitForStatus(ctx, c.compute, id, "ACTIVE"); err != nil {
			t.Fatal(err)
		}
	}

	inv := sim.Inventory(proj.ID)
	t.Run("the simulator holds exactly what was made", func(t *testing.T) {
		if len(inv.Subnets) != 1 || !slices.Equal(inv.Subnets[0].Pools, []openstacksim.Pool{{Start: "192.168.42.11", End: "192.168.42.200"}}) {
			t.Fatalf("subnets %+v", inv.Subnets)
		}
		var lbIPs, nodeIPs []string
		for _, s := range inv.Servers {
			switch s.Name {
			case "k8s-lb-c1":
				lbIPs = s.FixedIPs
				if len(s.FloatingIPs) != 1 || s.FloatingIPs[0] != fip.FloatingIP {
					t.Fatalf("lb floating IPs %v", s.FloatingIPs)
				}
			case "k8s-server-1":
				nodeIPs = s.FixedIPs
				if len(s.Volumes) != 2 {
					t.Fatalf("node volumes %v", s.Volumes)
				}
			}
		}
		if !slices.Equal(lbIPs, []string{"192.168.42.10"}) || !slices.Equal(nodeIPs, []string{"192.168.42.11"}) {
			t.Fatalf("lb %v, node %v", lbIPs, nodeIPs)
		}
		var named []string
		for _, g := range inv.SecurityGroups {
			named = append(named, g.Name)
			if g.Name == "k8s_admin" && len(g.Rules) != 4 {
				t.Fatalf("k8s_admin rules %+v", g.Rules)
			}
		}
		slices.Sort(named)
		if !slices.Equal(named, []string{"default", "k8s_admin", "k8s_public"}) {
			t.Fatalf("groups %v", named)
		}
		// LB port, node port, router interface.
		if len(inv.Ports) != 3 || len(inv.Volumes) != 2 || len(inv.Routers) != 1 || len(inv.FloatingIPs) != 1 {
			t.Fatalf("ports %d volumes %d routers %d fips %d", len(inv.Ports), len(inv.Volumes), len(inv.Routers), len(inv.FloatingIPs))
		}
	})

	t.Run("teardown in reverse leaves nothing", func(t *testing.T) {
		steps := []func() error{
			func() error { return servers.Delete(ctx, c.compute, node.ID).ExtractErr() },
			func() error { return floatingips.Delete(ctx, c.network, fip.ID).ExtractErr() },
			func() error { return servers.Delete(ctx, c.compute, lb.ID).ExtractErr() },
			func() error { waitGone(t, c, node.ID); waitGone(t, c, lb.ID); return nil },
			func() error { return ports.Delete(ctx, c.network, lbPort.ID).ExtractErr() },
			func() error { return groups.Delete(ctx, c.network, sgIDs[0]).ExtractErr() },
			func() error { return groups.Delete(ctx, c.network, sgIDs[1]).ExtractErr() },
			func() error {
				_, err := routers.RemoveInterface(ctx, c.network, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sub.ID}).Extract()
				return err
			},
			func() error { return routers.Delete(ctx, c.network, rt.ID).ExtractErr() },
			func() error { return networks.Delete(ctx, c.network, n.ID).ExtractErr() },
			func() error { return users.Delete(ctx, ac.identity, sim.Inventory(proj.ID).Users[0].ID).ExtractErr() },
			func() error { return projects.Delete(ctx, ac.identity, proj.ID).ExtractErr() },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if inv := sim.Inventory(""); !inv.Empty() {
			t.Fatalf("left behind: %+v", inv)
		}
	})
}
