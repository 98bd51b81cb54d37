package openstacksim_test

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

// As Neutron's get_security_groups: an admin listing a tenant's groups
// makes its default group; deleting the Keystone project leaves it, and
// the tenant inventory shows it until an admin deletes it; a later list
// makes it again.
func TestListingATenantsGroupsMakesItsDefaultGroupThatOutlivesTheProject(t *testing.T) {
	sim := openstacksim.NewTestServer(t, openstacksim.Options{})
	ctx := ctxT(t)
	ac := clientsOf(t, admin(t, sim))
	p := must(projects.Create(ctx, ac.identity, projects.CreateOpts{Name: "fresh", DomainID: "default"}).Extract()).of(t)
	if n := sim.Tenants().Total(); n != 1 {
		t.Fatalf("a fresh tenant holds %d objects, want its project only", n)
	}
	list := func() []groups.SecGroup {
		t.Helper()
		return must(groups.ExtractGroups(must(groups.List(ac.network, groups.ListOpts{ProjectID: p.ID}).AllPages(ctx)).of(t))).of(t)
	}
	gs := list()
	if len(gs) != 1 || gs[0].Name != "default" || gs[0].ProjectID != p.ID {
		t.Fatalf("the tenant's groups: %+v", gs)
	}
	if again := list(); len(again) != 1 || again[0].ID != gs[0].ID {
		t.Fatalf("listed again: %+v, want the same one group", again)
	}
	if err := projects.Delete(ctx, ac.identity, p.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	inv := sim.Tenants()
	if inv.Total() != 1 || len(inv.SecurityGroups) != 1 || !inv.SecurityGroups[0].Default || !inv.Empty() {
		t.Fatalf("after the project's deletion: %d objects %+v; want the default group alone (which Empty ignores)", inv.Total(), inv)
	}
	if err := groups.Delete(ctx, ac.network, gs[0].ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if n := sim.Tenants().Total(); n != 0 {
		t.Fatalf("%d objects left", n)
	}
	// Neutron does not ask Keystone: listing a deleted project's groups
	// makes its default group again.
	if gs := list(); len(gs) != 1 || gs[0].Name != "default" || gs[0].ProjectID != p.ID {
		t.Fatalf("groups of a deleted project: %+v, want a new default group", gs)
	}
}
