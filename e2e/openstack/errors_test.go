package openstack_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// tenantClient makes a project for the fixture's owner and returns the
// client acting in it.
func tenantClient(t *testing.T, sim *openstacksim.Server, name string, configure ...func(*openstack.Config)) (*openstack.Client, openstack.Project) {
	t.Helper()
	s := settings(t, sim, 1)
	admin := connect(t, s, s.OpenStackOfferings[0], configure...)
	p, _, err := admin.EnsureProject(ctxT(t), openstack.Owner(resourceUUID), name, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := admin.Scoped(ctxT(t), p)
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// TestQuotaIsTerminalAndNamesTheQuota: each service's quota refusal is a
// terminal ErrQuota whose message names the quota.
func TestQuotaIsTerminalAndNamesTheQuota(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	c, p := tenantClient(t, sim, "os-tenant-quota")
	ctx := ctxT(t)
	net, _, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "q-net"})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "q-boot", SizeGB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, resource string
		limit          int
		quota          string // in the message
		call           func() error
	}{
		{"Nova cores (403)", "cores", 1, "cores", func() error {
			_, _, err := c.EnsureServer(ctx, owner, openstack.ServerSpec{Name: "q-vm", FlavorID: "2", VolumeIDs: []string{boot.ID}})
			return err
		}},
		{"Cinder gigabytes (413)", "gigabytes", 1, "gigabytes", func() error {
			_, _, err := c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "q-big", SizeGB: 5}})
			return err
		}},
		{"Neutron ports (409 OverQuota)", "port", 0, "port", func() error {
			_, _, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "q-port", NetworkID: net.ID})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim.SetQuota(p.ID, tc.resource, tc.limit)
			t.Cleanup(func() { sim.SetQuota(p.ID, tc.resource, -1) })
			err := tc.call()
			switch {
			case !openstack.IsQuota(err) || !fault.IsTerminal(err):
				t.Fatalf("err %v, want a terminal quota error", err)
			case !strings.Contains(err.Error(), tc.quota):
				t.Fatalf("err %q does not name the quota %s", err, tc.quota)
			}
		})
	}
}

// TestErrorsAreClassified: what a retry can fix is retryable, what it
// cannot is terminal; after a transient fault the retry makes the object
// once.
func TestErrorsAreClassified(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	c, p := tenantClient(t, sim, "os-tenant-faults")
	ctx := ctxT(t)
	for _, tc := range []struct {
		name     string
		status   int
		terminal bool
		is       error
	}{
		{"500 once is retryable", http.StatusInternalServerError, false, nil},
		{"503 once is retryable", http.StatusServiceUnavailable, false, nil},
		{"409 that clears is retryable", http.StatusConflict, false, openstack.ErrConflict},
		{"400 is a terminal refusal", http.StatusBadRequest, true, fault.Rejected},
		{"403 is a terminal refusal", http.StatusForbidden, true, fault.Rejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "net-" + strings.ReplaceAll(tc.name, " ", "-")
			sim.FailCall(http.MethodPost, "/network/v2.0/networks", tc.status, 1)
			_, _, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: name})
			var oe *openstack.Error
			switch {
			case err == nil:
				t.Fatal("no error")
			case fault.IsTerminal(err) != tc.terminal:
				t.Fatalf("err %v: terminal %v, want %v", err, fault.IsTerminal(err), tc.terminal)
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Fatalf("err %v is not %v", err, tc.is)
			case !errors.As(err, &oe) || oe.Status != tc.status || !strings.Contains(err.Error(), name):
				t.Fatalf("err %#v: want status %d naming %s", err, tc.status, name)
			}
			n, created, err := c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: name})
			if err != nil || !created {
				t.Fatalf("retry: %+v created %v, %v", n, created, err)
			}
			count := 0
			for _, x := range sim.Inventory(p.ID).Networks {
				if x.Name == name {
					count++
				}
			}
			if count != 1 {
				t.Fatalf("%d networks named %s after the retry, want 1", count, name)
			}
		})
	}

	t.Run("a poll answered 500 is retryable", func(t *testing.T) {
		sim.FailCall(http.MethodGet, "/compute/v2.1/servers/", http.StatusInternalServerError, 1)
		_, err := c.WaitServerActive(ctx, "4f9d2a61-0000-4000-8000-000000000000")
		if err == nil || fault.IsTerminal(err) {
			t.Fatalf("err %v, want retryable", err)
		}
	})

	t.Run("a missing object that must exist is terminal", func(t *testing.T) {
		_, err := c.WaitServerActive(ctx, "4f9d2a61-0000-4000-8000-000000000000")
		if !openstack.IsNotFound(err) || !fault.IsTerminal(err) {
			t.Fatalf("err %v, want terminal not found", err)
		}
	})

	t.Run("an unreachable Keystone is retryable", func(t *testing.T) {
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		cfg := openstack.Config{Cloud: ranchercluster.Cloud{AuthURL: gone.URL + "/identity/v3", Username: "admin",
			Password: "x", ProjectName: "admin", UserDomainName: "Default", Verify: true}}
		fast(&cfg)
		_, err := openstack.Connect(ctx, cfg)
		if err == nil || fault.IsTerminal(err) {
			t.Fatalf("err %v, want retryable", err)
		}
	})
}
