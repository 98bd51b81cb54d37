package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func TestDesiredEdges(t *testing.T) {
	tests := map[string]struct {
		team        []waldur.ProjectUser
		defaultRole string
		want        map[string]string
	}{
		"a user without an offering account waits, the others go in": {
			team: []waldur.ProjectUser{user("alice", "PROJECT.ADMIN"), {Username: "bob", Role: "PROJECT.ADMIN"}, {Username: "carol", OfferingUserUsername: "  ", Role: "PROJECT.ADMIN"}},
			want: map[string]string{"alice": backend.RoleAdmin},
		},
		"an offering username is trimmed": {
			team: []waldur.ProjectUser{{OfferingUserUsername: " alice ", Role: "PROJECT.MEMBER"}},
			want: map[string]string{"alice": backend.RoleReadWrite},
		},
		"a role the mapping does not name takes the default role": {
			team:        []waldur.ProjectUser{user("alice", "CUSTOMER.SUPPORT")},
			defaultRole: backend.RoleReadOnly,
			want:        map[string]string{"alice": backend.RoleReadOnly},
		},
		"the stronger of two roles wins, whatever their order": {
			team: []waldur.ProjectUser{user("alice", "PROJECT.MANAGER"), user("alice", "PROJECT.MEMBER"), user("bob", "PROJECT.MEMBER"), user("bob", "PROJECT.MANAGER")},
			want: map[string]string{"alice": backend.RoleAdmin, "bob": backend.RoleAdmin},
		},
		"an empty team has nobody": {want: map[string]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			for ref, m := range Desired(tc.team, nil, tc.defaultRole, false) {
				got[ref] = m.Role
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if byRole := ByRole(nil); len(byRole) != len(backend.Roles) {
		t.Errorf("ByRole of nobody has roles %v, want every role present", byRole)
	}
}

func TestNewRefusesAnIncompleteOffering(t *testing.T) {
	cfg := &config.Offering{Name: "x", WaldurOfferingUUID: offeringUUID}
	for name, o := range map[string]Offering{
		"no config":  {Waldur: newWaldur(), Backend: newPlatform()},
		"no Waldur":  {Config: cfg, Backend: newPlatform()},
		"no backend": {Config: cfg, Waldur: newWaldur()},
	} {
		if _, err := New(nil, Config{Offerings: []Offering{o}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A ManagedNamespace offering with Keycloak: one group per access role.
func TestSyncResourceAccessGroups(t *testing.T) {
	team := []waldur.ProjectUser{user("alice", "PROJECT.ADMIN"), user("bob", "PROJECT.MEMBER"), user("carol", "PROJECT.GUEST"),
		{Username: "dave", Role: "PROJECT.ADMIN"}, user("newcomer", "PROJECT.MEMBER")}
	tests := map[string]struct {
		res      waldur.Resource
		mapping  map[string]string
		byID     bool
		before   func(e *env)
		want     map[string][]string // group → members afterwards
		wantResp *sitebusv1.SyncResourceResponse
		wantCmds int
	}{
		"each role's group holds the team members of that role; unknown users are pending": {
			res:      waldur.Resource{Slug: "alpha", State: waldur.ResourceStateOK},
			want:     map[string][]string{"ns_alpha_admin": {"alice"}, "ns_alpha_readwrite": {"bob"}, "ns_alpha_readonly": {"carol"}},
			wantResp: &sitebusv1.SyncResourceResponse{Added: 3, Removed: 1, Pending: 1},
			wantCmds: 3,
		},
		"a configured role mapping moves members between groups": {
			res:      waldur.Resource{Slug: "alpha", State: waldur.ResourceStateOK},
			mapping:  map[string]string{"PROJECT.MEMBER": backend.RoleReadOnly},
			want:     map[string][]string{"ns_alpha_admin": {"alice"}, "ns_alpha_readwrite": nil, "ns_alpha_readonly": {"bob", "carol"}},
			wantResp: &sitebusv1.SyncResourceResponse{Added: 3, Removed: 1, Pending: 1},
			wantCmds: 3,
		},
		"restrict_member_access empties every group": {
			res:      waldur.Resource{Slug: "alpha", State: waldur.ResourceStateOK, RestrictMemberAccess: true},
			want:     map[string][]string{"ns_alpha_admin": nil, "ns_alpha_readwrite": nil, "ns_alpha_readonly": nil},
			wantResp: &sitebusv1.SyncResourceResponse{Removed: 1},
			wantCmds: 3,
		},
		"a resource Waldur no longer has is done": {
			res: waldur.Resource{Slug: "alpha", State: waldur.ResourceStateOK},
			before: func(e *env) {
				e.w.mu.Lock()
				delete(e.w.resources, resUUID(1))
				e.w.mu.Unlock()
			},
			want:     map[string][]string{"ns_alpha_readwrite": {"zed"}},
			wantResp: &sitebusv1.SyncResourceResponse{},
		},
		"a terminating resource is left alone": {
			res:      waldur.Resource{Slug: "alpha", State: waldur.ResourceStateTerminating},
			want:     map[string][]string{"ns_alpha_readwrite": {"zed"}},
			wantResp: &sitebusv1.SyncResourceResponse{},
		},
		"a terminated resource is left alone": {
			res:      waldur.Resource{Slug: "alpha", State: waldur.ResourceStateTerminated},
			want:     map[string][]string{"ns_alpha_readwrite": {"zed"}},
			wantResp: &sitebusv1.SyncResourceResponse{},
		},
		"a resource without a slug has no groups": {
			res:      waldur.Resource{State: waldur.ResourceStateOK},
			want:     map[string][]string{"ns_alpha_readwrite": {"zed"}},
			wantResp: &sitebusv1.SyncResourceResponse{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, Offering{Groups: nsGroups, RoleMapping: tc.mapping, DefaultRole: backend.RoleReadOnly, UsersByID: tc.byID})
			for _, g := range []string{"ns_alpha_admin", "ns_alpha_readonly"} {
				e.sib.setMembers(g)
			}
			e.sib.setMembers("ns_alpha_readwrite", "zed")
			for _, u := range []string{"alice", "bob", "carol"} {
				e.sib.known[u] = true
			}
			tc.res.UUID = resUUID(1)
			e.w.add(tc.res, team...)
			if tc.before != nil {
				tc.before(e)
			}
			resp, err := e.sync(t, resUUID(1), false)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Added != tc.wantResp.Added || resp.Removed != tc.wantResp.Removed || resp.Pending != tc.wantResp.Pending {
				t.Errorf("answer %v, want %v", resp, tc.wantResp)
			}
			for g, want := range tc.want {
				if got := e.sib.members(g); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", g, got, want)
				}
			}
			if got := len(e.sib.commands()); got != tc.wantCmds {
				t.Errorf("%d commands sent, want %d: %v", got, tc.wantCmds, e.sib.calls)
			}
		})
	}
}

func TestSyncResourceSendsUsersByIDAndOneKeyPerGroup(t *testing.T) {
	e := newEnv(t, Offering{Groups: nsGroups, UsersByID: true})
	for _, g := range nsGroups(&waldur.Resource{Slug: "alpha"}) {
		e.sib.setMembers(g.Name)
	}
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "alpha", State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
	if _, err := e.sync(t, resUUID(1), false); err != nil {
		t.Fatal(err)
	}
	want := []string{"keycloak-sync set-group-members test:" + resUUID(1) + ":admin", "keycloak-sync set-group-members test:" + resUUID(1) + ":readwrite",
		"keycloak-sync set-group-members test:" + resUUID(1) + ":readonly"}
	if !slices.Equal(e.sib.calls, want) {
		t.Errorf("calls %v, want %v", e.sib.calls, want)
	}
	req := e.sib.reqs[0].(*sitebusv1.SetGroupMembersRequest)
	// if_exists: a missing group is made again (see TestSyncResourceRecreatesMissingGroups).
	if req.OfferingUuid != offeringHex || len(req.Members) != 1 || !req.Members[0].ById || req.Members[0].Ref != "alice" || !req.IfExists {
		t.Errorf("request %v", req)
	}
}

func TestSyncResourceErrors(t *testing.T) {
	tests := map[string]struct {
		change       func(e *env)
		wantTerminal bool
	}{
		"Waldur unavailable for the resource is retried": {
			change: func(e *env) { e.w.fail["GetResource"] = true },
		},
		"Waldur unavailable for the team is retried": {
			change: func(e *env) { e.w.fail["GetResourceTeam"] = true },
		},
		"Keycloak unavailable is retried": {
			change: func(e *env) { e.sib.down = true },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, Offering{Groups: nsGroups})
			for _, g := range nsGroups(&waldur.Resource{Slug: "alpha"}) {
				e.sib.setMembers(g.Name)
			}
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "alpha", State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
			tc.change(e)
			_, err := e.sync(t, resUUID(1), false)
			if err == nil || fault.IsTerminal(err) != tc.wantTerminal {
				t.Errorf("err = %v, want terminal %v", err, tc.wantTerminal)
			}
		})
	}
}

func TestSyncUsersToObject(t *testing.T) {
	team := []waldur.ProjectUser{user("alice", "PROJECT.ADMIN"), user("bob", "PROJECT.MEMBER"),
		{Username: "", OfferingUserUsername: "carol", Role: "PROJECT.MEMBER"}}
	tests := map[string]struct {
		field     string
		lowercase bool
		syncToCR  bool
		err       error
		want      map[string][]string
		wantErr   bool
	}{
		"by email, as the Python plugin does by default": {
			field: "email", syncToCR: true,
			want: map[string][]string{"admin": {"Alice@example.org"}, "readwrite": {"Bob@example.org"}},
		},
		"by email, lower-cased": {
			field: "email", lowercase: true, syncToCR: true,
			want: map[string][]string{"admin": {"alice@example.org"}, "readwrite": {"bob@example.org"}},
		},
		"by Waldur username; users without one are skipped": {
			field: "username", syncToCR: true,
			want: map[string][]string{"admin": {"alice-waldur"}, "readwrite": {"bob-waldur"}},
		},
		"no identity field names nobody": {
			field: "", syncToCR: true,
			want: map[string][]string{},
		},
		"without sync_users_to_cr the object is not written": {field: "email"},
		"the platform unavailable is an error": {
			field: "email", syncToCR: true, err: errors.New("kube-apiserver: 503"), wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := &managedNS{platform: newPlatform("ns-alpha"), err: tc.err}
			e := newEnv(t, Offering{Backend: p, SyncUsersToCR: tc.syncToCR, IdentityField: tc.field, IdentityLowercase: tc.lowercase})
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "alpha", State: waldur.ResourceStateOK}, team...)
			_, err := e.sync(t, resUUID(1), false)
			if (err != nil) != tc.wantErr || (err != nil && fault.IsTerminal(err)) {
				t.Fatalf("err = %v, want a retryable error: %v", err, tc.wantErr)
			}
			got, written := p.users["ns-alpha"]
			if written != (tc.want != nil) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("users %v (written: %v), want %v", got, written, tc.want)
			}
		})
	}
}

func TestSyncUsersToObjectEdges(t *testing.T) {
	p := &managedNS{platform: newPlatform()}
	e := newEnv(t, Offering{Backend: p, SyncUsersToCR: true, IdentityField: "email"})
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "gone", State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
	if _, err := e.sync(t, resUUID(1), false); err != nil {
		t.Errorf("a namespace that is not there: %v, want nothing to do", err)
	}
	p.idErr = fault.Errorf(fault.Invalid, "slug %q makes no namespace name", "gone")
	if _, err := e.sync(t, resUUID(1), false); !fault.IsTerminal(err) {
		t.Errorf("a slug that names no namespace: %v, want a terminal error", err)
	}
}

// OKD: a role binding per user, with the Waldur role.
func TestSyncRoleBindings(t *testing.T) {
	team := []waldur.ProjectUser{user("alice", "PROJECT.ADMIN"), user("bob", "PROJECT.MEMBER"), {Username: "dave", Role: "PROJECT.ADMIN"}}
	tests := map[string]struct {
		res          waldur.Resource
		err          error
		want         map[string]string
		wantErr      bool
		wantTerminal bool
	}{
		"every member with an account is bound with the role Waldur sends": {
			res:  waldur.Resource{BackendID: "physics"},
			want: map[string]string{"alice": "PROJECT.ADMIN", "bob": "PROJECT.MEMBER"},
		},
		"restrict_member_access removes every binding": {
			res:  waldur.Resource{BackendID: "physics", RestrictMemberAccess: true},
			want: map[string]string{},
		},
		"a resource without a project yet is bound after its create": {},
		"a project that is gone has nobody to grant access to": {
			res: waldur.Resource{BackendID: "gone"},
		},
		"a foreign project is reported, not retried": {
			res: waldur.Resource{BackendID: "physics"}, err: fmt.Errorf("project physics: %w", backend.ErrNotManaged),
			wantErr: true, wantTerminal: true,
		},
		"the platform unavailable is retried": {
			res: waldur.Resource{BackendID: "physics"}, err: errors.New("openshift: 503"),
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := &okd{platform: newPlatform("physics"), err: tc.err}
			e := newEnv(t, Offering{Backend: p})
			tc.res.UUID, tc.res.Slug, tc.res.State = resUUID(1), "physics", waldur.ResourceStateOK
			e.w.add(tc.res, team...)
			_, err := e.sync(t, resUUID(1), false)
			if (err != nil) != tc.wantErr || fault.IsTerminal(err) != tc.wantTerminal {
				t.Fatalf("err = %v, want error %v, terminal %v", err, tc.wantErr, tc.wantTerminal)
			}
			got, bound := p.bindings["physics"]
			if bound != (tc.want != nil) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("bindings %v (set: %v), want %v", got, bound, tc.want)
			}
		})
	}
}

// Rancher: the Waldur project's child group holds the whole team and is
// bound to the project; the last member leaving removes the binding and
// the emptied groups.
func TestSyncProjectGroups(t *testing.T) {
	const child = "project_physics_member"
	team := []waldur.ProjectUser{user("bob", "PROJECT.MEMBER"), user("alice", "PROJECT.ADMIN"), {Username: "dave", Role: "PROJECT.ADMIN"}}
	type want struct {
		cmds    []string
		binds   []string // the platform's bind and unbind calls
		members []string
		bound   []string
		groups  bool // the child group exists afterwards
		resp    *sitebusv1.SyncResourceResponse
		err     bool
		term    bool
	}
	ensure, set, del := "keycloak-sync ensure-groups", "keycloak-sync set-group-members", "keycloak-sync delete-groups"
	// Every sync reads the child group first (list-members).
	list := "keycloak-sync list-members"
	// Bindings go through the offering's backend (GroupBinder), not a command.
	bind, unbind := []string{"bind p-physics " + child}, []string{"unbind p-physics " + child}
	tests := map[string]struct {
		res     waldur.Resource
		team    []waldur.ProjectUser
		created bool
		// notBinder hides the platform's GroupBinder methods.
		notBinder bool
		before    func(e *env, p *platform)
		want      want
	}{
		"a team with members gets the groups, the binding and the members": {
			res: waldur.Resource{BackendID: "p-physics"}, team: team,
			want: want{cmds: []string{list, ensure, set}, binds: bind, members: []string{"alice", "bob"}, bound: []string{"p-physics"}, groups: true,
				resp: &sitebusv1.SyncResourceResponse{Added: 2, Removed: 1}},
		},
		"the create saga's team step neither looks the project up nor binds again": {
			res: waldur.Resource{}, team: team, created: true,
			before: func(e *env, p *platform) { p.existsErr = errors.New("must not be called") },
			want: want{cmds: []string{list, ensure, set}, members: []string{"alice", "bob"}, bound: []string{"p-physics"}, groups: true,
				resp: &sitebusv1.SyncResourceResponse{Added: 2, Removed: 1}},
		},
		"a resource without a backend id yet finds its project by name": {
			res: waldur.Resource{}, team: team,
			want: want{cmds: []string{list, ensure, set}, binds: bind, members: []string{"alice", "bob"}, bound: []string{"p-physics"}, groups: true,
				resp: &sitebusv1.SyncResourceResponse{Added: 2, Removed: 1}},
		},
		"a resource whose project is not there changes nothing": {
			res: waldur.Resource{BackendID: "p-other"}, team: team,
			want: want{cmds: []string{list}, groups: true, members: []string{"zed"}, bound: []string{"p-physics"}, resp: &sitebusv1.SyncResourceResponse{}},
		},
		"the last member leaving unbinds the group and deletes the emptied groups": {
			res: waldur.Resource{BackendID: "p-physics", RestrictMemberAccess: true}, team: team,
			want: want{cmds: []string{list, set, del}, binds: unbind, resp: &sitebusv1.SyncResourceResponse{Removed: 1}},
		},
		"the last member leaving keeps a group another project is still bound to": {
			res: waldur.Resource{BackendID: "p-physics"},
			before: func(e *env, p *platform) {
				p.bind(child, "p-physics", "p-physics-2")
			},
			want: want{cmds: []string{list, set}, binds: unbind, groups: true, bound: []string{"p-physics-2"}, resp: &sitebusv1.SyncResourceResponse{Removed: 1}},
		},
		"an empty team that removed nobody keeps what the create saga made": {
			res: waldur.Resource{BackendID: "p-physics"},
			before: func(e *env, p *platform) {
				e.sib.setMembers(child)
			},
			want: want{cmds: []string{list, set}, groups: true, bound: []string{"p-physics"}, resp: &sitebusv1.SyncResourceResponse{}},
		},
		"an empty team of a group that was never made is nothing to do": {
			res: waldur.Resource{BackendID: "p-physics"},
			before: func(e *env, p *platform) {
				e.sib.mu.Lock()
				delete(e.sib.groups, child)
				e.sib.mu.Unlock()
			},
			want: want{cmds: []string{list, set}, bound: []string{"p-physics"}, resp: &sitebusv1.SyncResourceResponse{}},
		},
		"a project that cannot be named is final": {
			res: waldur.Resource{}, team: team,
			before: func(e *env, p *platform) { p.idErr = fault.Errorf(fault.Invalid, "project slug too long") },
			want:   want{cmds: []string{list}, err: true, term: true, groups: true, members: []string{"zed"}, bound: []string{"p-physics"}},
		},
		"Rancher unavailable is retried": {
			res: waldur.Resource{BackendID: "p-physics"}, team: team,
			before: func(e *env, p *platform) { p.existsErr = errors.New("rancher: 503") },
			want:   want{cmds: []string{list}, err: true, groups: true, members: []string{"zed"}, bound: []string{"p-physics"}},
		},
		"Rancher failing to bind is retried before any member is added": {
			res: waldur.Resource{BackendID: "p-physics"}, team: team,
			before: func(e *env, p *platform) { p.bindErr = errors.New("rancher: 503") },
			want:   want{cmds: []string{list, ensure}, binds: bind, err: true, groups: true, members: []string{"zed"}, bound: []string{"p-physics"}},
		},
		"Rancher failing to unbind keeps the emptied groups for the retry": {
			res: waldur.Resource{BackendID: "p-physics", RestrictMemberAccess: true}, team: team,
			before: func(e *env, p *platform) { p.bindErr = errors.New("rancher: 503") },
			want:   want{cmds: []string{list, set}, binds: unbind, err: true, groups: true, bound: []string{"p-physics"}},
		},
		"a backend that binds no groups is final": {
			res: waldur.Resource{BackendID: "p-physics"}, team: team, notBinder: true,
			want: want{cmds: []string{list, ensure}, err: true, term: true, groups: true, members: []string{"zed"}, bound: []string{"p-physics"}},
		},
		"Keycloak unavailable is retried": {
			res: waldur.Resource{BackendID: "p-physics"}, team: team,
			before: func(e *env, p *platform) { e.sib.down = true },
			want:   want{cmds: []string{list}, err: true, groups: true, members: []string{"zed"}, bound: []string{"p-physics"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := newPlatform("p-physics")
			var be backend.Backend = p
			if tc.notBinder {
				be = struct{ backend.Backend }{p}
			}
			e := newEnv(t, Offering{Backend: be, ProjectGroups: rancherGroups})
			e.sib.setMembers("c_cm1")
			e.sib.setMembers(child, "zed")
			e.sib.known["alice"], e.sib.known["bob"] = true, true
			p.bind(child, "p-physics")
			tc.res.UUID, tc.res.Slug, tc.res.ProjectSlug, tc.res.State = resUUID(1), "physics-ns", "physics", waldur.ResourceStateOK
			e.w.add(tc.res, tc.team...)
			if tc.before != nil {
				tc.before(e, p)
			}
			resp, err := e.sync(t, resUUID(1), tc.created)
			if (err != nil) != tc.want.err || fault.IsTerminal(err) != tc.want.term {
				t.Fatalf("err = %v, want error %v, terminal %v", err, tc.want.err, tc.want.term)
			}
			// Keycloak being down makes every attempt the same command.
			if got := slices.Compact(e.sib.commands()); !slices.Equal(got, tc.want.cmds) {
				t.Errorf("commands %v, want %v", got, tc.want.cmds)
			}
			if got := e.sib.members(child); !slices.Equal(got, tc.want.members) {
				t.Errorf("child group members %v, want %v", got, tc.want.members)
			}
			if got := p.binds(); !slices.Equal(got, tc.want.binds) {
				t.Errorf("platform calls %v, want %v", got, tc.want.binds)
			}
			if got := p.bound(child); !slices.Equal(got, tc.want.bound) {
				t.Errorf("child group bound to %v, want %v", got, tc.want.bound)
			}
			if got := e.sib.hasGroup(child); got != tc.want.groups {
				t.Errorf("child group exists: %v, want %v", got, tc.want.groups)
			}
			if tc.want.resp != nil && (resp.Added != tc.want.resp.Added || resp.Removed != tc.want.resp.Removed || resp.Pending != tc.want.resp.Pending) {
				t.Errorf("answer %v, want %v", resp, tc.want.resp)
			}
		})
	}
}

func TestSyncProjectGroupsRequests(t *testing.T) {
	p := newPlatform("p-physics")
	e := newEnv(t, Offering{Backend: p, ProjectGroups: rancherGroups, UsersByID: true})
	e.sib.setMembers("project_physics_member", "zed")
	e.sib.known["alice"], e.sib.known["carol"] = true, true
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "physics-ns", ProjectSlug: "physics", BackendID: "p-physics", State: waldur.ResourceStateOK},
		user("carol", "PROJECT.MEMBER"), user("alice", "PROJECT.ADMIN"))
	if _, err := e.sync(t, resUUID(1), false); err != nil {
		t.Fatal(err)
	}
	key := "test:" + resUUID(1)
	wantCalls := []string{"keycloak-sync list-members " + key + ":members", "keycloak-sync ensure-groups " + key + ":groups", "keycloak-sync set-group-members " + key + ":child"}
	if !slices.Equal(e.sib.calls, wantCalls) {
		t.Fatalf("calls %v, want %v", e.sib.calls, wantCalls)
	}
	// The binding goes through the platform: the child group to the project.
	if got, want := p.binds(), []string{"bind p-physics project_physics_member"}; !slices.Equal(got, want) {
		t.Errorf("platform calls %v, want %v", got, want)
	}
	if list := e.sib.reqs[0].(*sitebusv1.ListMembersRequest); list.Group.ParentName != "c_cm1" || !list.IfExists {
		t.Errorf("list %v: the child under its parent, a missing one is no error", list)
	}
	ensure := e.sib.reqs[1].(*sitebusv1.EnsureGroupsRequest)
	if len(ensure.Groups) != 2 || ensure.Groups[0].Name != "c_cm1" || ensure.Groups[1].ParentName != "c_cm1" {
		t.Errorf("ensure %v: the parent first, the child under it", ensure.Groups)
	}
	set := e.sib.reqs[2].(*sitebusv1.SetGroupMembersRequest)
	if set.Group.ParentName != "c_cm1" || set.IfExists || len(set.Members) != 2 || set.Members[0].Ref != "alice" || !set.Members[0].ById {
		t.Errorf("set %v: the child under its parent, members sorted, by id", set)
	}

	// The team leaves: the cleanup request deletes the child, then the
	// parent only when empty.
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "physics-ns", ProjectSlug: "physics", BackendID: "p-physics", State: waldur.ResourceStateOK})
	e.sib.mu.Lock()
	e.sib.calls, e.sib.reqs = nil, nil
	e.sib.mu.Unlock()
	p.mu.Lock()
	p.bindCalls = nil
	p.mu.Unlock()
	// A sync of its own: the same key would get the first one's answers.
	key = "test2:" + resUUID(1)
	if _, err := e.s.syncResource(t.Context(), e.offering, resUUID(1), key, false); err != nil {
		t.Fatal(err)
	}
	wantCalls = []string{"keycloak-sync list-members " + key + ":members", "keycloak-sync set-group-members " + key + ":child", "keycloak-sync delete-groups " + key + ":cleanup"}
	if !slices.Equal(e.sib.calls, wantCalls) {
		t.Fatalf("calls %v, want %v", e.sib.calls, wantCalls)
	}
	if got, want := p.binds(), []string{"unbind p-physics project_physics_member"}; !slices.Equal(got, want) {
		t.Errorf("platform calls %v, want %v", got, want)
	}
	if set := e.sib.reqs[1].(*sitebusv1.SetGroupMembersRequest); !set.IfExists || len(set.Members) != 0 {
		t.Errorf("emptying set %v: only if the group exists", set)
	}
	del := e.sib.reqs[2].(*sitebusv1.DeleteGroupsRequest)
	if want := contract.ProjectGroupsCleanup(offeringHex, rancherGroups("physics")); !proto.Equal(del, want) {
		t.Errorf("delete %v, want %v", del, want)
	}
}

func event(t *testing.T, objectType string, body any) *sitebusv1.WaldurEvent {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return &sitebusv1.WaldurEvent{OfferingUuid: offeringHex, ObjectType: objectType, Body: raw}
}

func TestHandleEvent(t *testing.T) {
	otherProject := "7b7b7b7b-7b7b-4b7b-8b7b-7b7b7b7b7b7b"
	tests := map[string]struct {
		ev           func(t *testing.T) *sitebusv1.WaldurEvent
		change       func(e *env, f *foreignOKD)
		wantSynced   []string // backend ids whose bindings were set
		wantErr      bool
		wantTerminal bool
		wantFilter   *waldur.ResourceFilter
	}{
		"a resource event syncs that resource": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.Resource, map[string]any{"resource_uuid": resUUID(2)})
			},
			wantSynced: []string{"b"},
		},
		"a role change on a resource syncs that resource": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.UserRole, map[string]any{"resource_uuid": resUUID(3), "project_uuid": projectUUID})
			},
			wantSynced: []string{"c"},
		},
		"a role change in a project syncs the project's resources": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.UserRole, map[string]any{"project_uuid": projectUUID})
			},
			wantSynced: []string{"a", "b"},
			wantFilter: &waldur.ResourceFilter{OfferingUUID: offeringUUID, ProjectUUID: projectUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}},
		},
		"a role change naming no project syncs every resource of the offering": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.UserRole, map[string]any{"user_uuid": "u"})
			},
			wantSynced: []string{"a", "b", "c"},
			wantFilter: &waldur.ResourceFilter{OfferingUUID: offeringUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}},
		},
		"a resource that cannot be synced for good does not hold back the others": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.UserRole, map[string]any{"project_uuid": projectUUID})
			},
			change:     func(_ *env, f *foreignOKD) { f.foreign = "a" },
			wantSynced: []string{"b"},
		},
		"a resource that fails retryably makes the event come again": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.UserRole, map[string]any{"project_uuid": projectUUID})
			},
			change:  func(e *env, _ *foreignOKD) { e.w.fail["GetResourceTeam"] = true },
			wantErr: true,
		},
		"Waldur unable to list the project's resources makes the event come again": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.UserRole, map[string]any{"project_uuid": projectUUID})
			},
			change:  func(e *env, _ *foreignOKD) { e.w.fail["ListProviderResources"] = true },
			wantErr: true,
		},
		"a resource event without a resource is refused": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.Resource, map[string]any{"resource_uuid": "nope"})
			},
			wantErr: true, wantTerminal: true,
		},
		"a role event that is not JSON is refused": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return &sitebusv1.WaldurEvent{OfferingUuid: offeringHex, ObjectType: events.UserRole, Body: []byte("{")}
			},
			wantErr: true, wantTerminal: true,
		},
		"an order event is not membership's": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				return event(t, events.Order, map[string]any{"order_uuid": "x"})
			},
		},
		"an event of another offering is refused": {
			ev: func(t *testing.T) *sitebusv1.WaldurEvent {
				ev := event(t, events.Resource, map[string]any{"resource_uuid": resUUID(1)})
				ev.OfferingUuid = "00000000000040008000000000000000"
				return ev
			},
			wantErr: true, wantTerminal: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := &okd{platform: newPlatform("a", "b", "c")}
			f := &foreignOKD{okd: p}
			e := newEnv(t, Offering{Backend: f})
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "a", BackendID: "a", ProjectUUID: projectUUID, State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
			e.w.add(waldur.Resource{UUID: resUUID(2), Slug: "b", BackendID: "b", ProjectUUID: projectUUID, State: waldur.ResourceStateErred}, user("alice", "PROJECT.ADMIN"))
			e.w.add(waldur.Resource{UUID: resUUID(3), Slug: "c", BackendID: "c", ProjectUUID: otherProject, State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
			if tc.change != nil {
				tc.change(e, f)
			}
			err := e.s.handleEvent(t.Context(), tc.ev(t))
			if (err != nil) != tc.wantErr || fault.IsTerminal(err) != tc.wantTerminal {
				t.Fatalf("err = %v, want error %v, terminal %v", err, tc.wantErr, tc.wantTerminal)
			}
			var synced []string
			for id := range p.bindings {
				synced = append(synced, id)
			}
			slices.Sort(synced)
			if !slices.Equal(synced, tc.wantSynced) {
				t.Errorf("synced %v, want %v", synced, tc.wantSynced)
			}
			if tc.wantFilter != nil {
				if got := e.w.filters; len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(*tc.wantFilter) {
					t.Errorf("listed with %+v, want %+v", got, *tc.wantFilter)
				}
			}
		})
	}
}

// foreignOKD refuses the bindings of one project, as the OKD backend
// refuses a project sitebus did not make.
type foreignOKD struct {
	*okd
	foreign string
}

func (f *foreignOKD) SetRoleBindings(ctx context.Context, backendID string, users map[string]string) (bool, error) {
	if backendID == f.foreign {
		return false, fmt.Errorf("project %s has no sitebus label: %w", backendID, backend.ErrNotManaged)
	}
	return f.okd.SetRoleBindings(ctx, backendID, users)
}

// The periodic pass: every resource of the offering with a backend id,
// one failure not stopping the rest.
func TestSyncOffering(t *testing.T) {
	p := &okd{platform: newPlatform("a", "c")}
	e := newEnv(t, Offering{Backend: &foreignOKD{okd: p, foreign: "a"}})
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "a", BackendID: "a", State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
	e.w.add(waldur.Resource{UUID: resUUID(2), Slug: "b", State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
	e.w.add(waldur.Resource{UUID: resUUID(3), Slug: "c", BackendID: "c", State: waldur.ResourceStateErred}, user("alice", "PROJECT.ADMIN"))
	e.w.add(waldur.Resource{UUID: resUUID(4), Slug: "d", BackendID: "d", State: waldur.ResourceStateTerminated}, user("alice", "PROJECT.ADMIN"))
	e.s.syncOffering(t.Context(), e.s.offerings[offeringHex], time.Unix(1700000000, 0))
	if len(e.w.filters) != 1 || !e.w.filters[0].DropEmptyBackendID || !slices.Equal(e.w.filters[0].States, []string{waldur.ResourceStateOK, waldur.ResourceStateErred}) {
		t.Errorf("listed with %+v", e.w.filters)
	}
	if got := fmt.Sprint(p.bindings); got != "map[c:map[alice:PROJECT.ADMIN]]" {
		t.Errorf("bindings %s: want only c's (a is foreign, b has no object, d is terminated)", got)
	}
	// Waldur unavailable: nothing is synced, the next period tries again.
	p.bindings = nil
	e.w.fail["ListProviderResources"] = true
	e.s.syncOffering(t.Context(), e.s.offerings[offeringHex], time.Unix(1700000060, 0))
	if p.bindings != nil {
		t.Errorf("synced without a listing: %v", p.bindings)
	}
}

// The commands over the bus, as the saga coordinator sends them.
func TestSyncCommandsOverTheBus(t *testing.T) {
	p := newPlatform("p-physics")
	e := newEnv(t, Offering{Backend: p, ProjectGroups: rancherGroups})
	e.sib.known["alice"] = true
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "physics-ns", ProjectSlug: "physics", State: waldur.ResourceStateOK}, user("alice", "PROJECT.ADMIN"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("membership: %v", err)
		}
	})
	cctx, ccancel := context.WithTimeout(t.Context(), time.Minute)
	defer ccancel()

	var resp sitebusv1.SyncResourceResponse
	if err := e.b.Call(cctx, Name, contract.CmdSyncCreated, &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resUUID(1)}, &resp,
		bus.WithKey("saga:order-1:team:do")); err != nil {
		t.Fatal(err)
	}
	// The group is missing (no saga made it here), so it is filled with the union.
	if resp.Added != 1 || !slices.Equal(e.sib.commands(), []string{"keycloak-sync list-members", "keycloak-sync ensure-groups", "keycloak-sync set-group-members"}) || len(p.binds()) != 0 {
		t.Errorf("sync-created-resource: %v, commands %v, platform calls %v", &resp, e.sib.commands(), p.binds())
	}
	if !strings.HasPrefix(e.sib.calls[0], "keycloak-sync list-members sync:saga:order-1:team:do:") {
		t.Errorf("key %q does not derive from the command's", e.sib.calls[0])
	}

	// sync-resource looks the project up and binds.
	p.objects["p-physics"] = true
	if err := e.b.Call(cctx, Name, contract.CmdSyncResource, &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resUUID(1)}, &resp,
		bus.WithKey("t:sync")); err != nil {
		t.Fatal(err)
	}
	if got := p.bound("project_physics_member"); !slices.Equal(got, []string{"p-physics"}) {
		t.Errorf("bound %v", got)
	}
	err := e.b.Call(cctx, Name, contract.CmdSyncResource, &sitebusv1.SyncResourceRequest{OfferingUuid: "00000000000040008000000000000000", ResourceUuid: resUUID(1)}, &resp,
		bus.WithKey("t:other"))
	if !fault.IsTerminal(err) {
		t.Errorf("another offering's sync: %v, want a terminal refusal", err)
	}
	if err := e.s.Ready(cctx); err != nil {
		t.Errorf("ready: %v", err)
	}
}
