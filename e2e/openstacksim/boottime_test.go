package openstacksim_test

import (
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/testenv"
)

func TestServerStaysInBuildUntilBootAfterHasPassedSinceItsCreate(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	sim := openstacksim.NewTestServer(t, openstacksim.Options{BuildPolls: -1, BootAfter: 20 * time.Second, Now: clk.Now})
	_, c := tenant(t, sim, "boot")
	ctx := ctxT(t)
	n, _ := tenantNet(t, c)
	srv := must(servers.Create(ctx, c.compute, servers.CreateOpts{Name: "w", FlavorRef: "1",
		ImageRef: imageID(t, c, "ubuntu-22.04"), Networks: []servers.Network{{UUID: n.ID}}}, nil).Extract()).of(t)
	status := func() string { return must(servers.Get(ctx, c.compute, srv.ID).Extract()).of(t).Status }
	for _, step := range []struct {
		advance time.Duration
		want    string
	}{
		{0, "BUILD"},
		{19 * time.Second, "BUILD"},
		{time.Second, "ACTIVE"},
	} {
		clk.Advance(step.advance)
		if got := status(); got != step.want {
			t.Fatalf("%s after a further %s, want %s", got, step.advance, step.want)
		}
	}
}
