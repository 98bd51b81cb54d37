package openstacksim_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// result is a call's value and error; must(call(...)).of(t) fails t on the
// error.
type result[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) of(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

// wantCode checks that err is an HTTP error with status.
func wantCode(t *testing.T, err error, status int) {
	t.Helper()
	if !gophercloud.ResponseCodeIs(err, status) {
		t.Fatalf("want HTTP %d, got %v", status, err)
	}
}

// admin authenticates as the simulator's admin, scoped to the admin
// project, the way the cluster-provisioner does.
func admin(t *testing.T, sim *openstacksim.Server) *gophercloud.ProviderClient {
	t.Helper()
	o := sim.Options()
	return must(openstack.AuthenticatedClient(ctxT(t), gophercloud.AuthOptions{
		IdentityEndpoint: sim.AuthURL(), Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"},
	})).of(t)
}

// clients are one provider's service clients.
type clients struct {
	provider                                  *gophercloud.ProviderClient
	identity, compute, network, volume, image *gophercloud.ServiceClient
}

func clientsOf(t *testing.T, p *gophercloud.ProviderClient) clients {
	t.Helper()
	eo := gophercloud.EndpointOpts{Region: openstacksim.DefaultRegion}
	return clients{
		provider: p,
		identity: must(openstack.NewIdentityV3(p, eo)).of(t),
		compute:  must(openstack.NewComputeV2(p, eo)).of(t),
		network:  must(openstack.NewNetworkV2(p, eo)).of(t),
		volume:   must(openstack.NewBlockStorageV3(p, eo)).of(t),
		image:    must(openstack.NewImageV2(p, eo)).of(t),
	}
}

// simWithTenant is a fresh simulator holding one tenant made as tenant
// makes it.
func simWithTenant(t *testing.T, name string) (*openstacksim.Server, *projects.Project, clients) {
	t.Helper()
	sim := openstacksim.NewTestServer(t, openstacksim.Options{})
	p, c := tenant(t, sim, name)
	return sim, p, c
}

// tenant makes a project with a member user, as Waldur's tenant create
// does, and returns the project and that user's clients scoped to it.
func tenant(t *testing.T, sim *openstacksim.Server, name string) (*projects.Project, clients) {
	t.Helper()
	ctx := ctxT(t)
	ac := clientsOf(t, admin(t, sim))
	p := must(projects.Create(ctx, ac.identity, projects.CreateOpts{Name: name, DomainID: "default"}).Extract()).of(t)
	u := must(users.Create(ctx, ac.identity, users.CreateOpts{Name: name + "-user", DomainID: "default",
		Password: "pw-" + name, DefaultProjectID: p.ID}).Extract()).of(t)
	page := must(roles.List(ac.identity, roles.ListOpts{Name: "member"}).AllPages(ctx)).of(t)
	rs := must(roles.ExtractRoles(page)).of(t)
	if len(rs) != 1 {
		t.Fatalf("roles named member: %+v", rs)
	}
	if err := roles.Assign(ctx, ac.identity, rs[0].ID, roles.AssignOpts{UserID: u.ID, ProjectID: p.ID}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	return tenantLogin(t, sim, p, name)
}

// tenantLogin authenticates as the user tenant made for p.
func tenantLogin(t *testing.T, sim *openstacksim.Server, p *projects.Project, name string) (*projects.Project, clients) {
	t.Helper()
	pc := must(openstack.AuthenticatedClient(ctxT(t), gophercloud.AuthOptions{
		IdentityEndpoint: sim.AuthURL(), Username: name + "-user", Password: "pw-" + name, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectID: p.ID},
	})).of(t)
	return p, clientsOf(t, pc)
}

func asErr(err error, target any) bool { return errors.As(err, target) }

// waitGone polls a deleted server until Nova answers 404; every request
// is a tick of the simulator's clock, so no sleeping is needed.
func waitGone(t *testing.T, c clients, id string) {
	t.Helper()
	for range 100 {
		_, err := servers.Get(ctxT(t), c.compute, id).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("server %s still there after 100 polls", id)
}
