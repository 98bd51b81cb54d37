package openstack_test

import (
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// TestConnect logs in each way a zone's cloud can say, and refuses what
// cannot work with a terminal error.
func TestConnect(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	o := sim.Options()
	admin := func(authURL string) ranchercluster.Cloud {
		return ranchercluster.Cloud{AuthURL: authURL, Username: o.AdminUser, Password: config.Secret(o.AdminPassword),
			UserDomainName: "Default", ProjectName: o.AdminProject, ProjectDomainName: "Default",
			RegionName: openstacksim.DefaultRegion, Verify: true}
	}
	appCred, err := sim.AddApplicationCredential(o.AdminUser, sim.AdminProjectID(), "sitebus", "app-s3cret")
	if err != nil {
		t.Fatal(err)
	}

	// The same simulator behind TLS with its own certificate.
	tlsSrv := httptest.NewUnstartedServer(sim.Handler())
	// The refused handshake is the point of a case, not news.
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cloudsYAML := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(cloudsYAML, []byte("clouds:\n"+
		cloudEntry("sim", sim.AuthURL(), o, "")+
		cloudEntry("sim-tls", tlsSrv.URL+"/identity/v3", o, caFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsCloud := admin(tlsSrv.URL + "/identity/v3")
	tlsWithCA := tlsCloud
	tlsWithCA.CACert = caFile
	tlsNoVerify := tlsCloud
	tlsNoVerify.Verify = false
	wrongPassword := admin(sim.AuthURL())
	wrongPassword.Password = "not-the-password"

	for _, tc := range []struct {
		name  string
		cfg   openstack.Config
		fails string // "" logs in; else a terminal error containing it
	}{
		{"inline password", openstack.Config{Cloud: admin(sim.AuthURL())}, ""},
		{"clouds.yaml entry", openstack.Config{Cloud: ranchercluster.Cloud{Name: "sim"}, CloudsYAML: cloudsYAML}, ""},
		{"clouds.yaml entry over TLS with its cacert", openstack.Config{Cloud: ranchercluster.Cloud{Name: "sim-tls"}, CloudsYAML: cloudsYAML}, ""},
		{"application credential by id", openstack.Config{Cloud: ranchercluster.Cloud{AuthURL: sim.AuthURL(),
			AuthType: "v3applicationcredential", ApplicationCredentialID: appCred.ID, ApplicationCredentialSecret: "app-s3cret",
			Verify: true}}, ""},
		{"application credential by name and user", openstack.Config{Cloud: ranchercluster.Cloud{AuthURL: sim.AuthURL(),
			AuthType: "v3applicationcredential", ApplicationCredentialName: "sitebus", Username: o.AdminUser,
			UserDomainName: "Default", ApplicationCredentialSecret: "app-s3cret", Verify: true}}, ""},
		{"TLS with the cloud's cacert", openstack.Config{Cloud: tlsWithCA}, ""},
		{"TLS with verify false", openstack.Config{Cloud: tlsNoVerify}, ""},
		{"TLS verified by default refuses an unknown certificate", openstack.Config{Cloud: tlsCloud}, "certificate"},
		{"a wrong password", openstack.Config{Cloud: wrongPassword}, "401"},
		{"a clouds.yaml entry that is not there", openstack.Config{Cloud: ranchercluster.Cloud{Name: "nope"}, CloudsYAML: cloudsYAML}, `"nope"`},
		{"a region the catalog lacks", openstack.Config{Cloud: admin(sim.AuthURL()), Region: "RegionTwo"}, "RegionTwo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast(&tc.cfg)
			c, err := openstack.Connect(ctxT(t), tc.cfg)
			if tc.fails == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.ProjectID() != sim.AdminProjectID() || c.UserID() == "" {
					t.Fatalf("project %q user %q", c.ProjectID(), c.UserID())
				}
				if _, err := c.Flavors(ctxT(t)); err != nil {
					t.Fatalf("a call after login: %v", err)
				}
				return
			}
			if err == nil || !fault.IsTerminal(err) || !strings.Contains(err.Error(), tc.fails) {
				t.Fatalf("err %v, want terminal mentioning %s", err, tc.fails)
			}
			if strings.Contains(err.Error(), o.AdminPassword) || strings.Contains(err.Error(), "not-the-password") {
				t.Fatalf("err %q shows a password", err)
			}
		})
	}

	t.Run("an application credential cannot act in a new project", func(t *testing.T) {
		cfg := openstack.Config{Cloud: ranchercluster.Cloud{AuthURL: sim.AuthURL(), AuthType: "v3applicationcredential",
			ApplicationCredentialID: appCred.ID, ApplicationCredentialSecret: "app-s3cret", Verify: true}}
		fast(&cfg)
		c, err := openstack.Connect(ctxT(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := ensured(c.EnsureProject(ctxT(t), openstack.Owner(resourceUUID), "os-tenant-appcred", "")).of(t)
		_, err = c.Scoped(ctxT(t), p)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "application credential") {
			t.Fatalf("err %v, want terminal naming the application credential", err)
		}
	})
}

// TestAnExpiredTokenIsRenewed: a saga outlives its tokens; the admin's
// and the tenant's clients log in again by themselves.
func TestAnExpiredTokenIsRenewed(t *testing.T) {
	sim := newSim(t, openstacksim.Options{})
	s := settings(t, sim, 1)
	admin := connect(t, s, s.OpenStackOfferings[0])
	owner := openstack.Owner(resourceUUID)
	ctx := ctxT(t)
	p, c := scopedProject(t, ctx, admin, owner, "os-tenant-tokens", "")
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
	ctx, _, c, _ := tenantOnSim(t, "os-tenant-slow", openstacksim.Options{BuildPolls: 1 << 20}, func(cfg *openstack.Config) { cfg.ServerTimeout = time.Millisecond })
	owner := openstack.Owner(resourceUUID)
	boot := ensured(c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: "slow-system", SizeGB: 1}})).of(t)
	srv := ensured(c.EnsureServer(ctx, owner, openstack.ServerSpec{Name: "slow-vm", FlavorID: "1", VolumeIDs: []string{boot.ID}})).of(t)
	_, err := c.WaitServerActive(ctx, srv.ID)
	if !errors.Is(err, openstack.ErrTimeout) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), "slow-vm") ||
		!strings.Contains(err.Error(), "BUILD") {
		t.Fatalf("err %v, want a terminal timeout naming slow-vm in BUILD", err)
	}
}

// TestAHangingCallIsRetryable: a call the API never answers ends at the
// request timeout, retryably.
func TestAHangingCallIsRetryable(t *testing.T) {
	ctx, sim, c, _ := tenantOnSim(t, "os-tenant-hang", openstacksim.Options{}, func(cfg *openstack.Config) { cfg.RequestTimeout = 200 * time.Millisecond })
	sim.AddFault(openstacksim.Fault{Method: http.MethodGet, PathPrefix: "/network/v2.0/networks", Delay: time.Hour, Count: 1})
	_, _, err := c.EnsureNetwork(ctx, openstack.Owner(resourceUUID), ranchercluster.NetworkPlan{Name: "hang-net"})
	if err == nil || fault.IsTerminal(err) {
		t.Fatalf("err %v, want retryable", err)
	}
}

// TestDeleteServerTakesItsVolumes: the volumes a server booted from go
// with it; its port stays for its own delete.
func TestDeleteServerTakesItsVolumes(t *testing.T) {
	ctx, sim, c, p := tenantOnSim(t, "os-tenant-vm", openstacksim.Options{})
	owner := openstack.Owner(resourceUUID)
	net := ensured(c.EnsureNetwork(ctx, owner, ranchercluster.NetworkPlan{Name: "vm-net"})).of(t)
	if _, _, err := c.EnsureSubnet(ctx, owner, net.ID, ranchercluster.SubnetPlan{Name: "vm-sub", CIDR: "10.7.0.0/24", IPVersion: 4,
		GatewayIP: "10.7.0.1", AllocationPools: []ranchercluster.AllocationPool{{Start: "10.7.0.11", End: "10.7.0.200"}}}); err != nil {
		t.Fatal(err)
	}
	port := ensured(c.EnsurePort(ctx, owner, openstack.PortSpec{Name: "vm", NetworkID: net.ID, SecurityGroups: []string{"default"}})).of(t)
	var vols []string
	for _, name := range []string{"vm-system", "vm-data-1"} {
		v := ensured(c.EnsureVolume(ctx, owner, openstack.VolumeSpec{VolumePlan: ranchercluster.VolumePlan{Name: name, SizeGB: 2}})).of(t)
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

// cloudEntry is one cloud of a clouds.yaml as the openstack CLI writes it,
// logging in as the simulator's admin; cacert is left out when empty.
func cloudEntry(name, authURL string, o openstacksim.Options, cacert string) string {
	e := "  " + name + ":\n    auth:\n      auth_url: " + authURL +
		"\n      username: " + o.AdminUser + "\n      password: " + o.AdminPassword +
		"\n      project_name: " + o.AdminProject +
		"\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: " +
		openstacksim.DefaultRegion + "\n"
	if cacert != "" {
		e += "    cacert: " + cacert + "\n"
	}
	return e
}
