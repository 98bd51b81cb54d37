package membership

import (
	"fmt"
	"testing"

	"github.com/sitebus/sitebus/pkg/waldur"
)

// PlanBindings gives, per live resource with an object and a slug, the users the
// pass binds with their Waldur roles, and binds nothing; a
// backend that does not bind users itself has no plan.
func TestPlanBindingsIsTheDryRunOfThePassBindings(t *testing.T) {
	p := &okd{platform: newPlatform("a", "b")}
	e := newEnv(t, Offering{Backend: p})
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "a", BackendID: "a", ProjectUUID: projectUUID, State: waldur.ResourceStateOK},
		user("alice", "PROJECT.ADMIN"), user("bob", "PROJECT.MEMBER"))
	e.w.add(waldur.Resource{UUID: resUUID(2), Slug: "b", BackendID: "b", ProjectUUID: projectUUID, State: waldur.ResourceStateErred},
		user("alice", "PROJECT.MANAGER"))
	e.w.add(waldur.Resource{UUID: resUUID(3), Slug: "c", ProjectUUID: projectUUID, State: waldur.ResourceStateCreating}, user("alice", "PROJECT.ADMIN"))
	// Without a slug the pass does not sync it, so binds nothing in it.
	e.w.add(waldur.Resource{UUID: resUUID(4), BackendID: "d", ProjectUUID: projectUUID, State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))

	plan, err := e.s.PlanBindings(t.Context(), e.offering.Config.OfferingUUIDHex())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]ResourceBindings{
		{Resource: resUUID(1), BackendID: "a", Users: map[string]string{"alice": "PROJECT.ADMIN", "bob": "PROJECT.MEMBER"}},
		{Resource: resUUID(2), BackendID: "b", Users: map[string]string{"alice": "PROJECT.MANAGER"}},
	})
	if fmt.Sprint(plan) != want {
		t.Errorf("plan %v, want %v", plan, want)
	}
	if len(p.bindings) != 0 {
		t.Errorf("the dry run bound %v", p.bindings)
	}

	plain := newEnv(t, Offering{Backend: newPlatform("a")})
	plain.w.add(waldur.Resource{UUID: resUUID(1), Slug: "a", BackendID: "a", ProjectUUID: projectUUID, State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
	if plan, err := plain.s.PlanBindings(t.Context(), plain.offering.Config.OfferingUUIDHex()); err != nil || plan != nil {
		t.Errorf("a backend without bindings: plan %v, err %v; want none", plan, err)
	}
}

// PlanGroupBindings gives, per resource with a slug, its project and child
// group when the child group has members (the union of the Waldur
// project's teams), as the pass binds it; a project whose teams are all
// empty gets none, and the dry run binds nothing.
func TestPlanGroupBindingsIsTheDryRunOfThePassGroupBindings(t *testing.T) {
	p := newPlatform("p-physics-1", "p-physics-2", "p-bio")
	e := newEnv(t, Offering{Backend: p, ProjectGroups: rancherGroups})
	e.sib.known["alice"] = true
	const bioUUID = "0b1a2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "physics-1", BackendID: "p-physics-1", ProjectSlug: "physics", ProjectUUID: projectUUID, State: waldur.ResourceStateOK},
		user("alice", "PROJECT.ADMIN"))
	// No team of its own: the Waldur project's child group still binds.
	e.w.add(waldur.Resource{UUID: resUUID(2), Slug: "physics-2", BackendID: "p-physics-2", ProjectSlug: "physics", ProjectUUID: projectUUID, State: waldur.ResourceStateOK})
	e.w.add(waldur.Resource{UUID: resUUID(3), Slug: "bio", BackendID: "p-bio", ProjectSlug: "bio", ProjectUUID: bioUUID, State: waldur.ResourceStateOK})

	plan, err := e.s.PlanGroupBindings(t.Context(), e.offering.Config.OfferingUUIDHex())
	if err != nil {
		t.Fatal(err)
	}
	child := rancherGroups("physics")[1]
	want := fmt.Sprint([]ProjectGroupBinding{
		{Resource: resUUID(1), BackendID: "p-physics-1", Group: child},
		{Resource: resUUID(2), BackendID: "p-physics-2", Group: child},
	})
	if fmt.Sprint(plan) != want {
		t.Errorf("plan %v, want %v", plan, want)
	}
	if got := p.binds(); len(got) != 0 {
		t.Errorf("the dry run bound %v", got)
	}
	if n := len(e.sib.commands()); n != 0 {
		t.Errorf("the dry run sent %d commands", n)
	}
}
