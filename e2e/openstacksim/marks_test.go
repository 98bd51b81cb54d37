package openstacksim_test

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

// TestOwnershipMarks covers what a client can mark its objects with and
// find them by: Keystone and Neutron descriptions, and Cinder volume
// metadata.
func TestOwnershipMarks(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{VolumePolls: -1})
	ctx := ctxT(t)
	ac := clientsOf(t, admin(t, sim))
	_, c := tenant(t, sim, "marks")
	const mark = "sitebus-resource-0123"

	t.Run("keystone project descriptions", func(t *testing.T) {
		p := must(projects.Create(ctx, ac.identity, projects.CreateOpts{Name: "marked", Description: mark}).Extract()).of(t)
		if got := must(projects.Get(ctx, ac.identity, p.ID).Extract()).of(t); got.Description != mark {
			t.Fatalf("description %q", got.Description)
		}
	})
	t.Run("neutron descriptions", func(t *testing.T) {
		n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "k8s-int-net", Description: mark}).Extract()).of(t)
		if n.Description != mark {
			t.Fatalf("description %q", n.Description)
		}
		must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "k8s-int-net"}).Extract()).of(t)
		opts := networks.ListOpts{Name: "k8s-int-net", Description: mark}
		got := must(networks.ExtractNetworks(must(networks.List(c.network, opts).AllPages(ctx)).of(t))).of(t)
		if len(got) != 1 || got[0].ID != n.ID {
			t.Fatalf("networks by description %+v", got)
		}
		rt := must(routers.Create(ctx, c.network, routers.CreateOpts{Name: "r", Description: mark}).Extract()).of(t)
		if rt.Description != mark {
			t.Fatalf("router description %q", rt.Description)
		}
	})
	t.Run("cinder volume metadata", func(t *testing.T) {
		v := must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: "data", Size: 1,
			Metadata: map[string]string{"owner": mark}}, nil).Extract()).of(t)
		must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: "data", Size: 1}, nil).Extract()).of(t)
		got := must(volumes.ExtractVolumes(must(volumes.List(c.volume, volumes.ListOpts{Name: "data",
			Metadata: map[string]string{"owner": mark}}).AllPages(ctx)).of(t))).of(t)
		if len(got) != 1 || got[0].ID != v.ID || got[0].Metadata["owner"] != mark {
			t.Fatalf("volumes %+v", got)
		}
		must(volumes.Create(ctx, ac.volume, volumes.CreateOpts{Name: "admins", Size: 1}, nil).Extract()).of(t)
		all := must(volumes.ExtractVolumes(must(volumes.List(ac.volume, volumes.ListOpts{AllTenants: true,
			TenantID: v.TenantID}).AllPages(ctx)).of(t))).of(t)
		if len(all) != 2 {
			t.Fatalf("the tenant's volumes as the admin lists them: %+v", all)
		}
	})
}
