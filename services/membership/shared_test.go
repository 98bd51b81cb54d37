package membership

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func TestSyncResourceRecreatesMissingGroups(t *testing.T) {
	ensure, set := "keycloak-sync ensure-groups", "keycloak-sync set-group-members"
	tests := map[string]struct {
		missing  []string // groups deleted (by hand, by a cleanup) before the sync
		noObject bool     // the namespace is not there
		wantCmds []string
		wantMade float64
	}{
		"groups of a resource whose object is gone are not made again": {
			missing:  []string{"ns_alpha_admin", "ns_alpha_readwrite", "ns_alpha_readonly"},
			noObject: true,
			wantCmds: []string{set},
		},
		"a group deleted by hand is made again with its members": {
			missing:  []string{"ns_alpha_readonly"},
			wantCmds: []string{set, set, set, ensure, set},
			wantMade: 1,
		},
		"every group gone is made again in one request": {
			missing:  []string{"ns_alpha_admin", "ns_alpha_readwrite", "ns_alpha_readonly"},
			wantCmds: []string{set, ensure, set, set, set},
			wantMade: 3,
		},
		"groups that are there are only filled": {
			wantCmds: []string{set, set, set},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := newPlatform("ns-alpha")
			if tc.noObject {
				p = newPlatform()
			}
			e := newEnv(t, Offering{Groups: nsGroups, DefaultRole: backend.RoleReadOnly, Backend: p})
			for _, g := range nsGroups(&waldur.Resource{Slug: "alpha"}) {
				if !slices.Contains(tc.missing, g.Name) {
					e.sib.setMembers(g.Name)
				}
			}
			e.sib.known["alice"], e.sib.known["bob"], e.sib.known["carol"] = true, true, true
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "alpha", State: waldur.ResourceStateOK},
				user("alice", "PROJECT.ADMIN"), user("bob", "PROJECT.MEMBER"), user("carol", "PROJECT.GUEST"))
			if _, err := e.sync(t, resUUID(1), false); err != nil {
				t.Fatal(err)
			}
			if got := e.sib.commands(); !slices.Equal(got, tc.wantCmds) {
				t.Errorf("commands %v, want %v", got, tc.wantCmds)
			}
			for g, want := range map[string]string{"ns_alpha_admin": "alice", "ns_alpha_readwrite": "bob", "ns_alpha_readonly": "carol"} {
				if tc.noObject {
					if e.sib.hasGroup(g) {
						t.Errorf("%s made for a resource without its namespace", g)
					}
					continue
				}
				if got := e.sib.members(g); !slices.Equal(got, []string{want}) {
					t.Errorf("%s holds %v, want [%s]", g, got, want)
				}
			}
			if got := testutil.ToFloat64(e.s.recreated); got != tc.wantMade {
				t.Errorf("groups recreated %v, want %v", got, tc.wantMade)
			}
		})
	}
}

// The Rancher child group is named by the Waldur project, so every
// resource of that project on the cluster shares it (the Python Rancher
// plugin's one group per Waldur project): it holds the union of their
// members, whichever resource is synced.
func TestSharedProjectGroupHoldsTheUnionOfTheProjectsLiveResources(t *testing.T) {
	const child = "project_physics_member"
	const otherProject = "7b7b7b7b-7b7b-4b7b-8b7b-7b7b7b7b7b7b"
	sibling := func(i int, restrict bool, state, project string) waldur.Resource {
		slug := "physics"
		if project != projectUUID {
			slug = "chemistry"
		}
		return waldur.Resource{UUID: resUUID(i), Slug: "physics-" + string(rune('0'+i)), BackendID: "p-physics-" + string(rune('0'+i)),
			ProjectSlug: slug, ProjectUUID: project, State: state, RestrictMemberAccess: restrict}
	}
	tests := map[string]struct {
		second waldur.Resource // the first: alice's, restricted
		want   []string
	}{
		"a restricted resource keeps its sibling's users in the group": {
			second: sibling(2, false, waldur.ResourceStateOK, projectUUID),
			want:   []string{"bob"},
		},
		"an erred sibling still grants access": {
			second: sibling(2, false, waldur.ResourceStateErred, projectUUID),
			want:   []string{"bob"},
		},
		"both restricted empty the group": {
			second: sibling(2, true, waldur.ResourceStateOK, projectUUID),
		},
		"a sibling being terminated grants nothing": {
			second: sibling(2, false, waldur.ResourceStateTerminating, projectUUID),
		},
		"a resource of another Waldur project grants nothing": {
			second: sibling(2, false, waldur.ResourceStateOK, otherProject),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := newPlatform("p-physics-1", "p-physics-2")
			e := newEnv(t, Offering{Backend: p, ProjectGroups: rancherGroups})
			e.sib.setMembers("c_cm1")
			e.sib.setMembers(child, append([]string{"alice"}, tc.want...)...)
			e.sib.known["alice"], e.sib.known["bob"] = true, true
			p.bind(child, "p-physics-1", "p-physics-2")
			e.w.add(sibling(1, true, waldur.ResourceStateOK, projectUUID), user("alice", "PROJECT.ADMIN"))
			e.w.add(tc.second, user("bob", "PROJECT.MEMBER"))
			// Several periods, each syncing both resources: the group
			// settles at the first sync and never changes after it.
			var removed []int32
			for period := range 3 {
				for _, r := range []string{resUUID(1), resUUID(2)} {
					resp, err := e.s.syncResource(t.Context(), e.offering, r, fmt.Sprintf("periodic:%d:%s", period, r), false)
					if err != nil {
						t.Fatal(err)
					}
					removed = append(removed, resp.Removed)
					if got := e.sib.members(child); !slices.Equal(got, tc.want) {
						t.Fatalf("after syncing %s the group holds %v, want %v", r, got, tc.want)
					}
				}
			}
			if slices.ContainsFunc(removed[1:], func(n int32) bool { return n > 0 }) {
				t.Errorf("members removed by later syncs %v: the group flaps", removed)
			}
		})
	}
}

// A periodic pass reads each team once and lists each Waldur project once,
// however many resources share the project's group.
func TestPeriodicPassReadsEachTeamOnce(t *testing.T) {
	p := newPlatform("p-1", "p-2", "p-3", "p-4")
	e := newEnv(t, Offering{Backend: p, ProjectGroups: rancherGroups})
	e.sib.setMembers("c_cm1")
	e.sib.setMembers("project_physics_member")
	for i := 1; i <= 4; i++ {
		e.sib.known[fmt.Sprintf("u%d", i)] = true
		p.bind("project_physics_member", fmt.Sprintf("p-%d", i))
		e.w.add(waldur.Resource{UUID: resUUID(i), Slug: fmt.Sprintf("r%d", i), BackendID: fmt.Sprintf("p-%d", i), ProjectSlug: "physics",
			ProjectUUID: projectUUID, State: waldur.ResourceStateOK}, user(fmt.Sprintf("u%d", i), "PROJECT.MEMBER"))
	}
	e.s.syncOffering(t.Context(), e.offering, time.Now())
	if got := e.sib.members("project_physics_member"); !slices.Equal(got, []string{"u1", "u2", "u3", "u4"}) {
		t.Errorf("group holds %v", got)
	}
	lists := 0
	for _, f := range e.w.filters {
		if f.ProjectUUID == projectUUID {
			lists++
		}
	}
	if e.w.teamReads != 4 || lists != 1 {
		t.Errorf("%d team reads and %d project listings for a pass over 4 resources of one project, want 4 and 1", e.w.teamReads, lists)
	}
}

// A sync of one resource reads the shared child group first: adding its
// own members never breaks the union, so the siblings' teams are read only
// for a member the resource does not want, which stays when another live
// resource of the Waldur project wants it.
func TestSharedProjectGroupReadsSiblingsOnlyForARemoval(t *testing.T) {
	const child = "project_physics_member"
	tests := map[string]struct {
		group     []string // the child group's members before the sync
		team      []string // the synced resource's team; its sibling's is bob
		want      []string
		teamReads int // its own team, plus the sibling's when read
		removed   int32
	}{
		"an add-only sync reads no sibling's team": {
			group: []string{"alice"}, team: []string{"alice", "carol"},
			want: []string{"alice", "carol"}, teamReads: 1,
		},
		"a sync that changes nothing reads no sibling's team": {
			group: []string{"alice", "bob"}, team: []string{"alice", "bob"},
			want: []string{"alice", "bob"}, teamReads: 1,
		},
		"a removal candidate a sibling wants stays": {
			group: []string{"alice", "bob"}, team: []string{"alice"},
			want: []string{"alice", "bob"}, teamReads: 2,
		},
		"a removal candidate nobody wants is removed": {
			group: []string{"alice", "bob", "zed"}, team: []string{"alice"},
			want: []string{"alice", "bob"}, teamReads: 2, removed: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := newPlatform("p-physics-1", "p-physics-2")
			e := newEnv(t, Offering{Backend: p, ProjectGroups: rancherGroups})
			e.sib.setMembers("c_cm1")
			e.sib.setMembers(child, tc.group...)
			for _, u := range []string{"alice", "bob", "carol", "zed"} {
				e.sib.known[u] = true
			}
			p.bind(child, "p-physics-1", "p-physics-2")
			var team []waldur.ProjectUser
			for _, u := range tc.team {
				team = append(team, user(u, "PROJECT.MEMBER"))
			}
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "physics-1", BackendID: "p-physics-1", ProjectSlug: "physics",
				ProjectUUID: projectUUID, State: waldur.ResourceStateOK}, team...)
			e.w.add(waldur.Resource{UUID: resUUID(2), Slug: "physics-2", BackendID: "p-physics-2", ProjectSlug: "physics",
				ProjectUUID: projectUUID, State: waldur.ResourceStateOK}, user("bob", "PROJECT.MEMBER"))
			resp, err := e.sync(t, resUUID(1), false)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.sib.members(child); !slices.Equal(got, tc.want) {
				t.Errorf("group holds %v, want %v", got, tc.want)
			}
			if e.w.teamReads != tc.teamReads {
				t.Errorf("%d team reads, want %d", e.w.teamReads, tc.teamReads)
			}
			if resp.Removed != tc.removed {
				t.Errorf("%d removed, want %d", resp.Removed, tc.removed)
			}
		})
	}
}
