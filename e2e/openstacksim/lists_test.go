package openstacksim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumetypes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

func TestCatalogListings(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{
		AvailabilityZones: []string{"az-a", "az-b", "az-c"},
		Flavors:           []openstacksim.Flavor{{ID: "f1", Name: "managed_rancher_server", VCPUs: 4, RAM: 8192, Disk: 40}},
		Images:            []openstacksim.Image{{Name: "ubuntu-22.04"}, {Name: "ubuntu-24.04"}},
		VolumeTypes:       []openstacksim.VolumeType{{Name: "__DEFAULT__"}, {Name: "ssd"}},
	})
	_, c := tenant(t, sim, "cat")
	ctx := ctxT(t)

	fl := must(flavors.ExtractFlavors(must(flavors.ListDetail(c.compute, nil).AllPages(ctx)).of(t))).of(t)
	if len(fl) != 1 || fl[0].Name != "managed_rancher_server" || fl[0].VCPUs != 4 || fl[0].RAM != 8192 || fl[0].Disk != 40 {
		t.Fatalf("flavors %+v", fl)
	}
	vts := must(volumetypes.ExtractVolumeTypes(must(volumetypes.List(c.volume, nil).AllPages(ctx)).of(t))).of(t)
	if len(vts) != 2 || vts[1].Name != "ssd" {
		t.Fatalf("volume types %+v", vts)
	}
	imgs := must(images.ExtractImages(must(images.List(c.image, images.ListOpts{Name: "ubuntu-24.04"}).AllPages(ctx)).of(t))).of(t)
	if len(imgs) != 1 || imgs[0].Name != "ubuntu-24.04" || imgs[0].Status != images.ImageStatusActive {
		t.Fatalf("images %+v", imgs)
	}
}

// pagesOf walks a pager and returns the page sizes.
func pagesOf(t *testing.T, p pagination.Pager, count func(pagination.Page) int) []int {
	t.Helper()
	var sizes []int
	err := p.EachPage(ctxT(t), func(_ context.Context, page pagination.Page) (bool, error) {
		sizes = append(sizes, count(page))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}

func TestPagination(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, VolumePolls: -1,
		Images: []openstacksim.Image{{Name: "i1"}, {Name: "i2"}, {Name: "i3"}}})
	_, c := tenant(t, sim, "pages")
	ctx := ctxT(t)
	for i := range 5 {
		must(networks.Create(ctx, c.network, networks.CreateOpts{Name: fmt.Sprintf("net-%d", i)}).Extract()).of(t)
		must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: fmt.Sprintf("vol-%d", i), Size: 1}, nil).Extract()).of(t)
		must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: fmt.Sprintf("srv-%d", i), FlavorRef: "1",
			ImageRef: sim.Options().Images[0].ID, Networks: "none"}, nil).Extract()).of(t)
	}
	for _, tc := range []struct {
		name  string
		pager pagination.Pager
		count func(pagination.Page) int
		want  string
	}{
		{"neutron networks", networks.List(c.network, networks.ListOpts{Limit: 2}), func(p pagination.Page) int {
			return len(must(networks.ExtractNetworks(p)).of(t))
		}, "[2 2 2]"}, // the external network is visible too
		{"nova servers", servers.List(c.compute, servers.ListOpts{Limit: 2}), func(p pagination.Page) int {
			return len(must(servers.ExtractServers(p)).of(t))
		}, "[2 2 1]"},
		{"cinder volumes", volumes.List(c.volume, volumes.ListOpts{Limit: 2}), func(p pagination.Page) int {
			return len(must(volumes.ExtractVolumes(p)).of(t))
		}, "[2 2 1]"},
		{"glance images", images.List(c.image, images.ListOpts{Limit: 2}), func(p pagination.Page) int {
			return len(must(images.ExtractImages(p)).of(t))
		}, "[2 1]"},
		{"a page size above the count is one page", networks.List(c.network, networks.ListOpts{Limit: 50}), func(p pagination.Page) int {
			return len(must(networks.ExtractNetworks(p)).of(t))
		}, "[6]"}, // the external network is visible too
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(pagesOf(t, tc.pager, tc.count)); got != tc.want {
				t.Fatalf("pages %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("nova's name filter is a regular expression", func(t *testing.T) {
		all := must(servers.ExtractServers(must(servers.List(c.compute, servers.ListOpts{Name: "srv-[13]"}).AllPages(ctx)).of(t))).of(t)
		if len(all) != 2 {
			t.Fatalf("servers %+v", all)
		}
	})
}

func TestFaultInjection(t *testing.T) {
	sim, _, c := simWithTenant(t, "faults")
	ctx := ctxT(t)
	sim.ResetCalls()

	t.Run("a named call fails the next N times in the service's format", func(t *testing.T) {
		sim.FailCall(http.MethodPost, "/network/v2.0/networks", http.StatusConflict, 2)
		for range 2 {
			_, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: "n"}).Extract()
			wantCode(t, err, http.StatusConflict)
			if !strings.Contains(err.Error(), "NeutronError") {
				t.Fatalf("body %v", err)
			}
		}
		must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "n"}).Extract()).of(t)
	})
	t.Run("a 5xx once", func(t *testing.T) {
		sim.FailCall(http.MethodGet, "/compute/v2.1/flavors", http.StatusServiceUnavailable, 1)
		_, err := flavors.ListDetail(c.compute, nil).AllPages(ctx)
		wantCode(t, err, http.StatusServiceUnavailable)
		must(flavors.ListDetail(c.compute, nil).AllPages(ctx)).of(t)
	})
	t.Run("the call log counts calls per service", func(t *testing.T) {
		if got := sim.CallCount(http.MethodPost, "/network/", 0); got != 3 {
			t.Fatalf("neutron POSTs %d", got)
		}
		if got := sim.CallCount("", "/network/", http.StatusConflict); got != 2 {
			t.Fatalf("neutron 409s %d", got)
		}
		if got := sim.CallCount(http.MethodGet, "/compute/", 0); got != 2 {
			t.Fatalf("nova GETs %d", got)
		}
	})
	t.Run("the summary groups calls by path template", func(t *testing.T) {
		sum := sim.CallSummary()
		if sum["POST /network/v2.0/networks"] != 3 || sum["GET /compute/v2.1/flavors/detail"] != 2 {
			t.Fatalf("summary %v", sum)
		}
		n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "m"}).Extract()).of(t)
		must(networks.Get(ctx, c.network, n.ID).Extract()).of(t)
		if got := sim.CallSummary()["GET /network/v2.0/networks/{id}"]; got != 1 {
			t.Fatalf("GET network by id: %d", got)
		}
	})
	t.Run("down answers 503 everywhere, the inventory still answers", func(t *testing.T) {
		sim.Down(true)
		_, err := networks.List(c.network, nil).AllPages(ctx)
		wantCode(t, err, http.StatusServiceUnavailable)
		if inv := sim.Inventory(""); len(inv.Networks) != 2 {
			t.Fatalf("inventory %+v", inv)
		}
		sim.Down(false)
		must(networks.List(c.network, nil).AllPages(ctx)).of(t)
	})
}
