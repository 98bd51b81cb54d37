package openstacksim_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

// TestOwnershipMarks covers what a client can mark its objects with and
// find them by: Keystone project tags, Neutron descriptions and tags, and
// Cinder volume metadata.
func TestOwnershipMarks(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{VolumePolls: -1})
	ctx := ctxT(t)
	ac := clientsOf(t, admin(t, sim))
	_, c := tenant(t, sim, "marks")
	const mark = "sitebus-resource-0123"

	t.Run("keystone project tags", func(t *testing.T) {
		p := must(projects.Create(ctx, ac.identity, projects.CreateOpts{Name: "tagged", Tags: []string{mark}}).Extract()).of(t)
		if !slices.Equal(p.Tags, []string{mark}) {
			t.Fatalf("tags %v", p.Tags)
		}
		for _, tc := range []struct {
			opts projects.ListOpts
			want int
		}{
			{projects.ListOpts{Tags: mark}, 1},
			{projects.ListOpts{TagsAny: mark + ",other"}, 1},
			{projects.ListOpts{NotTagsAny: mark}, 2}, // admin and the tenant's
			{projects.ListOpts{Tags: mark + ",other"}, 0},
		} {
			got := must(projects.ExtractProjects(must(projects.List(ac.identity, tc.opts).AllPages(ctx)).of(t))).of(t)
			if len(got) != tc.want {
				t.Fatalf("%+v: %d projects", tc.opts, len(got))
			}
		}
		tags := []string{mark, "keep"}
		upd := must(projects.Update(ctx, ac.identity, p.ID, projects.UpdateOpts{Tags: &tags}).Extract()).of(t)
		if !slices.Equal(upd.Tags, tags) {
			t.Fatalf("updated tags %v", upd.Tags)
		}
	})
	t.Run("neutron descriptions and tags", func(t *testing.T) {
		n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "k8s-int-net", Description: mark}).Extract()).of(t)
		if n.Description != mark {
			t.Fatalf("description %q", n.Description)
		}
		must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "k8s-int-net"}).Extract()).of(t)
		got := must(attributestags.ReplaceAll(ctx, c.network, "networks", n.ID, attributestags.ReplaceAllOpts{Tags: []string{mark}}).Extract()).of(t)
		if !slices.Equal(got, []string{mark}) {
			t.Fatalf("tags %v", got)
		}
		if err := attributestags.Add(ctx, c.network, "networks", n.ID, "extra").ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if ok := must(attributestags.Confirm(ctx, c.network, "networks", n.ID, "extra").Extract()).of(t); !ok {
			t.Fatal("tag extra not confirmed")
		}
		if err := attributestags.Delete(ctx, c.network, "networks", n.ID, "extra").ExtractErr(); err != nil {
			t.Fatal(err)
		}
		err := attributestags.Delete(ctx, c.network, "networks", n.ID, "extra").ExtractErr()
		wantCode(t, err, http.StatusNotFound)
		for _, tc := range []struct {
			opts networks.ListOpts
			want int
		}{
			{networks.ListOpts{Name: "k8s-int-net", Tags: mark}, 1},
			{networks.ListOpts{Name: "k8s-int-net", NotTags: mark}, 1},
			{networks.ListOpts{Name: "k8s-int-net", Description: mark}, 1},
		} {
			got := must(networks.ExtractNetworks(must(networks.List(c.network, tc.opts).AllPages(ctx)).of(t))).of(t)
			if len(got) != tc.want || tc.opts.NotTags == "" && got[0].ID != n.ID {
				t.Fatalf("%+v: %+v", tc.opts, got)
			}
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
