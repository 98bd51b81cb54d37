package openstack_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestAnExpiredTokenIsRenewed: a saga outlives its tokens; the admin's
// and the tenant's clients log in again by themselves.
func TestAnExpiredTokenIsRenewed(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	s := settings(t, sim, 1)
	admin := connect(t, s, s.OpenStackOfferings[0])
	owner := openstack.Owner(resourceUUID)
	ctx := ctxT(t)
	p, _, err := admin.EnsureProject(ctx, owner, "os-tenant-tokens", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := admin.Scoped(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	sim.ExpireTokens()
	if _, _, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "tok-net"}); err != nil {
		t.Fatalf("tenant client after expiry: %v", err)
	}
	if _, _, err := admin.EnsureUser(ctx, owner, "os-tenant-tokens-user", "pw", p.ID); err != nil {
		t.Fatalf("admin client after expiry: %v", err)
	}
	if n := sim.CallCount(http.MethodPost, "/identity/v3/auth/tokens", http.StatusCreated); n < 4 {
		t.Errorf("%d logins, want the two first ones and two renewals", n)
	}
}

// TestWaitsAreBounded: a server that never leaves BUILD ends the wait
// with a terminal timeout naming it and its status.
func TestWaitsAreBounded(t *testing.T) {
	sim := newSim(t, openstacksim.Options{BuildPolls: 1 << 20})
	owner := openstack.Owner(resourceUUID)
	c, _ := tenantClient(t, sim, "os-tenant-slow", func(cfg *openstack.Config) { cfg.ServerTimeout = time.Millisecond })
	ctx := ctxT(t)
	boot, _, err := c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "slow-system", SizeGB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv, _, err := c.EnsureServer(ctx, owner, openstack.ServerSpec{Name: "slow-vm", FlavorID: "1", VolumeIDs: []string{boot.ID}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WaitServerActive(ctx, srv.ID)
	if !errors.Is(err, openstack.ErrTimeout) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), "slow-vm") ||
		!strings.Contains(err.Error(), "BUILD") {
		t.Fatalf("err %v, want a terminal timeout naming slow-vm in BUILD", err)
	}
}

// TestAHangingCallIsRetryable: a call the API never answers ends at the
// request timeout, retryably.
func TestAHangingCallIsRetryable(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	c, _ := tenantClient(t, sim, "os-tenant-hang", func(cfg *openstack.Config) { cfg.RequestTimeout = 200 * time.Millisecond })
	sim.AddFault(openstacksim.Fault{Method: http.MethodGet, PathPrefix: "/network/v2.0/networks", Delay: time.Hour, Count: 1})
	_, _, err := c.EnsureNetwork(ctxT(t), openstack.Owner(resourceUUID), ranchercluster.NetworkPlan{Name: "hang-net"})
	if err == nil || fault.IsTerminal(err) {
		t.Fatalf("err %v, want retryable", err)
	}
}

// TestDeleteServerTakesItsVolumes: the volumes a server booted from go
// with it; its port stays for its own delete.
func TestDeleteServerTakesItsVolumes(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	c, p := tenantClient(t, sim, "os-tenant-vm")
	ctx := ctxT(t)
	net, _, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "vm-net"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.EnsureSubnet(ctx, owner, net.ID, ranchercluster.SubnetPlan{Name: "vm-sub", CIDR: "10.7.0.0/24", IPVersion: 4,
		GatewayIP: "10.7.0.1", AllocationPools: []ranchercluster.AllocationPool{{Start: "10.7.0.11", End: "10.7.0.200"}}}); err != nil {
		t.Fatal(err)
	}
	port, _, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "vm", NetworkID: net.ID, SecurityGroups: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	var vols []string
	for _, name := range []string{"vm-system", "vm-data-1"} {
		v, _, err := c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: name, SizeGB: 2}})
		if err != nil {
			t.Fatal(err)
		}
		vols = append(vols, v.ID)
	}
	srv, _, err := c.EnsureServer(ctx, owner, openstack.ServerSpec{Name: "vm", Role: ranchercluster.RoleAgent, FlavorID: "1",
		VolumeIDs: vols, PortIDs: []string{port.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if srv, err = c.WaitServerActive(ctx, srv.ID); err != nil {
		t.Fatal(err)
	}
	if len(srv.VolumeIDs) != 2 || len(srv.Addresses) != 1 || !strings.HasPrefix(srv.Addresses[0], "10.7.0.") {
		t.Fatalf("server %+v", srv)
	}
	if u, err := c.Usage(ctx, owner); err != nil || u != (openstack.Usage{Nodes: 1, VCPUs: 1, RAMMB: 2048, StorageGB: 4}) {
		t.Fatalf("usage %+v, %v", u, err)
	}
	if err := c.DeleteServer(ctx, owner, srv.ID); err != nil {
		t.Fatal(err)
	}
	inv := sim.Inventory(p.ID)
	if len(inv.Servers) != 0 || len(inv.Volumes) != 0 {
		t.Fatalf("left: servers %+v volumes %+v", inv.Servers, inv.Volumes)
	}
	if len(inv.Ports) != 1 || inv.Ports[0].DeviceID != "" {
		t.Fatalf("ports %+v, want the server's port, unbound", inv.Ports)
	}
	if err := c.DeletePort(ctx, owner, port.ID); err != nil {
		t.Fatal(err)
	}
}
