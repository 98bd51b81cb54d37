package openstacksim_test

import (
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	computequotas "github.com/gophercloud/gophercloud/v2/openstack/compute/v2/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

// TestQuotaAPIs pushes a tenant's quotas the way Waldur's
// push_tenant_quotas does and checks the tenant then runs into them.
func TestQuotaAPIs(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, VolumePolls: -1,
		VolumeTypes: []openstacksim.VolumeType{{Name: "__DEFAULT__"}, {Name: "ssd"}}})
	proj, c := tenant(t, sim, "pushed")
	ac := clientsOf(t, admin(t, sim))
	ctx := ctxT(t)
	two, ten := 2, 10

	sim.SetQuota(proj.ID, "network", 1)
	cq := must(computequotas.Update(ctx, ac.compute, proj.ID, computequotas.UpdateOpts{Cores: &two}).Extract()).of(t)
	if cq.Cores != 2 || cq.Instances != 10 {
		t.Fatalf("nova quota %+v", cq)
	}
	if got := must(quotasets.Update(ctx, ac.volume, proj.ID, quotasets.UpdateOpts{Gigabytes: &ten}).Extract()).of(t); got.Gigabytes != 10 {
		t.Fatalf("cinder quota %+v", got)
	}

	t.Run("a member cannot raise its quota", func(t *testing.T) {
		_, err := computequotas.Update(ctx, c.compute, proj.ID, computequotas.UpdateOpts{Cores: &ten}).Extract()
		wantCode(t, err, http.StatusForbidden)
	})
	t.Run("the pushed limits hold", func(t *testing.T) {
		must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "n1"}).Extract()).of(t)
		_, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: "n2"}).Extract()
		wantCode(t, err, http.StatusConflict)
		_, err = servers.Create(ctx, c.compute, servers.CreateOpts{Name: "big", FlavorRef: "3",
			ImageRef: sim.Options().Images[0].ID, Networks: "none"}, nil).Extract()
		wantCode(t, err, http.StatusForbidden)
		_, err = volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 11}, nil).Extract()
		wantCode(t, err, http.StatusRequestEntityTooLarge)
	})
}
