package openstack_test

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestUsableSubnetIsTheProjectsOrShared: a self-managed order may put its
// VMs only on a subnet of the credentials' project or of a shared
// network, though an administrator can read and use any project's.
func TestUsableSubnetIsTheProjectsOrShared(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	s := settings(t, sim, 1)
	admin := connect(t, s, s.OpenStackOfferings[0])
	ctx := ctxT(t)
	owner := openstack.Owner(resourceUUID)
	p, c := scopedProject(t, ctx, admin, owner, "os-tenant-users", "")
	net := ensured(c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "users-net"})).of(t)
	own := ensured(c.EnsureSubnet(ctx, owner, net.ID, ranchercluster.SubnetPlan{Name: "users-sub", CIDR: "10.8.0.0/24",
		GatewayIP: "10.8.0.1", IPVersion: 4, EnableDHCP: true})).of(t)
	_, _, network := rawAdmin(t, sim)
	sharedNet, err := networks.Create(ctx, network, networks.CreateOpts{Name: "shared-net", Shared: gophercloud.Enabled, ProjectID: p.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	shared, err := subnets.Create(ctx, network, subnets.CreateOpts{NetworkID: sharedNet.ID, Name: "shared-sub", CIDR: "10.9.0.0/24",
		IPVersion: gophercloud.IPv4, ProjectID: p.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		client *openstack.Client
		id     string
		want   bool
	}{
		"the project's own subnet":                {c, own.ID, true},
		"another project's subnet, for the admin": {admin, own.ID, false},
		"another project's shared network":        {admin, shared.ID, true},
		"a subnet that does not exist":            {admin, "00000000-0000-4000-8000-00000000dead", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok, err := tc.client.UsableSubnet(ctx, tc.id)
			if err != nil || ok != tc.want || (ok && got.ID != tc.id) {
				t.Fatalf("UsableSubnet(%s) = %+v, %v, %v; want usable %v", tc.id, got, ok, err, tc.want)
			}
		})
	}
	groups, err := c.SecurityGroups(ctx)
	if err != nil || !slices.ContainsFunc(groups, func(g openstack.SecurityGroup) bool { return g.Name == "default" && g.ProjectID == p.ID }) {
		t.Fatalf("SecurityGroups = %+v, %v; want the project's default group", groups, err)
	}
}
