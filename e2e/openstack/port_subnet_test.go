package openstack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestPortOnTheOrdersSubnet: a self-managed order names a subnet, not its
// network; EnsurePort finds the network (Neutron refuses a port without
// one), the port gets an address of that subnet, and a second Ensure
// adopts it.
func TestPortOnTheOrdersSubnet(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	c, _ := tenantClient(t, sim, "os-tenant-subnet-port")
	ctx := ctxT(t)
	net, _, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "sm-net"})
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := c.EnsureSubnet(ctx, owner, net.ID, ranchercluster.SubnetPlan{Name: "sm-sub", CIDR: "10.7.0.0/24", GatewayIP: "10.7.0.1",
		IPVersion: 4, EnableDHCP: true, AllocationPools: []ranchercluster.AllocationPool{{Start: "10.7.0.11", End: "10.7.0.200"}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		spec    openstack.PortSpec
		wantIP  string // "" any address of the subnet
		wantErr func(error) bool
	}{
		"a port given only the subnet is made on its network": {
			spec: openstack.PortSpec{Name: "sm-node-1", SubnetID: sub.ID},
		},
		"a fixed address given only the subnet": {
			spec:   openstack.PortSpec{Name: "sm-lb", SubnetID: sub.ID, FixedIP: "10.7.0.10"},
			wantIP: "10.7.0.10",
		},
		"a subnet that does not exist is not found, and nothing is made": {
			spec:    openstack.PortSpec{Name: "sm-node-2", SubnetID: "00000000-0000-4000-8000-00000000dead"},
			wantErr: openstack.IsNotFound,
		},
		"neither network nor subnet is refused before any call": {
			spec:    openstack.PortSpec{Name: "sm-node-3"},
			wantErr: func(err error) bool { return errors.Is(err, backend.ErrInvalid) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, created, err := c.EnsurePort(ctx, owner, tc.spec)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err = %v, want a refusal", err)
				}
				for _, x := range sim.Inventory("").Ports {
					if x.Name == tc.spec.Name {
						t.Errorf("port %s was made", x.Name)
					}
				}
				return
			}
			if err != nil || !created {
				t.Fatalf("EnsurePort = created %v, %v", created, err)
			}
			if p.NetworkID != net.ID || len(p.FixedIPs) != 1 || p.FixedIPs[0].SubnetID != sub.ID ||
				!strings.HasPrefix(p.FixedIPs[0].IPAddress, "10.7.0.") || (tc.wantIP != "" && p.FixedIPs[0].IPAddress != tc.wantIP) {
				t.Errorf("port %+v, want one on network %s with an address of subnet %s %s", p, net.ID, sub.ID, tc.wantIP)
			}
			again, created, err := c.EnsurePort(ctx, owner, tc.spec)
			if err != nil || created || again.ID != p.ID {
				t.Errorf("second EnsurePort = %s created %v, %v; want %s adopted", again.ID, created, err, p.ID)
			}
		})
	}
}
