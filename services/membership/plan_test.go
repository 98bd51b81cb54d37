package membership

import (
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// TestPlanIsTheDryRunOfThePass: Plan lists each group the pass sets with
// the members it sets it to, sends nothing, and the pass run after it
// leaves each group with exactly those members.
func TestPlanIsTheDryRunOfThePass(t *testing.T) {
	team := []waldur.ProjectUser{user("alice", "PROJECT.ADMIN"), user("bob", "PROJECT.MEMBER"), user("carol", "PROJECT.MANAGER")}
	tests := map[string]struct {
		offering Offering
		res      waldur.Resource
		before   map[string][]string // group → members before
		want     map[string][]string // group → planned members
	}{
		"the Python agent's default role moves to the mapped roles": {
			offering: Offering{Groups: nsGroups, DefaultRole: backend.RoleReadOnly},
			res:      waldur.Resource{Slug: "alpha", BackendID: "alpha", State: waldur.ResourceStateOK},
			before:   map[string][]string{"ns_alpha_admin": nil, "ns_alpha_readwrite": nil, "ns_alpha_readonly": {"alice", "bob", "carol"}},
			want:     map[string][]string{"ns_alpha_admin": {"alice", "carol"}, "ns_alpha_readwrite": {"bob"}, "ns_alpha_readonly": nil},
		},
		"restrict_member_access plans every group empty": {
			offering: Offering{Groups: nsGroups},
			res:      waldur.Resource{Slug: "alpha", BackendID: "alpha", State: waldur.ResourceStateOK, RestrictMemberAccess: true},
			before:   map[string][]string{"ns_alpha_admin": {"alice"}, "ns_alpha_readwrite": nil, "ns_alpha_readonly": nil},
			want:     map[string][]string{"ns_alpha_admin": nil, "ns_alpha_readwrite": nil, "ns_alpha_readonly": nil},
		},
		"a Rancher project's child group holds the team": {
			offering: Offering{Backend: newPlatform("p-physics"), ProjectGroups: rancherGroups},
			res:      waldur.Resource{Slug: "physics-1", BackendID: "p-physics", ProjectSlug: "physics", ProjectUUID: projectUUID, State: waldur.ResourceStateOK},
			before:   map[string][]string{"c_cm1": nil, "project_physics_member": {"alice"}},
			want:     map[string][]string{"project_physics_member": {"alice", "bob", "carol"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.offering)
			for g, members := range tc.before {
				e.sib.setMembers(g, members...)
			}
			for _, u := range []string{"alice", "bob", "carol"} {
				e.sib.known[u] = true
			}
			tc.res.UUID = resUUID(1)
			e.w.add(tc.res, team...)
			plan, err := e.s.Plan(t.Context(), offeringHex)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(e.sib.commands()); n != 0 {
				t.Fatalf("Plan sent %d commands, want none", n)
			}
			got := map[string][]string{}
			for _, gm := range plan {
				got[gm.Group.Name] = gm.Members
			}
			if len(got) != len(tc.want) {
				t.Fatalf("planned groups %v, want %v", got, tc.want)
			}
			for g, want := range tc.want {
				if members := slices.Sorted(slices.Values(got[g])); !slices.Equal(members, want) {
					t.Errorf("plan of %s: %v, want %v", g, members, want)
				}
			}
			if _, err := e.sync(t, resUUID(1), false); err != nil {
				t.Fatal(err)
			}
			for g, want := range tc.want {
				if members := e.sib.members(g); !slices.Equal(members, want) {
					t.Errorf("the pass left %s with %v, the plan said %v", g, members, want)
				}
			}
		})
	}
}

func TestPlanOfAnOfferingNotHereIsAnError(t *testing.T) {
	e := newEnv(t, Offering{Groups: nsGroups})
	if _, err := e.s.Plan(t.Context(), "ffff"); err == nil {
		t.Error("Plan = nil error, want one")
	}
}
