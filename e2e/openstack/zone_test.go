package openstack_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestManagedZoneFromPlan builds one zone of a managed plan, checks the
// simulator holds exactly the plan's objects, re-runs every Ensure, reads
// the usage, and tears it all down in reverse.
func TestManagedZoneFromPlan(t *testing.T) {
	ctx, sim, p, b := oneZoneBuilt(t)
	owner, admin := openstack.Owner(p.ResourceUUID), b.admin
	tp := p.Tenants[0]
	nodes := nodesOf(p, tp.OfferingUUID)

	t.Run("each planned object is made by exactly one create", func(t *testing.T) {
		vms := append([]ranchercluster.NodePlan{tp.LoadBalancer}, nodes...)
		volumes, fips := 0, 0
		for _, vm := range vms {
			volumes += 1 + len(vm.DataVolumes)
			if vm.FloatingIP {
				fips++
			}
		}
		rules := 0
		for _, g := range tp.SecurityGroups {
			rules += len(g.Rules)
		}
		sum := sim.CallSummary()
		for path, want := range map[string]int{
			"POST /identity/v3/projects": 1, "POST /identity/v3/users": 1,
			"POST /network/v2.0/networks": 1, "POST /network/v2.0/subnets": 1, "POST /network/v2.0/routers": 1,
			"PUT /network/v2.0/routers/{id}/add_router_interface": 1,
			"POST /network/v2.0/security-groups":                  len(tp.SecurityGroups),
			"POST /network/v2.0/security-group-rules":             rules,
			"POST /network/v2.0/ports":                            len(vms),
			"POST /network/v2.0/floatingips":                      fips,
			"POST /volume/v3/{id}/volumes":                        volumes,
			"POST /compute/v2.1/servers":                          len(vms),
		} {
			if sum[path] != want {
				t.Errorf("%s: %d calls, want %d", path, sum[path], want)
			}
		}
		total := 0
		for _, n := range sum {
			total += n
		}
		t.Logf("one zone (%d VMs, %d volumes): %d calls: %v", len(vms), volumes, total, sum)
	})

	t.Run("the simulator holds the plan's objects", func(t *testing.T) {
		proj, ok := sim.ProjectNamed(tp.Name)
		if !ok || !owner.Marks(proj.Description) || !strings.HasPrefix(proj.Description, tp.Description) {
			t.Fatalf("project %q: %+v (found %v)", tp.Name, proj, ok)
		}
		inv := sim.Inventory(proj.ID)
		if len(inv.Users) != 1 || inv.Users[0].Name != tp.UserName {
			t.Errorf("users %+v, want %s", inv.Users, tp.UserName)
		}
		if len(inv.Networks) != 1 || inv.Networks[0].Name != tp.Network.Name {
			t.Errorf("networks %+v", inv.Networks)
		}
		wantPools := []openstacksim.Pool{{Start: "192.168.42.11", End: "192.168.42.200"}}
		if len(inv.Subnets) != 1 || !slices.Equal(inv.Subnets[0].Pools, wantPools) || inv.Subnets[0].CIDR != "192.168.42.0/24" ||
			inv.Subnets[0].GatewayIP != "192.168.42.1" || !slices.Equal(inv.Subnets[0].DNSNameservers, []string{"1.1.1.1"}) {
			t.Errorf("subnets %+v", inv.Subnets)
		}
		if len(inv.Routers) != 1 || inv.Routers[0].GatewayNetworkID != sim.ExternalNetworkID() || len(inv.Routers[0].Interfaces) != 1 {
			t.Errorf("routers %+v", inv.Routers)
		}
		rules := map[string][]int{}
		for _, g := range inv.SecurityGroups {
			for _, r := range g.Rules {
				if r.Direction == "ingress" && r.Protocol == "tcp" {
					rules[g.Name] = append(rules[g.Name], r.PortRangeMin)
				}
			}
		}
		slices.Sort(rules["k8s_admin"])
		slices.Sort(rules["k8s_public"])
		if !slices.Equal(rules["k8s_admin"], []int{22, 6443}) || !slices.Equal(rules["k8s_public"], []int{80, 443}) {
			t.Errorf("ingress tcp rules %v, want k8s_admin 22, 6443 and k8s_public 80, 443", rules)
		}
		lb := sim.ServersNamed(tp.LoadBalancer.Name)
		if len(lb) != 1 || !slices.Equal(lb[0].FixedIPs, []string{"192.168.42.10"}) || lb[0].Status != "ACTIVE" {
			t.Fatalf("load balancer %+v", lb)
		}
		var lbGroups []string
		for _, id := range portOf(inv, lb[0].Ports[0]).SecurityGroups {
			lbGroups = append(lbGroups, groupName(inv, id))
		}
		slices.Sort(lbGroups)
		if !slices.Equal(lbGroups, []string{"default", "k8s_admin", "k8s_public"}) {
			t.Errorf("load balancer port groups %v", lbGroups)
		}
		if len(lb[0].FloatingIPs) != 1 {
			t.Errorf("load balancer floating IPs %v", lb[0].FloatingIPs)
		}
		if len(inv.Servers) != 1+len(nodes) {
			t.Errorf("%d servers, want the load balancer and %d nodes", len(inv.Servers), len(nodes))
		}
		for _, n := range nodes {
			got := sim.ServersNamed(n.Name)
			if len(got) != 1 || got[0].Status != "ACTIVE" || got[0].AvailabilityZone != "az-a" {
				t.Fatalf("node %s: %+v", n.Name, got)
			}
			if len(got[0].Volumes) != 1+len(n.DataVolumes) || got[0].Metadata[openstack.MetadataOwner] != resourceUUID ||
				got[0].Metadata[openstack.MetadataRole] != n.Role {
				t.Errorf("node %s volumes %v metadata %v", n.Name, got[0].Volumes, got[0].Metadata)
			}
			ip := got[0].FixedIPs[0]
			if last := ip[strings.LastIndex(ip, ".")+1:]; len(got[0].FixedIPs) != 1 || len(last) < 2 || last == "10" {
				t.Errorf("node %s addresses %v, want one from the pool .11-.200", n.Name, got[0].FixedIPs)
			}
			if string(got[0].UserData) != "#cloud-config\nhostname: "+n.Name+"\n" {
				t.Errorf("node %s user_data %q", n.Name, got[0].UserData)
			}
		}
	})

	t.Run("every object made carries the owner's mark", func(t *testing.T) {
		inv := sim.Inventory(b.project.ID)
		var unmarked []string
		mark := func(kind, name, desc string) {
			if !owner.Marks(desc) {
				unmarked = append(unmarked, kind+" "+name)
			}
		}
		for _, x := range inv.Users {
			mark("user", x.Name, x.Description)
		}
		for _, x := range inv.Networks {
			mark("network", x.Name, x.Description)
		}
		for _, x := range inv.Subnets {
			mark("subnet", x.Name, x.Description)
		}
		for _, x := range inv.Routers {
			mark("router", x.Name, x.Description)
		}
		for _, x := range inv.Ports {
			if x.DeviceOwner != "network:router_interface" { // Neutron's own
				mark("port", x.Name, x.Description)
			}
		}
		for _, x := range inv.SecurityGroups {
			if !x.Default {
				mark("security group", x.Name, x.Description)
			}
		}
		for _, x := range inv.FloatingIPs {
			mark("floating IP", x.Address, x.Description)
		}
		for _, x := range inv.Volumes {
			mark("volume", x.Name, x.Description)
			if x.Metadata[openstack.MetadataOwner] != resourceUUID {
				unmarked = append(unmarked, "volume metadata "+x.Name)
			}
		}
		for _, x := range inv.Servers {
			if x.Metadata[openstack.MetadataOwner] != resourceUUID {
				unmarked = append(unmarked, "server "+x.Name)
			}
		}
		if len(unmarked) != 0 {
			t.Errorf("without the mark: %v", unmarked)
		}
	})

	t.Run("every Ensure run again creates nothing", func(t *testing.T) {
		sim.ResetCalls()
		again, err := buildZone(ctx, admin, p, 0)
		if err != nil {
			t.Fatalf("re-run: %v", err)
		}
		if w := writes(sim); len(w) != 0 {
			t.Errorf("the re-run wrote: %v", w)
		}
		if again.created != 0 {
			t.Errorf("%d Ensure calls said created", again.created)
		}
		if len(again.records) != len(b.records) {
			t.Errorf("re-run returned %d objects, the first run %d", len(again.records), len(b.records))
		}
		for i := range b.records {
			if again.records[i] != b.records[i] {
				t.Errorf("object %d: re-run %+v, first run %+v", i, again.records[i], b.records[i])
			}
		}
	})

	t.Run("usage counts the nodes, not the load balancer", func(t *testing.T) {
		u, err := b.scoped.Usage(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		want := openstack.Usage{Nodes: len(nodes)}
		for _, n := range nodes {
			want.VCPUs += n.Flavor.VCPUs
			want.RAMMB += n.Flavor.RAMMB
			for _, v := range append([]ranchercluster.VolumePlan{n.SystemVolume}, n.DataVolumes...) {
				want.StorageGB += v.SizeGB
			}
		}
		if u != want {
			t.Errorf("usage %+v, want %+v", u, want)
		}
	})

	t.Run("deleting in reverse leaves nothing, and deleting again is done", func(t *testing.T) {
		// The tenant's objects, then the project and user: once the project
		// is gone its token is too, as in Keystone.
		for _, scoped := range []bool{true, false} {
			if err := teardownOf(ctx, b, owner, scoped); err != nil {
				t.Fatal(err)
			}
			sim.ResetCalls()
			if err := teardownOf(ctx, b, owner, scoped); err != nil {
				t.Fatalf("deleting again: %v", err)
			}
			for _, c := range sim.Calls() {
				if c.Method == "DELETE" {
					t.Errorf("deleting again sent %s %s", c.Method, c.Path)
				}
			}
		}
		assertNothingLeft(t, sim)
	})
}

// TestServerErrorIsTerminalWithTheFault: a node the simulator fails makes
// WaitServerActive a terminal error carrying Nova's fault, and what was
// built up to it is removed by the teardown.
func TestServerErrorIsTerminalWithTheFault(t *testing.T) {
	sim, s, p := planOnSim(t, 1)
	second := nodesOf(p, p.Tenants[0].OfferingUUID)[1].Name
	sim.FailServers(openstacksim.ServerErrorRule{Name: second, Message: "No valid host was found. disk full on all hosts"})
	ctx := ctxT(t)
	b, err := buildZone(ctx, connect(t, s, s.OpenStackOfferings[0]), p, 0)
	switch {
	case err == nil:
		t.Fatal("the zone built, want the failed server's error")
	case !errors.Is(err, openstack.ErrServerFailed) || !fault.IsTerminal(err):
		t.Fatalf("err %v: want terminal ErrServerFailed", err)
	case !strings.Contains(err.Error(), "disk full on all hosts") || !strings.Contains(err.Error(), second):
		t.Fatalf("err %q does not name the server and its fault", err)
	}
	if err := teardown(ctx, b, openstack.Owner(p.ResourceUUID)); err != nil {
		t.Fatalf("compensation: %v", err)
	}
	assertNothingLeft(t, sim)
}

// TestThreeZones builds every zone of a three-zone plan: each its own
// project and subnet, all torn down.
func TestThreeZones(t *testing.T) {
	sim, s, p := planOnSim(t, 3)
	ctx := ctxT(t)
	var zones []*built
	for i, az := range s.OpenStackOfferings {
		b, err := buildZone(ctx, connect(t, s, az), p, i)
		if err != nil {
			t.Fatalf("zone %s: %v", az.Slug, err)
		}
		zones = append(zones, b)
	}
	for i, b := range zones {
		if want := p.Tenants[i].Network.Subnet.CIDR; b.subnet.CIDR != want {
			t.Errorf("zone %d subnet %s, want %s", i, b.subnet.CIDR, want)
		}
		if lb := b.ports[p.Tenants[i].LoadBalancer.Name]; lb.FixedIPs[0].IPAddress != p.Tenants[i].LoadBalancer.FixedIP {
			t.Errorf("zone %d load balancer %v", i, lb.FixedIPs)
		}
	}
	if got := len(sim.Inventory("").Projects); got != 3 {
		t.Errorf("%d projects, want 3", got)
	}
	for i := len(zones) - 1; i >= 0; i-- {
		if err := teardown(ctx, zones[i], openstack.Owner(p.ResourceUUID)); err != nil {
			t.Fatal(err)
		}
	}
	assertNothingLeft(t, sim)
}

func portOf(inv openstacksim.Inventory, id string) openstacksim.Port {
	for _, p := range inv.Ports {
		if p.ID == id {
			return p
		}
	}
	return openstacksim.Port{}
}

func groupName(inv openstacksim.Inventory, id string) string {
	for _, g := range inv.SecurityGroups {
		if g.ID == id {
			return g.Name
		}
	}
	return id
}
