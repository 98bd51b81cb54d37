package app

import (
	"context"
	"reflect"
	"testing"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/services/membership"
)

// realm is Keycloak's groups (by name; no parents) and users as the dry
// run reads them.
type realm struct {
	groups  map[string]*keycloak.Group
	members map[string][]string // group id → usernames
	users   map[string]bool
	lookups map[string]int // username → FindUser calls
}

func (r *realm) FindGroup(_ context.Context, name, _ string) (*keycloak.Group, error) {
	return r.groups[name], nil
}

func (r *realm) FindUser(_ context.Context, ref string, _ bool) (*keycloak.User, error) {
	if r.lookups != nil {
		r.lookups[ref]++
	}
	if !r.users[ref] {
		return nil, nil
	}
	return &keycloak.User{ID: "id-" + ref, Username: ref}, nil
}

func (r *realm) Members(_ context.Context, id string) ([]keycloak.User, error) {
	var out []keycloak.User
	for _, u := range r.members[id] {
		out = append(out, keycloak.User{ID: "id-" + u, Username: u})
	}
	return out, nil
}

func TestMembershipMoves(t *testing.T) {
	managed := func(name string) *keycloak.Group { return &keycloak.Group{ID: name, Name: name, Managed: true} }
	planned := func(group string, members ...string) membership.GroupMembers {
		return membership.GroupMembers{Resource: "r1", Group: contract.GroupSpec{Name: group}, Members: members}
	}
	tests := map[string]struct {
		groups     map[string]*keycloak.Group
		members    map[string][]string
		plan       []membership.GroupMembers
		wantMoves  []MembershipMove
		wantGroups []GroupChange
	}{
		"a role mapped unlike the Python agent moves the user between groups": {
			groups:    map[string]*keycloak.Group{"ns_a_admin": managed("ns_a_admin"), "ns_a_readonly": managed("ns_a_readonly")},
			members:   map[string][]string{"ns_a_readonly": {"alice", "bob"}},
			plan:      []membership.GroupMembers{planned("ns_a_admin", "alice"), planned("ns_a_readonly", "bob")},
			wantMoves: []MembershipMove{{Resource: "r1", User: "alice", From: "ns_a_readonly", To: "ns_a_admin"}},
		},
		"a new team member is added and one who left is removed": {
			groups:  map[string]*keycloak.Group{"ns_a_admin": managed("ns_a_admin")},
			members: map[string][]string{"ns_a_admin": {"zed"}},
			plan:    []membership.GroupMembers{planned("ns_a_admin", "alice")},
			wantMoves: []MembershipMove{
				{Resource: "r1", User: "alice", To: "ns_a_admin"},
				{Resource: "r1", User: "zed", From: "ns_a_admin"},
			},
		},
		"a user Keycloak does not know is pending": {
			groups:    map[string]*keycloak.Group{"ns_a_admin": managed("ns_a_admin")},
			plan:      []membership.GroupMembers{planned("ns_a_admin", "newcomer")},
			wantMoves: []MembershipMove{{Resource: "r1", User: "newcomer", To: "ns_a_admin", Pending: true}},
		},
		"a missing group is made again": {
			plan:       []membership.GroupMembers{planned("ns_a_admin", "alice")},
			wantGroups: []GroupChange{{Resource: "r1", Group: "ns_a_admin", Action: "create", Members: 1}},
		},
		"a group without a managed_by mark is refused": {
			groups:     map[string]*keycloak.Group{"ns_a_admin": {ID: "g", Name: "ns_a_admin"}},
			plan:       []membership.GroupMembers{planned("ns_a_admin", "alice")},
			wantGroups: []GroupChange{{Resource: "r1", Group: "ns_a_admin", Action: "refuse"}},
		},
		"a group as planned changes nothing": {
			groups:  map[string]*keycloak.Group{"ns_a_admin": managed("ns_a_admin")},
			members: map[string][]string{"ns_a_admin": {"alice"}},
			plan:    []membership.GroupMembers{planned("ns_a_admin", "alice")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kc := &realm{groups: tc.groups, members: tc.members, users: map[string]bool{"alice": true, "bob": true, "zed": true}}
			moves, groups, err := MembershipMoves(context.Background(), kc, tc.plan)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(moves, tc.wantMoves) {
				t.Errorf("moves %+v, want %+v", moves, tc.wantMoves)
			}
			for i := range groups {
				groups[i].Reason = ""
			}
			if !reflect.DeepEqual(groups, tc.wantGroups) {
				t.Errorf("groups %+v, want %+v", groups, tc.wantGroups)
			}
		})
	}
}

// A person in many teams is looked up in Keycloak once per pass, found or
// not: each lookup is a call, and a site's staff are in hundreds of teams.
func TestMembershipMovesLooksEachUserUpOnce(t *testing.T) {
	r := &realm{groups: map[string]*keycloak.Group{}, users: map[string]bool{"alice": true}, lookups: map[string]int{}}
	var plan []membership.GroupMembers
	for _, g := range []string{"ns_a_admin", "ns_b_admin", "ns_c_readonly"} {
		r.groups[g] = &keycloak.Group{ID: g, Name: g, Managed: true}
		plan = append(plan, membership.GroupMembers{Resource: g, Group: contract.GroupSpec{Name: g}, Members: []string{"alice", "newcomer"}})
	}
	if _, _, err := MembershipMoves(context.Background(), r, plan); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"alice": 1, "newcomer": 1}; !reflect.DeepEqual(r.lookups, want) {
		t.Errorf("lookups %v, want %v", r.lookups, want)
	}
}
