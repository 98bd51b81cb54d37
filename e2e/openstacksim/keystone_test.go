package openstacksim_test

import (
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

func TestAuthentication(t *testing.T) {
	sim, p, _ := simWithTenant(t, "alpha")
	ac, err := sim.AddApplicationCredential("alpha-user", p.ID, "provisioner", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Options()
	for _, tc := range []struct {
		name   string
		opts   gophercloud.AuthOptions
		status int // 0: authenticates and reaches Neutron
	}{
		{name: "admin password scoped by project name and domain", opts: gophercloud.AuthOptions{
			Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"}}},
		{name: "user password scoped by project id", opts: gophercloud.AuthOptions{
			Username: "alpha-user", Password: "pw-alpha", DomainID: "default", Scope: &gophercloud.AuthScope{ProjectID: p.ID}}},
		{name: "user password unscoped falls back to the default project", opts: gophercloud.AuthOptions{
			Username: "alpha-user", Password: "pw-alpha", DomainName: "Default"}},
		{name: "application credential by id", opts: gophercloud.AuthOptions{
			ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: "s3cret"}},
		{name: "application credential by name and user", opts: gophercloud.AuthOptions{
			ApplicationCredentialName: "provisioner", ApplicationCredentialSecret: "s3cret", Username: "alpha-user", DomainName: "Default"}},
		{name: "wrong password", status: 401, opts: gophercloud.AuthOptions{
			Username: "alpha-user", Password: "nope", DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectID: p.ID}}},
		{name: "wrong application credential secret", status: 401, opts: gophercloud.AuthOptions{
			ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: "nope"}},
		{name: "project the user has no role on", status: 401, opts: gophercloud.AuthOptions{
			Username: "alpha-user", Password: "pw-alpha", DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"}}},
		{name: "unknown project", status: 401, opts: gophercloud.AuthOptions{
			Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: "nope", DomainName: "Default"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.IdentityEndpoint = sim.AuthURL()
			pc, err := openstack.AuthenticatedClient(ctxT(t), tc.opts)
			if tc.status != 0 {
				wantCode(t, err, tc.status)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := clientsOf(t, pc)
			if _, err := networks.List(c.network, nil).AllPages(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAuthenticationDiscoversTheVersionFromTheUnversionedURL(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{})
	o := sim.Options()
	pc := must(openstack.AuthenticatedClient(ctxT(t), gophercloud.AuthOptions{
		IdentityEndpoint: sim.URL() + "/identity", Username: o.AdminUser, Password: o.AdminPassword,
		DomainName: "Default", TenantName: o.AdminProject})).of(t)
	if pc.TokenID == "" {
		t.Fatal("no token")
	}
}

func TestBadTokensAre401(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{})
	c := clientsOf(t, admin(t, sim))
	t.Run("unknown token", func(t *testing.T) {
		c.provider.SetToken("gAAAAAnotatoken")
		_, err := networks.List(c.network, nil).AllPages(ctxT(t))
		wantCode(t, err, http.StatusUnauthorized)
	})
	t.Run("expired token", func(t *testing.T) {
		c := clientsOf(t, admin(t, sim))
		sim.ExpireTokens()
		_, err := networks.List(c.network, nil).AllPages(ctxT(t))
		wantCode(t, err, http.StatusUnauthorized)
	})
	t.Run("expired token re-authenticates when allowed", func(t *testing.T) {
		o := sim.Options()
		pc := must(openstack.AuthenticatedClient(ctxT(t), gophercloud.AuthOptions{
			IdentityEndpoint: sim.AuthURL(), Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"}, AllowReauth: true})).of(t)
		c := clientsOf(t, pc)
		sim.ExpireTokens()
		if _, err := networks.List(c.network, nil).AllPages(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIdentityAdministration(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{})
	ctx := ctxT(t)
	ac := clientsOf(t, admin(t, sim))
	p, tc := tenant(t, sim, "beta")

	t.Run("duplicate project name in a domain is 409", func(t *testing.T) {
		_, err := projects.Create(ctx, ac.identity, projects.CreateOpts{Name: "beta", DomainID: "default"}).Extract()
		wantCode(t, err, http.StatusConflict)
	})
	t.Run("duplicate user name in a domain is 409", func(t *testing.T) {
		_, err := users.Create(ctx, ac.identity, users.CreateOpts{Name: "beta-user", DomainID: "default"}).Extract()
		wantCode(t, err, http.StatusConflict)
	})
	t.Run("a member cannot create projects", func(t *testing.T) {
		_, err := projects.Create(ctx, tc.identity, projects.CreateOpts{Name: "gamma"}).Extract()
		wantCode(t, err, http.StatusForbidden)
	})
	t.Run("list by name", func(t *testing.T) {
		page := must(projects.List(ac.identity, projects.ListOpts{Name: "beta"}).AllPages(ctx)).of(t)
		ps := must(projects.ExtractProjects(page)).of(t)
		if len(ps) != 1 || ps[0].ID != p.ID {
			t.Fatalf("projects named beta: %+v", ps)
		}
	})
	t.Run("deleting the project revokes its tokens and leaves the user", func(t *testing.T) {
		if err := projects.Delete(ctx, ac.identity, p.ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		_, err := networks.List(tc.network, nil).AllPages(ctx)
		wantCode(t, err, http.StatusUnauthorized)
		inv := sim.Inventory("")
		if len(inv.Projects) != 0 || len(inv.Users) != 1 {
			t.Fatalf("inventory: %d projects, %d users", len(inv.Projects), len(inv.Users))
		}
		if err := users.Delete(ctx, ac.identity, inv.Users[0].ID).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		if inv := sim.Inventory(""); !inv.Empty() {
			t.Fatalf("left behind: %+v", inv)
		}
	})
}
