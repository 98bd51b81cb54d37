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
