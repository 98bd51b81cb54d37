package openstack_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestEnsureCompletesAHalfMadeObject: an object an earlier attempt left
// half-made (a crash between its create and its rules, pool or interface)
// is completed, not made again.
func TestEnsureCompletesAHalfMadeObject(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	c, p := tenantClient(t, sim, "os-tenant-converge")
	ctx := ctxT(t)
	tcp := func(port int) ranchercluster.RulePlan {
		return ranchercluster.RulePlan{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: port,
			PortRangeMax: port, RemoteIPPrefix: "0.0.0.0/0"}
	}
	net, _, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "cv-net"})
	if err != nil {
		t.Fatal(err)
	}
	wide := ranchercluster.SubnetPlan{Name: "cv-sub", CIDR: "10.9.0.0/24", GatewayIP: "10.9.0.1", IPVersion: 4, EnableDHCP: true,
		AllocationPools: []ranchercluster.AllocationPool{{Start: "10.9.0.10", End: "10.9.0.200"}}}
	sub, _, err := c.EnsureSubnet(ctx, owner, net.ID, wide)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		before func() error // the half-made object
		after  func() error // the Ensure that completes it
		writes []string     // what the completion may write (prefixes)
		check  func(openstacksim.Inventory) string
	}{
		{"a group missing one of its rules gets it",
			func() error {
				_, _, err := c.EnsureSecurityGroup(ctx, owner, ranchercluster.SecurityGroupPlan{Name: "cv-admin", Rules: []ranchercluster.RulePlan{tcp(22)}})
				return err
			},
			func() error {
				g, created, err := c.EnsureSecurityGroup(ctx, owner, ranchercluster.SecurityGroupPlan{Name: "cv-admin",
					Rules: []ranchercluster.RulePlan{tcp(22), tcp(6443)}})
				if err == nil && created {
					t.Errorf("group %s said created", g.ID)
				}
				return err
			},
			[]string{"POST /network/v2.0/security-group-rules"},
			func(inv openstacksim.Inventory) string {
				for _, g := range inv.SecurityGroups {
					if g.Name == "cv-admin" {
						var ports []int
						for _, r := range g.Rules {
							if r.Direction == "ingress" {
								ports = append(ports, r.PortRangeMin)
							}
						}
						slices.Sort(ports)
						if !slices.Equal(ports, []int{22, 6443}) {
							return fmt.Sprintf("ingress ports %v, want 22 and 6443", ports)
						}
						return ""
					}
				}
				return "no group cv-admin"
			}},
		{"a subnet with Waldur's .10-.200 pool is narrowed to the plan's .11-.200",
			func() error { return nil },
			func() error {
				narrow := wide
				narrow.AllocationPools = []ranchercluster.AllocationPool{{Start: "10.9.0.11", End: "10.9.0.200"}}
				_, created, err := c.EnsureSubnet(ctx, owner, net.ID, narrow)
				if err == nil && created {
					t.Error("subnet said created")
				}
				return err
			},
			[]string{"PUT /network/v2.0/subnets/" + sub.ID},
			func(inv openstacksim.Inventory) string {
				if len(inv.Subnets) != 1 || !slices.Equal(inv.Subnets[0].Pools, []openstacksim.Pool{{Start: "10.9.0.11", End: "10.9.0.200"}}) {
					return "subnets " + fmt.Sprint(inv.Subnets)
				}
				return ""
			}},
		{"a port without one of its groups gets it",
			func() error {
				if _, _, err := c.EnsureSecurityGroup(ctx, owner, ranchercluster.SecurityGroupPlan{Name: "cv-public"}); err != nil {
					return err
				}
				_, _, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "cv-lb", NetworkID: net.ID, SubnetID: sub.ID,
					FixedIP: "10.9.0.10", SecurityGroups: []string{"default"}})
				return err
			},
			func() error {
				_, created, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "cv-lb", NetworkID: net.ID, SubnetID: sub.ID,
					FixedIP: "10.9.0.10", SecurityGroups: []string{"default", "cv-public"}})
				if err == nil && created {
					t.Error("port said created")
				}
				return err
			},
			[]string{"PUT /network/v2.0/ports/"},
			func(inv openstacksim.Inventory) string {
				for _, port := range inv.Ports {
					if port.Name == "cv-lb" {
						if len(port.SecurityGroups) != 2 {
							return fmt.Sprintf("port groups %v, want default and cv-public", port.SecurityGroups)
						}
						return ""
					}
				}
				return "no port cv-lb"
			}},
		{"a router without its interface gets it",
			func() error {
				_, _, err := c.EnsureRouter(ctx, owner, ranchercluster.RouterPlan{Name: "cv-router", ExternalNetworkID: sim.ExternalNetworkID()}, "")
				return err
			},
			func() error {
				r, created, err := c.EnsureRouter(ctx, owner, ranchercluster.RouterPlan{Name: "cv-router", ExternalNetworkID: sim.ExternalNetworkID()}, sub.ID)
				if err == nil && (created || !slices.Equal(r.SubnetIDs, []string{sub.ID})) {
					t.Errorf("router %+v created %v", r, created)
				}
				return err
			},
			[]string{"PUT /network/v2.0/routers/"},
			func(inv openstacksim.Inventory) string {
				if len(inv.Routers) != 1 || len(inv.Routers[0].Interfaces) != 1 {
					return "routers " + fmt.Sprint(inv.Routers)
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.before(); err != nil {
				t.Fatal(err)
			}
			sim.ResetCalls()
			if err := tc.after(); err != nil {
				t.Fatal(err)
			}
			for _, w := range writes(sim) {
				if !slices.ContainsFunc(tc.writes, func(p string) bool { return strings.HasPrefix(w, p) }) {
					t.Errorf("unexpected write %s", w)
				}
			}
			if len(writes(sim)) == 0 {
				t.Error("nothing was completed")
			}
			if msg := tc.check(sim.Inventory(p.ID)); msg != "" {
				t.Error(msg)
			}
		})
	}
}
