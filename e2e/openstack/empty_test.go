package openstack_test

import (
	"errors"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// A tenant emptied before its project's deletion leaves nothing: the
// servers, volumes, floating IPs, router, ports, subnet, network and every
// security group, Neutron's default group (which Neutron made when the
// tenant's groups were first looked at, and which deleting the Keystone
// project does not remove) included.
func TestEmptyProjectLeavesNothingInTheTenant(t *testing.T) {
	ctx, sim, p, b := oneZoneBuilt(t)
	owner, admin := openstack.Owner(p.ResourceUUID), b.admin
	inv := sim.Tenants()
	defaults := 0
	for _, g := range inv.SecurityGroups {
		if g.Default {
			defaults++
		}
	}
	if defaults != 1 || len(inv.Servers) == 0 || len(inv.Volumes) == 0 || len(inv.FloatingIPs) == 0 {
		t.Fatalf("the built tenant: %d default groups, %d servers, %d volumes, %d floating IPs", defaults, len(inv.Servers), len(inv.Volumes), len(inv.FloatingIPs))
	}

	t.Run("another owner's project is refused, and nothing is deleted", func(t *testing.T) {
		before := sim.Tenants().Total()
		_, err := b.scoped.EmptyProject(ctx, openstack.Owner("another-resource"), b.project.ID)
		if !errors.Is(err, backend.ErrNotManaged) {
			t.Fatalf("err %v, want ErrNotManaged", err)
		}
		if n := sim.Tenants().Total(); n != before {
			t.Fatalf("%d objects, want the %d there were", n, before)
		}
	})
	t.Run("the owner's project is emptied, then removed with its user", func(t *testing.T) {
		emptied, err := b.scoped.EmptyProject(ctx, owner, b.project.ID)
		if err != nil {
			t.Fatal(err)
		}
		if emptied["security group"] != 3 || emptied["server"] != len(inv.Servers) || emptied["router"] != 1 || emptied["network"] != 1 {
			t.Errorf("emptied %v; want the 3 groups (default, k8s_admin, k8s_public), %d servers, the router and the network", emptied, len(inv.Servers))
		}
		if err := admin.DeleteUser(ctx, owner, b.user.ID); err != nil {
			t.Fatal(err)
		}
		if err := admin.DeleteProject(ctx, owner, b.project.ID); err != nil {
			t.Fatal(err)
		}
		if left := sim.Tenants(); left.Total() != 0 {
			t.Fatalf("left in the tenant: %d objects: %+v", left.Total(), left)
		}
	})
	t.Run("a client scoped to another project refuses", func(t *testing.T) {
		if _, err := admin.EmptyProject(ctx, owner, b.project.ID); err == nil {
			t.Fatal("the admin client emptied another project than its own")
		}
	})
}
