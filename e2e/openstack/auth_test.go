package openstack_test

import (
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if err := os.WriteFile(cloudsYAML, []byte(`clouds:
  sim:
    auth:
      auth_url: `+sim.AuthURL()+`
      username: `+o.AdminUser+`
      password: `+o.AdminPassword+`
      project_name: `+o.AdminProject+`
      user_domain_name: Default
      project_domain_name: Default
    region_name: `+openstacksim.DefaultRegion+`
  sim-tls:
    auth:
      auth_url: `+tlsSrv.URL+`/identity/v3
      username: `+o.AdminUser+`
      password: `+o.AdminPassword+`
      project_name: `+o.AdminProject+`
      user_domain_name: Default
      project_domain_name: Default
    region_name: `+openstacksim.DefaultRegion+`
    cacert: `+caFile+`
`), 0o600); err != nil {
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
		p, _, err := c.EnsureProject(ctxT(t), openstack.Owner(resourceUUID), "os-tenant-appcred", "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Scoped(ctxT(t), p)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "application credential") {
			t.Fatalf("err %v, want terminal naming the application credential", err)
		}
	})
}
