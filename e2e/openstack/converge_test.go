package openstack_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestEnsureCompletesAHalfMadeObject: an object an earlier attempt left
// half-made (a crash between its create and its rules, pool or interface)
// is completed, not made again.
func TestEnsureCompletesAHalfMadeObject(t *testing.T) {
	ctx, sim, c, p := tenantOnSim(t, "os-tenant-converge", openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	tcp := func(port int) ranchercluster.RulePlan {
		return ranchercluster.RulePlan{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: port,
			PortRangeMax: port, RemoteIPPrefix: "0.0.0.0/0"}
	}
	net := ensured(c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "cv-net"})).of(t)
	wide := ranchercluster.SubnetPlan{Name: "cv-sub", CIDR: "10.9.0.0/24", GatewayIP: "10.9.0.1", IPVersion: 4, EnableDHCP: true,
		AllocationPools: []ranchercluster.AllocationPool{{Start: "10.9.0.10", End: "10.9.0.200"}}}
	sub := ensured(c.EnsureSubnet(ctx, owner, net.ID, wide)).of(t)

	for _, tc := range []struct {
		name   string
		before func() error // the half-made object
		after  func() error // the Ensure that completes it
		writes []string     // what the completion may write (prefixes)
		check  func(openstacksim.Inventory) string
	}{
		{"a group missing one of its rules gets it",
			func() error {
				_, _, err := c.EnsureSecurityGroup(ctx, owner, ranchercluster.SecurityGroupPlan{Name: "cv-admin", Rules: []ranchercluster.RulePlan{tcp(22)}})
				return err
			},
			func() error {
				g, created, err := c.EnsureSecurityGroup(ctx, owner, ranchercluster.SecurityGroupPlan{Name: "cv-admin",
					Rules: []ranchercluster.RulePlan{tcp(22), tcp(6443)}})
				if err == nil && created {
					t.Errorf("group %s said created", g.ID)
				}
				return err
			},
			[]string{"POST /network/v2.0/security-group-rules"},
			func(inv openstacksim.Inventory) string {
				for _, g := range inv.SecurityGroups {
					if g.Name == "cv-admin" {
						var ports []int
						for _, r := range g.Rules {
							if r.Direction == "ingress" {
								ports = append(ports, r.PortRangeMin)
							}
						}
						slices.Sort(ports)
						if !slices.Equal(ports, []int{22, 6443}) {
							return fmt.Sprintf("ingress ports %v, want 22 and 6443", ports)
						}
						return ""
					}
				}
				return "no group cv-admin"
			}},
		{"a subnet with Waldur's .10-.200 pool is narrowed to the plan's .11-.200",
			func() error { return nil },
			func() error {
				narrow := wide
				narrow.AllocationPools = []ranchercluster.AllocationPool{{Start: "10.9.0.11", End: "10.9.0.200"}}
				_, created, err := c.EnsureSubnet(ctx, owner, net.ID, narrow)
				if err == nil && created {
					t.Error("subnet said created")
				}
				return err
			},
			[]string{"PUT /network/v2.0/subnets/" + sub.ID},
			func(inv openstacksim.Inventory) string {
				if len(inv.Subnets) != 1 || !slices.Equal(inv.Subnets[0].Pools, []openstacksim.Pool{{Start: "10.9.0.11", End: "10.9.0.200"}}) {
					return "subnets " + fmt.Sprint(inv.Subnets)
				}
				return ""
			}},
		{"a port without one of its groups gets it",
			func() error {
				if _, _, err := c.EnsureSecurityGroup(ctx, owner, ranchercluster.SecurityGroupPlan{Name: "cv-public"}); err != nil {
					return err
				}
				_, _, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "cv-lb", NetworkID: net.ID, SubnetID: sub.ID,
					FixedIP: "10.9.0.10", SecurityGroups: []string{"default"}})
				return err
			},
			func() error {
				_, created, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "cv-lb", NetworkID: net.ID, SubnetID: sub.ID,
					FixedIP: "10.9.0.10", SecurityGroups: []string{"default", "cv-public"}})
				if err == nil && created {
					t.Error("port said created")
				}
				return err
			},
			[]string{"PUT /network/v2.0/ports/"},
			func(inv openstacksim.Inventory) string {
				for _, port := range inv.Ports {
					if port.Name == "cv-lb" {
						if len(port.SecurityGroups) != 2 {
							return fmt.Sprintf("port groups %v, want default and cv-public", port.SecurityGroups)
						}
						return ""
					}
				}
				return "no port cv-lb"
			}},
		{"a router without its interface gets it",
			func() error {
				_, _, err := c.EnsureRouter(ctx, owner, ranchercluster.RouterPlan{Name: "cv-router", ExternalNetworkID: sim.ExternalNetworkID()}, "")
				return err
			},
			func() error {
				r, created, err := c.EnsureRouter(ctx, owner, ranchercluster.RouterPlan{Name: "cv-router", ExternalNetworkID: sim.ExternalNetworkID()}, sub.ID)
				if err == nil && (created || !slices.Equal(r.SubnetIDs, []string{sub.ID})) {
					t.Errorf("router %+v created %v", r, created)
				}
				return err
			},
			[]string{"PUT /network/v2.0/routers/"},
			func(inv openstacksim.Inventory) string {
				if len(inv.Routers) != 1 || len(inv.Routers[0].Interfaces) != 1 {
					return "routers " + fmt.Sprint(inv.Routers)
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.before(); err != nil {
				t.Fatal(err)
			}
			sim.ResetCalls()
			if err := tc.after(); err != nil {
				t.Fatal(err)
			}
			for _, w := range writes(sim) {
				if !slices.ContainsFunc(tc.writes, func(p string) bool { return strings.HasPrefix(w, p) }) {
					t.Errorf("unexpected write %s", w)
				}
			}
			if len(writes(sim)) == 0 {
				t.Error("nothing was completed")
			}
			if msg := tc.check(sim.Inventory(p.ID)); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestPortOnTheOrdersSubnet: a self-managed order names a subnet, not its
// network; EnsurePort finds the network (Neutron refuses a port without
// one), the port gets an address of that subnet, and a second Ensure
// adopts it.
func TestPortOnTheOrdersSubnet(t *testing.T) {
	ctx, sim, c, _ := tenantOnSim(t, "os-tenant-subnet-port", openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	net := ensured(c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "sm-net"})).of(t)
	sub, _, err := c.EnsureSubnet(ctx, owner, net.ID, ranchercluster.SubnetPlan{Name: "sm-sub", CIDR: "10.7.0.0/24", GatewayIP: "10.7.0.1",
		IPVersion: 4, EnableDHCP: true, AllocationPools: []ranchercluster.AllocationPool{{Start: "10.7.0.11", End: "10.7.0.200"}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		spec    openstack.PortSpec
		wantIP  string // "" any address of the subnet
		wantErr func(error) bool
	}{
		"a port given only the subnet is made on its network": {
			spec: openstack.PortSpec{Name: "sm-node-1", SubnetID: sub.ID},
		},
		"a fixed address given only the subnet": {
			spec:   openstack.PortSpec{Name: "sm-lb", SubnetID: sub.ID, FixedIP: "10.7.0.10"},
			wantIP: "10.7.0.10",
		},
		"a subnet that does not exist is not found, and nothing is made": {
			spec:    openstack.PortSpec{Name: "sm-node-2", SubnetID: "00000000-0000-4000-8000-00000000dead"},
			wantErr: openstack.IsNotFound,
		},
		"neither network nor subnet is refused before any call": {
			spec:    openstack.PortSpec{Name: "sm-node-3"},
			wantErr: func(err error) bool { return errors.Is(err, backend.ErrInvalid) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, created, err := c.EnsurePort(ctx, owner, tc.spec)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err = %v, want a refusal", err)
				}
				for _, x := range sim.Inventory("").Ports {
					if x.Name == tc.spec.Name {
						t.Errorf("port %s was made", x.Name)
					}
				}
				return
			}
			if err != nil || !created {
				t.Fatalf("EnsurePort = created %v, %v", created, err)
			}
			if p.NetworkID != net.ID || len(p.FixedIPs) != 1 || p.FixedIPs[0].SubnetID != sub.ID ||
				!strings.HasPrefix(p.FixedIPs[0].IPAddress, "10.7.0.") || (tc.wantIP != "" && p.FixedIPs[0].IPAddress != tc.wantIP) {
				t.Errorf("port %+v, want one on network %s with an address of subnet %s %s", p, net.ID, sub.ID, tc.wantIP)
			}
			again, created, err := c.EnsurePort(ctx, owner, tc.spec)
			if err != nil || created || again.ID != p.ID {
				t.Errorf("second EnsurePort = %s created %v, %v; want %s adopted", again.ID, created, err, p.ID)
			}
		})
	}
}

// TestQuotaIsTerminalAndNamesTheQuota: each service's quota refusal is a
// terminal ErrQuota whose message names the quota.
func TestQuotaIsTerminalAndNamesTheQuota(t *testing.T) {
	ctx, sim, c, p := tenantOnSim(t, "os-tenant-quota", openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	net := ensured(c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "q-net"})).of(t)
	boot := ensured(c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "q-boot", SizeGB: 1}})).of(t)
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
	ctx, sim, c, p := tenantOnSim(t, "os-tenant-faults", openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
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
