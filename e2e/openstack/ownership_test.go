package openstack_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// rawAdmin is plain gophercloud as the simulator's admin: objects made
// through it carry no sitebus mark, as an operator's would.
func rawAdmin(t *testing.T, sim *openstacksim.Server) (identity, volume, network *gophercloud.ServiceClient) {
	t.Helper()
	o := sim.Options()
	p, err := gos.AuthenticatedClient(ctxT(t), gophercloud.AuthOptions{IdentityEndpoint: sim.AuthURL(), Username: o.AdminUser,
		Password: o.AdminPassword, DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: openstacksim.DefaultRegion}
	if identity, err = gos.NewIdentityV3(p, eo); err != nil {
		t.Fatal(err)
	}
	if volume, err = gos.NewBlockStorageV3(p, eo); err != nil {
		t.Fatal(err)
	}
	if network, err = gos.NewNetworkV2(p, eo); err != nil {
		t.Fatal(err)
	}
	return identity, volume, network
}

// TestForeignObjectsAreRefused: what is not the owner's is never adopted
// by an Ensure nor deleted by a Delete; the error is terminal and names
// the object, and the object is still there.
func TestForeignObjectsAreRefused(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	s := settings(t, sim, 1)
	ctx := ctxT(t)
	admin := connect(t, s, s.OpenStackOfferings[0])
	mine, other := openstack.Owner(resourceUUID), openstack.Owner("99999999-9999-4999-8999-999999999999")

	// Another cluster's tenant, with a network, a volume and a server.
	otherProject, oc := scopedProject(t, ctx, admin, other, "os-tenant-other", "another cluster")
	net := ensured(oc.EnsureNetwork(ctx, other, ranchercluster.NetworkPlan{Name: "other-int-net"})).of(t)
	vol := ensured(oc.EnsureVolume(ctx, other, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "other-data", SizeGB: 1}})).of(t)
	bootVol := ensured(oc.EnsureVolume(ctx, other, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "other-vm-system", SizeGB: 1}})).of(t)
	srv := ensured(oc.EnsureServer(ctx, other, openstack.ServerSpec{Name: "other-vm", FlavorID: "1", VolumeIDs: []string{bootVol.ID}})).of(t)
	// The same project seen by a client acting for this owner.
	mc, err := admin.Scoped(ctx, otherProject)
	if err != nil {
		t.Fatal(err)
	}
	// An operator's project, user and volume, with no mark at all.
	identity, rawVolume, rawNetwork := rawAdmin(t, sim)
	// An operator's network inside the other cluster's tenant: the project
	// is sitebus's, the network is not.
	opNet, err := networks.Create(ctx, rawNetwork, networks.CreateOpts{Name: "operator-net", ProjectID: otherProject.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	opProject, err := projects.Create(ctx, identity, projects.CreateOpts{Name: "os-tenant-taken", DomainID: "default"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	opUser, err := users.Create(ctx, identity, users.CreateOpts{Name: "os-tenant-taken-user", DomainID: "default",
		DefaultProjectID: opProject.ID, Password: "x"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	opVolume, err := volumes.Create(ctx, rawVolume, volumes.CreateOpts{Name: "operator-disk", Size: 1}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	var defaultGroup string
	for _, g := range sim.Inventory(otherProject.ID).SecurityGroups {
		if g.Default {
			defaultGroup = g.ID
		}
	}

	for _, tc := range []struct {
		name, object string
		call         func(context.Context) error
		exists       *kept
	}{
		{"a project of the plan's name that an operator made", "os-tenant-taken",
			func(ctx context.Context) error {
				_, _, err := admin.EnsureProject(ctx, mine, "os-tenant-taken", "")
				return err
			}, nil},
		{"a user of the plan's name in an operator's project", "os-tenant-taken-user",
			func(ctx context.Context) error {
				_, _, err := admin.EnsureUser(ctx, mine, "os-tenant-taken-user", "pw", opProject.ID)
				return err
			}, nil},
		{"deleting an operator's project", "os-tenant-taken",
			func(ctx context.Context) error { return admin.DeleteProject(ctx, mine, opProject.ID) }, &kept{"projects", opProject.ID}},
		{"deleting an operator's user", "os-tenant-taken-user",
			func(ctx context.Context) error { return admin.DeleteUser(ctx, mine, opUser.ID) }, &kept{"users", opUser.ID}},
		{"deleting an operator's volume", "operator-disk",
			func(ctx context.Context) error { return admin.DeleteVolume(ctx, mine, opVolume.ID) }, &kept{"volumes", opVolume.ID}},
		{"deleting another cluster's project", "os-tenant-other",
			func(ctx context.Context) error { return admin.DeleteProject(ctx, mine, otherProject.ID) }, &kept{"projects", otherProject.ID}},
		{"adopting another cluster's network by name", "other-int-net",
			func(ctx context.Context) error {
				_, _, err := mc.EnsureNetwork(ctx, mine, ranchercluster.NetworkPlan{Name: "other-int-net"})
				return err
			}, nil},
		{"deleting another cluster's network", "other-int-net",
			func(ctx context.Context) error { return mc.DeleteNetwork(ctx, mine, net.ID) }, &kept{"networks", net.ID}},
		{"deleting an operator's network in a tenant sitebus made", "operator-net",
			func(ctx context.Context) error { return oc.DeleteNetwork(ctx, other, opNet.ID) }, &kept{"networks", opNet.ID}},
		{"adopting an operator's network in a tenant sitebus made", "operator-net",
			func(ctx context.Context) error {
				_, _, err := oc.EnsureNetwork(ctx, other, ranchercluster.NetworkPlan{Name: "operator-net"})
				return err
			}, nil},
		{"deleting another cluster's volume", "other-data",
			func(ctx context.Context) error { return mc.DeleteVolume(ctx, mine, vol.ID) }, &kept{"volumes", vol.ID}},
		{"adopting another cluster's server by name", "other-vm",
			func(ctx context.Context) error {
				_, _, err := mc.EnsureServer(ctx, mine, openstack.ServerSpec{Name: "other-vm", FlavorID: "1", VolumeIDs: []string{bootVol.ID}})
				return err
			}, nil},
		{"deleting another cluster's server", "other-vm",
			func(ctx context.Context) error { return mc.DeleteServer(ctx, mine, srv.ID) }, &kept{"servers", srv.ID}},
		{"deleting Neutron's default group, even for the project's owner", "default",
			func(ctx context.Context) error { return oc.DeleteSecurityGroup(ctx, other, defaultGroup) }, &kept{"security groups", defaultGroup}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim.ResetCalls()
			err := tc.call(ctxT(t))
			switch {
			case !errors.Is(err, backend.ErrNotManaged) || !fault.IsTerminal(err):
				t.Fatalf("err %v, want terminal ErrNotManaged", err)
			case !strings.Contains(err.Error(), tc.object):
				t.Fatalf("err %q does not name %s", err, tc.object)
			}
			if w := writes(sim); len(w) != 0 {
				t.Errorf("refusing wrote: %v", w)
			}
			if tc.exists != nil && !slices.Contains(idsIn(sim.Inventory(""), tc.exists.collection), tc.exists.id) {
				t.Errorf("%s is gone", tc.object)
			}
		})
	}
}

// kept names an object a refusal must leave in the simulator's inventory.
type kept struct{ collection, id string }

// idsIn lists the IDs of one collection of the simulator's inventory.
func idsIn(inv openstacksim.Inventory, collection string) []string {
	switch collection {
	case "projects":
		return idsOf(inv.Projects, func(p openstacksim.Project) string { return p.ID })
	case "users":
		return idsOf(inv.Users, func(u openstacksim.User) string { return u.ID })
	case "volumes":
		return idsOf(inv.Volumes, func(v openstacksim.Volume) string { return v.ID })
	case "networks":
		return idsOf(inv.Networks, func(n openstacksim.Network) string { return n.ID })
	case "servers":
		return idsOf(inv.Servers, func(s openstacksim.Instance) string { return s.ID })
	case "security groups":
		return idsOf(inv.SecurityGroups, func(g openstacksim.SecurityGroup) string { return g.ID })
	}
	panic("no inventory collection " + collection)
}

func idsOf[T any](xs []T, idOf func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, idOf(x))
	}
	return out
}
