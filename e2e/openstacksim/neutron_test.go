package openstacksim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// tenantNet is a tenant network as Waldur makes it: 192.168.42.0/24 with
// the pool .10–.200.
func tenantNet(t *testing.T, c clients) (*networks.Network, *subnets.Subnet) {
	t.Helper()
	ctx := ctxT(t)
	n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "int-net"}).Extract()).of(t)
	sub := must(subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: n.ID, Name: "sub-net",
		CIDR: "192.168.42.0/24", IPVersion: gophercloud.IPv4, DNSNameservers: []string{"1.1.1.1"},
		AllocationPools: []subnets.AllocationPool{{Start: "192.168.42.10", End: "192.168.42.200"}}}).Extract()).of(t)
	return n, sub
}

func portAt(t *testing.T, c clients, n *networks.Network, sub *subnets.Subnet, ip string) (*ports.Port, error) {
	t.Helper()
	var fixed []ports.IP
	if ip != "" {
		fixed = []ports.IP{{SubnetID: sub.ID, IPAddress: ip}}
	} else {
		fixed = []ports.IP{{SubnetID: sub.ID}}
	}
	return ports.Create(ctxT(t), c.network, ports.CreateOpts{NetworkID: n.ID, FixedIPs: fixed}).Extract()
}

func neutronType(t *testing.T, err error) string {
	t.Helper()
	var e gophercloud.ErrUnexpectedResponseCode
	if !asErr(err, &e) {
		t.Fatalf("not an HTTP error: %v", err)
	}
	for _, typ := range []string{"IpAddressAlreadyAllocated", "InvalidIpForSubnet", "SubnetInUse", "NetworkInUse",
		"SecurityGroupInUse", "RouterInUse", "OverQuota", "IpAddressGenerationFailure", "L3PortInUse",
		"SecurityGroupRuleExists", "ExternalGatewayForFloatingIPNotFound", "GatewayConflictWithAllocationPools",
		"OutOfBoundsAllocationPool", "PolicyNotAuthorized"} {
		if strings.Contains(string(e.Body), `"type":"`+typ+`"`) {
			return typ
		}
	}
	return string(e.Body)
}

func TestIPAM(t *testing.T) {
	_, _, c := simWithTenant(t, "ipam")
	n, sub := tenantNet(t, c)
	ctx := ctxT(t)

	lb, err := portAt(t, c, n, sub, "192.168.42.10")
	if err != nil {
		t.Fatal(err)
	}
	if got := lb.FixedIPs[0].IPAddress; got != "192.168.42.10" {
		t.Fatalf("lb port at %s", got)
	}
	for _, tc := range []struct {
		name, ip string
		status   int
		typ      string
	}{
		{"an address in use is 409", "192.168.42.10", http.StatusConflict, "IpAddressAlreadyAllocated"},
		{"an address outside the CIDR is 400", "10.0.0.5", http.StatusBadRequest, "InvalidIpForSubnet"},
		{"an address in the CIDR outside the pools is allowed", "192.168.42.250", 0, ""},
		{"no address asked takes the next free one in the pool", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := portAt(t, c, n, sub, tc.ip)
			if tc.status != 0 {
				wantCode(t, err, tc.status)
				if got := neutronType(t, err); got != tc.typ {
					t.Fatalf("type %s, want %s", got, tc.typ)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.ip
			if want == "" {
				want = "192.168.42.11"
			}
			if got := p.FixedIPs[0].IPAddress; got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}

	t.Run("narrowing the pool past an address allocated from it is refused", func(t *testing.T) {
		_, err := subnets.Update(ctx, c.network, sub.ID, subnets.UpdateOpts{
			AllocationPools: []subnets.AllocationPool{{Start: "192.168.42.12", End: "192.168.42.200"}}}).Extract()
		wantCode(t, err, http.StatusConflict)
		if got := neutronType(t, err); got != "SubnetInUse" {
			t.Fatalf("type %s", got)
		}
	})
	t.Run("narrowing the pool past free addresses is allowed", func(t *testing.T) {
		got := must(subnets.Update(ctx, c.network, sub.ID, subnets.UpdateOpts{
			AllocationPools: []subnets.AllocationPool{{Start: "192.168.42.10", End: "192.168.42.150"}}}).Extract()).of(t)
		if len(got.AllocationPools) != 1 || got.AllocationPools[0].End != "192.168.42.150" {
			t.Fatalf("pools %+v", got.AllocationPools)
		}
	})
	t.Run("a pool holding the gateway is refused", func(t *testing.T) {
		_, err := subnets.Update(ctx, c.network, sub.ID, subnets.UpdateOpts{
			AllocationPools: []subnets.AllocationPool{{Start: "192.168.42.1", End: "192.168.42.150"}}}).Extract()
		wantCode(t, err, http.StatusConflict)
	})
	t.Run("an exhausted pool is 409", func(t *testing.T) {
		n2 := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "tiny"}).Extract()).of(t)
		s2 := must(subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: n2.ID, CIDR: "10.9.0.0/24",
			IPVersion: gophercloud.IPv4, AllocationPools: []subnets.AllocationPool{{Start: "10.9.0.5", End: "10.9.0.6"}}}).Extract()).of(t)
		for range 2 {
			if _, err := portAt(t, c, n2, s2, ""); err != nil {
				t.Fatal(err)
			}
		}
		_, err := portAt(t, c, n2, s2, "")
		wantCode(t, err, http.StatusConflict)
		if got := neutronType(t, err); got != "IpAddressGenerationFailure" {
			t.Fatalf("type %s", got)
		}
	})
	t.Run("ports are found by fixed IP", func(t *testing.T) {
		page := must(ports.List(c.network, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: "192.168.42.10", SubnetID: sub.ID}}}).AllPages(ctx)).of(t)
		got := must(ports.ExtractPorts(page)).of(t)
		if len(got) != 1 || got[0].ID != lb.ID {
			t.Fatalf("ports %+v", got)
		}
	})
	t.Run("a deleted port frees its address", func(t *testing.T) {
		if err := ports.Delete(ctx, c.network, lb.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if _, err := portAt(t, c, n, sub, "192.168.42.10"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDeleteInUseIsRefused(t *testing.T) {
	sim, _, c := simWithTenant(t, "inuse")
	ctx := ctxT(t)
	n, sub := tenantNet(t, c)
	sg := must(groups.Create(ctx, c.network, groups.CreateOpts{Name: "k8s_admin"}).Extract()).of(t)
	p := must(ports.Create(ctx, c.network, ports.CreateOpts{NetworkID: n.ID, SecurityGroups: &[]string{sg.ID}}).Extract()).of(t)
	rt := must(routers.Create(ctx, c.network, routers.CreateOpts{Name: "router",
		GatewayInfo: &routers.GatewayInfo{NetworkID: sim.ExternalNetworkID()}}).Extract()).of(t)
	iface := must(routers.AddInterface(ctx, c.network, rt.ID, routers.AddInterfaceOpts{SubnetID: sub.ID}).Extract()).of(t)

	for _, tc := range []struct {
		name string
		call func() error
		typ  string
	}{
		{"network with ports", func() error { return networks.Delete(ctx, c.network, n.ID).ExtractErr() }, "NetworkInUse"},
		{"subnet with allocations", func() error { return subnets.Delete(ctx, c.network, sub.ID).ExtractErr() }, "SubnetInUse"},
		{"security group on a port", func() error { return groups.Delete(ctx, c.network, sg.ID).ExtractErr() }, "SecurityGroupInUse"},
		{"router with an interface", func() error { return routers.Delete(ctx, c.network, rt.ID).ExtractErr() }, "RouterInUse"},
		{"router interface port", func() error { return ports.Delete(ctx, c.network, iface.PortID).ExtractErr() }, "L3PortInUse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			wantCode(t, err, http.StatusConflict)
			if got := neutronType(t, err); got != tc.typ {
				t.Fatalf("type %s, want %s", got, tc.typ)
			}
		})
	}

	t.Run("in reverse order everything goes", func(t *testing.T) {
		for _, step := range []func() error{
			func() error { return ports.Delete(ctx, c.network, p.ID).ExtractErr() },
			func() error {
				_, err := routers.RemoveInterface(ctx, c.network, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sub.ID}).Extract()
				return err
			},
			func() error { return routers.Delete(ctx, c.network, rt.ID).ExtractErr() },
			func() error { return groups.Delete(ctx, c.network, sg.ID).ExtractErr() },
			func() error { return networks.Delete(ctx, c.network, n.ID).ExtractErr() },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		inv := sim.Inventory("")
		if len(inv.Networks)+len(inv.Subnets)+len(inv.Ports)+len(inv.Routers) != 0 {
			t.Fatalf("left behind: %+v", inv)
		}
	})
}

func TestSecurityGroups(t *testing.T) {
	_, p, c := simWithTenant(t, "sg")
	ctx := ctxT(t)

	page := must(groups.List(c.network, groups.ListOpts{Name: "default"}).AllPages(ctx)).of(t)
	defs := must(groups.ExtractGroups(page)).of(t)
	if len(defs) != 1 || defs[0].TenantID != p.ID || len(defs[0].Rules) != 4 {
		t.Fatalf("default group: %+v", defs)
	}
	sg := must(groups.Create(ctx, c.network, groups.CreateOpts{Name: "k8s_admin", Description: "admin"}).Extract()).of(t)
	if len(sg.Rules) != 2 || sg.Rules[0].Direction != "egress" || sg.Rules[1].Direction != "egress" {
		t.Fatalf("new group rules: %+v", sg.Rules)
	}
	ssh := rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, Protocol: rules.ProtocolTCP,
		PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "0.0.0.0/0", SecGroupID: sg.ID}
	rl := must(rules.Create(ctx, c.network, ssh).Extract()).of(t)
	if rl.PortRangeMin != 22 || rl.Protocol != "tcp" || rl.RemoteIPPrefix != "0.0.0.0/0" {
		t.Fatalf("rule %+v", rl)
	}
	listed := must(rules.ExtractRules(must(rules.List(c.network, rules.ListOpts{SecGroupID: sg.ID}).AllPages(ctx)).of(t))).of(t)
	if len(listed) != 3 || listed[2].ID != rl.ID || listed[2].CreatedAt.IsZero() {
		t.Fatalf("rules of the group %+v", listed)
	}
	if got := must(rules.Get(ctx, c.network, rl.ID).Extract()).of(t); got.PortRangeMax != 22 || got.SecGroupID != sg.ID {
		t.Fatalf("rule %+v", got)
	}
	_, err := rules.Create(ctx, c.network, ssh).Extract()
	wantCode(t, err, http.StatusConflict)
	if got := neutronType(t, err); got != "SecurityGroupRuleExists" {
		t.Fatalf("type %s", got)
	}
	_, err = groups.Create(ctx, c.network, groups.CreateOpts{Name: "default"}).Extract()
	wantCode(t, err, http.StatusConflict)
	err = groups.Delete(ctx, c.network, defs[0].ID).ExtractErr()
	wantCode(t, err, http.StatusConflict)

	if err := rules.Delete(ctx, c.network, rl.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	got := must(groups.Get(ctx, c.network, sg.ID).Extract()).of(t)
	if len(got.Rules) != 2 {
		t.Fatalf("rules after delete: %+v", got.Rules)
	}
}

func TestFloatingIPNeedsARouterToTheExternalNetwork(t *testing.T) {
	sim, _, c := simWithTenant(t, "fip")
	ctx := ctxT(t)
	n, sub := tenantNet(t, c)
	p := must(portAt(t, c, n, sub, "192.168.42.10")).of(t)
	ext := sim.ExternalNetworkID()

	_, err := floatingips.Create(ctx, c.network, floatingips.CreateOpts{FloatingNetworkID: ext, PortID: p.ID}).Extract()
	wantCode(t, err, http.StatusNotFound)
	if got := neutronType(t, err); got != "ExternalGatewayForFloatingIPNotFound" {
		t.Fatalf("type %s", got)
	}
	rt := must(routers.Create(ctx, c.network, routers.CreateOpts{Name: "r", GatewayInfo: &routers.GatewayInfo{NetworkID: ext}}).Extract()).of(t)
	if rt.GatewayInfo.NetworkID != ext || len(rt.GatewayInfo.ExternalFixedIPs) != 1 {
		t.Fatalf("gateway %+v", rt.GatewayInfo)
	}
	must(routers.AddInterface(ctx, c.network, rt.ID, routers.AddInterfaceOpts{SubnetID: sub.ID}).Extract()).of(t)
	fip := must(floatingips.Create(ctx, c.network, floatingips.CreateOpts{FloatingNetworkID: ext, PortID: p.ID}).Extract()).of(t)
	if fip.FixedIP != "192.168.42.10" || fip.RouterID != rt.ID || !strings.HasPrefix(fip.FloatingIP, "172.24.4.") {
		t.Fatalf("floating IP %+v", fip)
	}
	_, err = routers.RemoveInterface(ctx, c.network, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sub.ID}).Extract()
	wantCode(t, err, http.StatusConflict)
	if err := floatingips.Delete(ctx, c.network, fip.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	must(routers.RemoveInterface(ctx, c.network, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sub.ID}).Extract()).of(t)
}

func TestNeutronQuota(t *testing.T) {
	sim, p, c := simWithTenant(t, "quota")
	ctx := ctxT(t)
	n, sub := tenantNet(t, c)
	sim.SetQuota(p.ID, "port", 1)
	if _, err := portAt(t, c, n, sub, ""); err != nil {
		t.Fatal(err)
	}
	_, err := portAt(t, c, n, sub, "")
	wantCode(t, err, http.StatusConflict)
	if got := neutronType(t, err); got != "OverQuota" {
		t.Fatalf("type %s", got)
	}
	sim.SetQuota(p.ID, "network", 1)
	_, err = networks.Create(ctx, c.network, networks.CreateOpts{Name: "second"}).Extract()
	wantCode(t, err, http.StatusConflict)
}

func TestConcurrentPortsGetDistinctAddresses(t *testing.T) {
	sim, _, c := simWithTenant(t, "conc")
	n, sub := tenantNet(t, c)
	const workers = 16
	ips := make(chan string, workers)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			p, err := portAt(t, c, n, sub, "")
			if err != nil {
				errs <- err
				return
			}
			ips <- p.FixedIPs[0].IPAddress
		}()
	}
	seen := map[string]bool{}
	for range workers {
		select {
		case err := <-errs:
			t.Fatal(err)
		case ip := <-ips:
			if seen[ip] {
				t.Fatalf("%s handed out twice", ip)
			}
			seen[ip] = true
		}
	}
	if len(sim.Inventory("").Subnets[0].Allocated) != workers {
		t.Fatalf("allocations %+v", sim.Inventory("").Subnets[0].Allocated)
	}
}

// haRouter is a router create with Neutron's ha attribute, which
// gophercloud's CreateOpts has no field for.
type haRouter struct{ name string }

func (o haRouter) ToRouterCreateMap() (map[string]any, error) {
	return map[string]any{"router": map[string]any{"name": o.name, "ha": true}}, nil
}

func TestRouterHAIsForAdmins(t *testing.T) {
	sim, _, c := simWithTenant(t, "ha")
	ctx := ctxT(t)
	_, err := routers.Create(ctx, c.network, haRouter{"member"}).Extract()
	wantCode(t, err, http.StatusForbidden)
	if got := neutronType(t, err); got != "PolicyNotAuthorized" {
		t.Fatalf("type %s", got)
	}
	ac := clientsOf(t, admin(t, sim))
	rt := must(routers.Create(ctx, ac.network, haRouter{"admin"}).Extract()).of(t)
	var body struct {
		Router struct {
			HA bool `json:"ha"`
		} `json:"router"`
	}
	must(0, routers.Get(ctx, ac.network, rt.ID).ExtractInto(&body)).of(t)
	if !body.Router.HA {
		t.Fatal("an admin's HA router reads ha: false")
	}
}
