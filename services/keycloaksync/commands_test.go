package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/keycloak/keycloakfake"
)

// The handlers are called as serveCmd calls them: their error goes
// through classify, which is what the consumer decides on.

func TestEnsureGroups(t *testing.T) {
	type want struct {
		created []bool   // per group of the answer
		paths   []string // every group of the realm afterwards
		kind    error    // the error's kind, nil for none
	}
	tests := map[string]struct {
		before func(r *keycloakfake.Realm)
		groups []*sitebusv1.GroupSpec
		want   want
	}{
		"a missing group is created": {
			groups: []*sitebusv1.GroupSpec{{Name: "ns_alpha_admin", Description: "Admins of alpha"}},
			want:   want{created: []bool{true}, paths: []string{"/ns_alpha_admin"}},
		},
		"an existing group is returned as it is, whoever made it": {
			before: func(r *keycloakfake.Realm) { r.AddGroup("ns_alpha_admin", "", "") },
			groups: []*sitebusv1.GroupSpec{{Name: "ns_alpha_admin"}},
			want:   want{created: []bool{false}, paths: []string{"/ns_alpha_admin"}},
		},
		"a child goes under the parent ensured before it in the request": {
			groups: []*sitebusv1.GroupSpec{{Name: "c_cm1"}, {Name: "project_physics_member", ParentName: "c_cm1"}},
			want:   want{created: []bool{true, true}, paths: []string{"/c_cm1", "/c_cm1/project_physics_member"}},
		},
		"a child goes under an existing top-level parent": {
			before: func(r *keycloakfake.Realm) { r.AddGroup("c_cm1", "", keycloak.ManagedBy) },
			groups: []*sitebusv1.GroupSpec{{Name: "project_physics_member", ParentName: "c_cm1"}},
			want:   want{created: []bool{true}, paths: []string{"/c_cm1", "/c_cm1/project_physics_member"}},
		},
		"a child whose parent exists with it already is not created again": {
			before: func(r *keycloakfake.Realm) {
				r.AddGroup("project_physics_member", r.AddGroup("c_cm1", "", keycloak.ManagedBy), keycloak.ManagedBy)
			},
			groups: []*sitebusv1.GroupSpec{{Name: "c_cm1"}, {Name: "project_physics_member", ParentName: "c_cm1"}},
			want:   want{created: []bool{false, false}, paths: []string{"/c_cm1", "/c_cm1/project_physics_member"}},
		},
		"a parent neither in the request nor top-level is not found, and nothing is made": {
			groups: []*sitebusv1.GroupSpec{{Name: "project_physics_member", ParentName: "c_cm1"}},
			want:   want{kind: keycloak.ErrNotFound},
		},
		"a group without a name is invalid, and nothing is made": {
			groups: []*sitebusv1.GroupSpec{{Name: "ns_alpha_admin"}, {Name: ""}},
			want:   want{kind: keycloak.ErrInvalid},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if tc.before != nil {
				tc.before(e.site)
			}
			resp, err := e.s.ensureGroups(t.Context(), &sitebusv1.EnsureGroupsRequest{OfferingUuid: offA, Groups: tc.groups})
			err = classify(err)
			if tc.want.kind != nil {
				if !errors.Is(err, tc.want.kind) || !fault.IsTerminal(err) {
					t.Fatalf("err = %v, want a terminal %v", err, tc.want.kind)
				}
				if p := e.site.Paths(); len(p) > 0 {
					t.Errorf("groups made: %v", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var created []bool
			for _, g := range resp.Groups {
				created = append(created, g.Created)
			}
			if !slices.Equal(created, tc.want.created) {
				t.Errorf("created = %v, want %v", created, tc.want.created)
			}
			if got := e.site.Paths(); !slices.Equal(got, tc.want.paths) {
				t.Errorf("groups %v, want %v", got, tc.want.paths)
			}
		})
	}
}

func TestEnsureGroupsMarksWhatItCreatesAndAnswersWithTheParent(t *testing.T) {
	e := newEnv(t)
	resp, err := e.s.ensureGroups(t.Context(), &sitebusv1.EnsureGroupsRequest{OfferingUuid: offA, Groups: []*sitebusv1.GroupSpec{
		{Name: "c_cm1", Description: "Cluster cm1"}, {Name: "project_physics_member", ParentName: "c_cm1", Description: "Members of physics"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	parent, child := e.site.ByPath("/c_cm1"), e.site.ByPath("/c_cm1/project_physics_member")
	if parent == nil || child == nil {
		t.Fatalf("groups %v", e.site.Paths())
	}
	for _, g := range []*keycloak.Group{parent, child} {
		if !slices.Equal(g.Attributes["managed_by"], []string{keycloak.ManagedBy}) {
			t.Errorf("%s: managed_by %v", g.Path, g.Attributes["managed_by"])
		}
		if g.Offering() != offeringHex(offA) {
			t.Errorf("%s: offering %q, want the request's %q", g.Path, g.Offering(), offeringHex(offA))
		}
	}
	if child.Description != "Members of physics" || parent.Description != "Cluster cm1" {
		t.Errorf("descriptions %q, %q", parent.Description, child.Description)
	}
	if got := resp.Groups[1]; got.ParentId != parent.ID || got.Id != child.ID || !got.Managed {
		t.Errorf("child answered as %v; parent is %s", got, parent.ID)
	}
	// Offerings of another realm reach only theirs.
	if _, err := e.s.ensureGroups(t.Context(), &sitebusv1.EnsureGroupsRequest{OfferingUuid: offOther, Groups: []*sitebusv1.GroupSpec{{Name: "ns_x_admin"}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.other.Paths(); !slices.Equal(got, []string{"/ns_x_admin"}) || e.site.ByPath("/ns_x_admin") != nil {
		t.Errorf("realm other has %v", got)
	}
}

func TestEnsureGroupsThatFailsLeavesNothingBehind(t *testing.T) {
	groups := []*sitebusv1.GroupSpec{{Name: "c_cm1"}, {Name: "project_physics_member", ParentName: "c_cm1"}}
	tests := map[string]struct {
		before func(r *keycloakfake.Realm)
		want   []string
	}{
		"the parent made before a child that Keycloak refuses is deleted again": {
			before: func(r *keycloakfake.Realm) {
				r.FailFor("EnsureGroup", "project_physics_member", keycloakfake.Error("create group", 403))
			},
		},
		"a parent that was there before stays": {
			before: func(r *keycloakfake.Realm) {
				r.AddGroup("c_cm1", "", keycloak.ManagedBy)
				r.FailFor("EnsureGroup", "project_physics_member", keycloakfake.Error("create group", 403))
			},
			want: []string{"/c_cm1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			tc.before(e.site)
			if _, err := e.s.ensureGroups(t.Context(), &sitebusv1.EnsureGroupsRequest{OfferingUuid: offA, Groups: groups}); err == nil {
				t.Fatal("ensure-groups succeeded")
			}
			if got := e.site.Paths(); !slices.Equal(got, tc.want) {
				t.Errorf("groups %v, want %v", got, tc.want)
			}
		})
	}
}

// A saga step's command is retried under one key: a group an earlier
// attempt made (and could not delete again) is still reported created, so
// the saga's undo removes it.
func TestEnsureGroupsRetriedReportsWhatItsEarlierAttemptMade(t *testing.T) {
	e := newEnv(t)
	e.run(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: offA, Groups: []*sitebusv1.GroupSpec{
		{Name: "c_cm1"}, {Name: "project_physics_member", ParentName: "c_cm1"}}}
	e.site.FailFor("EnsureGroup", "project_physics_member", keycloakfake.Error("create group", 503))
	e.site.SetFail("DeleteGroup", keycloakfake.Error("delete group", 503))
	if err := e.b.Call(ctx, Name, CmdEnsureGroups, req, &sitebusv1.EnsureGroupsResponse{}, bus.WithKey("saga:s1:groups:do")); err == nil {
		t.Fatal("ensure-groups succeeded while Keycloak failed")
	}
	if got := e.site.Paths(); !slices.Equal(got, []string{"/c_cm1"}) {
		t.Fatalf("groups %v, want the parent left by the failed attempts", got)
	}
	e.site.FailFor("EnsureGroup", "project_physics_member", nil)
	e.site.SetFail("DeleteGroup", nil)
	var resp sitebusv1.EnsureGroupsResponse
	if err := e.b.Call(ctx, Name, CmdEnsureGroups, req, &resp, bus.WithKey("saga:s1:groups:do")); err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if !g.Created {
			t.Errorf("%s reported as there before; its undo would leave it", g.Name)
		}
	}
	// Another command (another saga) finds them made by someone else.
	if err := e.b.Call(ctx, Name, CmdEnsureGroups, req, &resp, bus.WithKey("saga:s2:groups:do")); err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if g.Created {
			t.Errorf("%s reported created by another saga", g.Name)
		}
	}
}

func TestCommandsOfAnOfferingWithoutKeycloakAreRefused(t *testing.T) {
	e := newEnv(t)
	unknown := "0d0d0d0d-0d0d-4d0d-8d0d-0d0d0d0d0d0d"
	ctx := t.Context()
	group := &sitebusv1.GroupRef{Name: "ns_alpha_admin"}
	user := &sitebusv1.UserRef{Ref: "alice"}
	calls := map[string]func() error{
		CmdEnsureGroups: func() error {
			_, err := e.s.ensureGroups(ctx, &sitebusv1.EnsureGroupsRequest{OfferingUuid: unknown, Groups: []*sitebusv1.GroupSpec{{Name: "x"}}})
			return err
		},
		CmdDeleteGroups: func() error {
			_, err := e.s.deleteGroups(ctx, &sitebusv1.DeleteGroupsRequest{OfferingUuid: unknown, Groups: []*sitebusv1.GroupRef{group}})
			return err
		},
		CmdSetGroupMembers: func() error {
			_, err := e.s.setGroupMembers(ctx, &sitebusv1.SetGroupMembersRequest{OfferingUuid: unknown, Group: group})
			return err
		},
		CmdAddMember: func() error {
			_, err := e.s.addMember(ctx, &sitebusv1.AddMemberRequest{OfferingUuid: unknown, Group: group, User: user})
			return err
		},
		CmdRemoveMember: func() error {
			_, err := e.s.removeMember(ctx, &sitebusv1.RemoveMemberRequest{OfferingUuid: unknown, Group: group, User: user})
			return err
		},
		CmdListMembers: func() error {
			_, err := e.s.listMembers(ctx, &sitebusv1.ListMembersRequest{OfferingUuid: unknown, Group: group})
			return err
		},
	}
	for cmd, call := range calls {
		if err := call(); !fault.IsTerminal(err) || !strings.Contains(err.Error(), "no Keycloak") {
			t.Errorf("%s: err = %v, want a terminal refusal", cmd, err)
		}
	}
	if len(e.site.Calls())+len(e.other.Calls()) > 0 {
		t.Errorf("Keycloak was called: %v %v", e.site.Calls(), e.other.Calls())
	}
}

func TestDeleteGroups(t *testing.T) {
	type want struct {
		deleted, missing, kept int
		left                   []string
		kind                   error
	}
	// The realm before every case: a cluster group with a project group
	// under it, a group of the Python agent and a foreign one.
	setup := func(r *keycloakfake.Realm) {
		c := r.AddGroup("c_cm1", "", keycloak.ManagedBy)
		r.AddGroup("project_physics_member", c, keycloak.ManagedBy)
		r.AddGroup("ns_legacy_admin", "", keycloak.LegacyManagedBy)
		r.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
		r.AddGroup("admins", "", "")
	}
	all := []string{"/admins", "/c_cm1", "/c_cm1/project_physics_member", "/ns_alpha_admin", "/ns_legacy_admin"}
	tests := map[string]struct {
		groups []*sitebusv1.GroupRef
		want   want
	}{
		"a group sitebus made is deleted": {
			groups: []*sitebusv1.GroupRef{{Name: "ns_alpha_admin"}},
			want:   want{deleted: 1, left: []string{"/admins", "/c_cm1", "/c_cm1/project_physics_member", "/ns_legacy_admin"}},
		},
		"a group the Python agent made is deleted": {
			groups: []*sitebusv1.GroupRef{{Name: "ns_legacy_admin"}},
			want:   want{deleted: 1, left: []string{"/admins", "/c_cm1", "/c_cm1/project_physics_member", "/ns_alpha_admin"}},
		},
		"a foreign group refuses the whole request, so nothing is deleted": {
			groups: []*sitebusv1.GroupRef{{Name: "ns_alpha_admin"}, {Name: "admins"}},
			want:   want{kind: keycloak.ErrNotManaged, left: all},
		},
		"a missing group is reported missing, not failed": {
			groups: []*sitebusv1.GroupRef{{Name: "ns_gone_admin"}, {Name: "ns_alpha_admin"}},
			want:   want{deleted: 1, missing: 1, left: []string{"/admins", "/c_cm1", "/c_cm1/project_physics_member", "/ns_legacy_admin"}},
		},
		"a child named under its parent's name goes first, then the parent it left without subgroups": {
			groups: []*sitebusv1.GroupRef{{Name: "project_physics_member", ParentName: "c_cm1"}, {Name: "c_cm1", IfNoSubgroups: true}},
			want:   want{deleted: 2, left: []string{"/admins", "/ns_alpha_admin", "/ns_legacy_admin"}},
		},
		"a parent that still has a subgroup is kept when asked": {
			groups: []*sitebusv1.GroupRef{{Name: "c_cm1", IfNoSubgroups: true}},
			want:   want{kept: 1, left: all},
		},
		"a parent is deleted with its subtree when not asked to keep it": {
			groups: []*sitebusv1.GroupRef{{Name: "c_cm1"}},
			want:   want{deleted: 1, left: []string{"/admins", "/ns_alpha_admin", "/ns_legacy_admin"}},
		},
		"a child under a parent that does not exist is missing": {
			groups: []*sitebusv1.GroupRef{{Name: "project_physics_member", ParentName: "c_gone"}},
			want:   want{missing: 1, left: all},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			setup(e.site)
			resp, err := e.s.deleteGroups(t.Context(), &sitebusv1.DeleteGroupsRequest{OfferingUuid: offA, Groups: tc.groups})
			err = classify(err)
			switch {
			case tc.want.kind != nil:
				if !errors.Is(err, tc.want.kind) || !fault.IsTerminal(err) {
					t.Errorf("err = %v, want a terminal %v", err, tc.want.kind)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if len(resp.DeletedIds) != tc.want.deleted || len(resp.Missing) != tc.want.missing || len(resp.Kept) != tc.want.kept {
					t.Errorf("deleted %v, missing %v, kept %v; want %d, %d, %d", resp.DeletedIds, resp.Missing, resp.Kept,
						tc.want.deleted, tc.want.missing, tc.want.kept)
				}
			}
			if got := e.site.Paths(); !slices.Equal(got, tc.want.left) {
				t.Errorf("groups left %v, want %v", got, tc.want.left)
			}
		})
	}
}

func TestDeleteGroupsByIDAndWithAForeignSubgroup(t *testing.T) {
	e := newEnv(t)
	c := e.site.AddGroup("c_cm1", "", keycloak.ManagedBy)
	e.site.AddGroup("someones", c, "")
	ns := e.site.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
	resp, err := e.s.deleteGroups(t.Context(), &sitebusv1.DeleteGroupsRequest{OfferingUuid: offA, Groups: []*sitebusv1.GroupRef{{Id: ns}}})
	if err != nil || !slices.Equal(resp.DeletedIds, []string{ns}) {
		t.Fatalf("by id: %v, %v", resp, err)
	}
	// Keycloak deletes a subtree whole: a managed group over a foreign one
	// is not sitebus's to delete.
	_, err = e.s.deleteGroups(t.Context(), &sitebusv1.DeleteGroupsRequest{OfferingUuid: offA, Groups: []*sitebusv1.GroupRef{{Id: c}}})
	if err = classify(err); !errors.Is(err, keycloak.ErrNotManaged) || !fault.IsTerminal(err) {
		t.Errorf("err = %v, want a terminal ErrNotManaged", err)
	}
	if got := e.site.Paths(); !slices.Equal(got, []string{"/c_cm1", "/c_cm1/someones"}) {
		t.Errorf("groups left %v", got)
	}
}

func TestDeleteGroupsDropsTheGroupsPendingMemberships(t *testing.T) {
	e := newEnv(t)
	id := e.site.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
	if _, err := e.s.addMember(t.Context(), &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Id: id}, User: &sitebusv1.UserRef{Ref: "newcomer"}}); err != nil {
		t.Fatal(err)
	}
	if got := e.pendingRefs(t, offA, id); len(got) != 1 {
		t.Fatalf("pending %v", got)
	}
	if _, err := e.s.deleteGroups(t.Context(), &sitebusv1.DeleteGroupsRequest{OfferingUuid: offA, Groups: []*sitebusv1.GroupRef{{Id: id}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.pendingRefs(t, offA, id); len(got) != 0 {
		t.Errorf("pending memberships of a deleted group kept: %v", got)
	}
}

func TestSetGroupMembers(t *testing.T) {
	type want struct {
		added, removed, pending []string
		members                 []string // user ids in the group afterwards
		kind                    error
		missing                 bool
	}
	tests := map[string]struct {
		group    *sitebusv1.GroupRef
		members  []*sitebusv1.UserRef
		ifExists bool
		before   func(r *keycloakfake.Realm)
		want     want
	}{
		"wanted users are added, others removed, unknown ones pending": {
			members: []*sitebusv1.UserRef{{Ref: "alice"}, {Ref: "bob"}, {Ref: "newcomer"}},
			want: want{added: []string{"u-bob"}, removed: []string{"u-carol"}, pending: []string{"newcomer"},
				members: []string{"u-alice", "u-bob"}},
		},
		"users named by Keycloak id": {
			members: []*sitebusv1.UserRef{{Ref: "u-bob", ById: true}, {Ref: "u-dave", ById: true}},
			want:    want{added: []string{"u-bob"}, removed: []string{"u-alice", "u-carol"}, pending: []string{"u-dave"}, members: []string{"u-bob"}},
		},
		"an id that is no user's is tried as a username, as the client does": {
			members: []*sitebusv1.UserRef{{Ref: "bob", ById: true}},
			want:    want{added: []string{"u-bob"}, removed: []string{"u-alice", "u-carol"}, members: []string{"u-bob"}},
		},
		"the same user twice is added once": {
			members: []*sitebusv1.UserRef{{Ref: "bob"}, {Ref: "u-bob", ById: true}, {Ref: "alice"}, {Ref: "carol"}},
			want:    want{added: []string{"u-bob"}, members: []string{"u-alice", "u-bob", "u-carol"}},
		},
		"an empty team empties the group": {
			want: want{removed: []string{"u-alice", "u-carol"}},
		},
		"a user deleted between lookup and add is pending": {
			members: []*sitebusv1.UserRef{{Ref: "bob"}},
			before:  func(r *keycloakfake.Realm) { r.FailOnce("AddMember", keycloakfake.Error("add member", 404)) },
			want:    want{removed: []string{"u-alice", "u-carol"}, pending: []string{"bob"}},
		},
		"a child group named under its parent's name": {
			group:   &sitebusv1.GroupRef{Name: "project_physics_member", ParentName: "c_cm1"},
			members: []*sitebusv1.UserRef{{Ref: "alice"}},
			want:    want{added: []string{"u-alice"}, members: []string{"u-alice"}},
		},
		"a missing group, when asked only if it exists, is reported missing": {
			group: &sitebusv1.GroupRef{Name: "ns_gone_admin"}, ifExists: true,
			want: want{missing: true, members: []string{"u-alice", "u-carol"}},
		},
		"a missing group is not found": {
			group: &sitebusv1.GroupRef{Name: "ns_gone_admin"},
			want:  want{kind: keycloak.ErrNotFound, members: []string{"u-alice", "u-carol"}},
		},
		"a foreign group's members are not sitebus's to set": {
			group:   &sitebusv1.GroupRef{Name: "admins"},
			members: []*sitebusv1.UserRef{{Ref: "bob"}},
			want:    want{kind: keycloak.ErrNotManaged, members: []string{"u-alice", "u-carol"}},
		},
		"a member without a name is invalid": {
			members: []*sitebusv1.UserRef{{Ref: "alice"}, {Ref: ""}},
			want:    want{kind: keycloak.ErrInvalid, members: []string{"u-alice", "u-carol"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			for _, u := range []string{"alice", "bob", "carol"} {
				e.site.AddUser("u-"+u, u)
			}
			ns := e.site.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
			e.site.SetMembers(ns, "u-alice", "u-carol")
			child := e.site.AddGroup("project_physics_member", e.site.AddGroup("c_cm1", "", keycloak.ManagedBy), keycloak.ManagedBy)
			e.site.SetMembers(e.site.AddGroup("admins", "", ""), "u-alice", "u-carol")
			if tc.before != nil {
				tc.before(e.site)
			}
			group, target := tc.group, ns
			switch {
			case group == nil:
				group = &sitebusv1.GroupRef{Name: "ns_alpha_admin"}
			case group.Name == "admins":
				target = e.site.ByPath("/admins").ID
			case group.ParentName != "":
				target = child
			}
			resp, err := e.s.setGroupMembers(t.Context(), &sitebusv1.SetGroupMembersRequest{OfferingUuid: offA, Group: group, Members: tc.members, IfExists: tc.ifExists})
			err = classify(err)
			if got := e.site.MemberIDs(target); !slices.Equal(got, tc.want.members) {
				t.Errorf("members %v, want %v", got, tc.want.members)
			}
			if tc.want.kind != nil {
				if !errors.Is(err, tc.want.kind) || !fault.IsTerminal(err) {
					t.Errorf("err = %v, want a terminal %v", err, tc.want.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Missing != tc.want.missing {
				t.Errorf("missing = %v", resp.Missing)
			}
			ids := func(ms []*sitebusv1.Member) []string {
				var out []string
				for _, m := range ms {
					out = append(out, m.Id)
				}
				slices.Sort(out)
				return out
			}
			var pending []string
			for _, p := range resp.Pending {
				pending = append(pending, p.Ref)
			}
			if got := ids(resp.Added); !slices.Equal(got, tc.want.added) {
				t.Errorf("added %v, want %v", got, tc.want.added)
			}
			if got := ids(resp.Removed); !slices.Equal(got, tc.want.removed) {
				t.Errorf("removed %v, want %v", got, tc.want.removed)
			}
			if !slices.Equal(pending, tc.want.pending) {
				t.Errorf("pending %v, want %v", pending, tc.want.pending)
			}
			if !tc.want.missing {
				if got := e.pendingRefs(t, offA, target); !slices.Equal(got, tc.want.pending) {
					t.Errorf("pending memberships stored %v, want %v", got, tc.want.pending)
				}
			}
		})
	}
}

func TestSetGroupMembersIsDesiredState(t *testing.T) {
	e := newEnv(t)
	e.site.AddUser("u-alice", "alice")
	ns := e.site.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
	set := func(refs ...string) *sitebusv1.SetGroupMembersResponse {
		t.Helper()
		req := &sitebusv1.SetGroupMembersRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Name: "ns_alpha_admin"}}
		for _, r := range refs {
			req.Members = append(req.Members, &sitebusv1.UserRef{Ref: r})
		}
		resp, err := e.s.setGroupMembers(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	set("alice", "newcomer", "later")
	// The same command again (a redelivery) changes nothing.
	if again := set("alice", "newcomer", "later"); len(again.Added)+len(again.Removed) != 0 || len(again.Pending) != 2 {
		t.Errorf("second run: %v", again)
	}
	// A user no longer wanted stops being pending: when they appear, they
	// are not added.
	set("alice", "newcomer")
	if got := e.pendingRefs(t, offA, ns); !slices.Equal(got, []string{"newcomer"}) {
		t.Errorf("pending %v, want only newcomer", got)
	}
	e.site.AddUser("u-later", "later")
	e.s.retryPending(t.Context())
	if got := e.site.MemberIDs(ns); !slices.Equal(got, []string{"u-alice"}) {
		t.Errorf("members %v: a user dropped from the team was added", got)
	}
}

func TestAddRemoveAndListMembers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.site.AddUser("u-alice", "alice")
	ns := e.site.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
	foreign := e.site.AddGroup("admins", "", "")
	e.site.SetMembers(foreign, "u-alice")
	group := &sitebusv1.GroupRef{Name: "ns_alpha_admin"}

	added, err := e.s.addMember(ctx, &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: group, User: &sitebusv1.UserRef{Ref: "alice"}})
	if err != nil || added.UserId != "u-alice" || added.Pending {
		t.Fatalf("add alice: %v, %v", added, err)
	}
	added, err = e.s.addMember(ctx, &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: group, User: &sitebusv1.UserRef{Ref: "newcomer"}})
	if err != nil || !added.Pending || added.GroupId != ns {
		t.Fatalf("add newcomer: %v, %v", added, err)
	}
	list, err := e.s.listMembers(ctx, &sitebusv1.ListMembersRequest{OfferingUuid: offA, Group: group})
	if err != nil || len(list.Members) != 1 || list.Members[0].Username != "alice" || len(list.Pending) != 1 || list.Pending[0].Ref != "newcomer" {
		t.Fatalf("list: %v, %v", list, err)
	}

	removals := []struct {
		name, ref   string
		wantRemoved bool
	}{
		{"a pending member is dropped", "newcomer", true},
		{"a member is removed", "alice", true},
		{"someone who is not a member is not removed", "alice", false},
		{"someone unknown to Keycloak is not removed", "nobody", false},
	}
	for _, r := range removals {
		resp, err := e.s.removeMember(ctx, &sitebusv1.RemoveMemberRequest{OfferingUuid: offA, Group: group, User: &sitebusv1.UserRef{Ref: r.ref}})
		if err != nil || resp.Removed != r.wantRemoved {
			t.Errorf("%s: %v, %v; want removed %v", r.name, resp, err, r.wantRemoved)
		}
	}
	if got := e.site.MemberIDs(ns); len(got) != 0 {
		t.Errorf("members left %v", got)
	}
	if got := e.pendingRefs(t, offA, ns); len(got) != 0 {
		t.Errorf("pending left %v", got)
	}

	refused := map[string]struct {
		call func() error
		kind error
	}{
		"removing from a foreign group": {func() error {
			_, err := e.s.removeMember(ctx, &sitebusv1.RemoveMemberRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Id: foreign}, User: &sitebusv1.UserRef{Ref: "alice"}})
			return err
		}, keycloak.ErrNotManaged},
		"adding to a missing group": {func() error {
			_, err := e.s.addMember(ctx, &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Name: "ns_gone_admin"}, User: &sitebusv1.UserRef{Ref: "alice"}})
			return err
		}, keycloak.ErrNotFound},
		"adding nobody": {func() error {
			_, err := e.s.addMember(ctx, &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: group, User: &sitebusv1.UserRef{}})
			return err
		}, keycloak.ErrInvalid},
		"removing nobody": {func() error {
			_, err := e.s.removeMember(ctx, &sitebusv1.RemoveMemberRequest{OfferingUuid: offA, Group: group})
			return err
		}, keycloak.ErrInvalid},
		"listing a missing group": {func() error {
			_, err := e.s.listMembers(ctx, &sitebusv1.ListMembersRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Name: "ns_gone_admin"}})
			return err
		}, keycloak.ErrNotFound},
		"a group named by nothing": {func() error {
			_, err := e.s.listMembers(ctx, &sitebusv1.ListMembersRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{}})
			return err
		}, keycloak.ErrInvalid},
	}
	for name, r := range refused {
		if err := classify(r.call()); !errors.Is(err, r.kind) || !fault.IsTerminal(err) {
			t.Errorf("%s: err = %v, want a terminal %v", name, err, r.kind)
		}
	}
	if got := e.site.MemberIDs(foreign); !slices.Equal(got, []string{"u-alice"}) {
		t.Errorf("foreign group's members changed: %v", got)
	}
	// Listing a group that does not exist with if_exists: no members, and
	// said so (membership reads a Rancher child group removed when its last
	// member left).
	if resp, err := e.s.listMembers(ctx, &sitebusv1.ListMembersRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Name: "ns_gone_admin"}, IfExists: true}); err != nil || !resp.Missing || len(resp.Members) != 0 {
		t.Errorf("list a missing group with if_exists: %v, %v", resp, err)
	}
	// Removing from a group that does not exist: not a member, done.
	if resp, err := e.s.removeMember(ctx, &sitebusv1.RemoveMemberRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Name: "ns_gone_admin"}, User: &sitebusv1.UserRef{Ref: "alice"}}); err != nil || resp.Removed {
		t.Errorf("remove from a missing group: %v, %v", resp, err)
	}
}

func TestRetryPending(t *testing.T) {
	tests := map[string]struct {
		// change happens between the membership going pending and the
		// periodic retry.
		change      func(e *env, group string)
		wantMembers []string
		wantPending []string
	}{
		"a user who appeared is added and no longer pending": {
			change:      func(e *env, _ string) { e.site.AddUser("u-newcomer", "newcomer") },
			wantMembers: []string{"u-newcomer"},
		},
		"a user still absent stays pending": {
			change:      func(*env, string) {},
			wantPending: []string{"newcomer"},
		},
		"a group deleted meanwhile drops the membership": {
			change: func(e *env, group string) {
				e.site.AddUser("u-newcomer", "newcomer")
				e.site.RemoveGroup(group)
			},
		},
		"Keycloak unavailable keeps it for the next period": {
			change: func(e *env, _ string) {
				e.site.AddUser("u-newcomer", "newcomer")
				e.site.SetFail("FindUser", keycloakfake.Error("find user", 503))
			},
			wantPending: []string{"newcomer"},
		},
		"adding refused for now keeps it for the next period": {
			change: func(e *env, _ string) {
				e.site.AddUser("u-newcomer", "newcomer")
				e.site.SetFail("AddMember", keycloakfake.Error("add member", 429))
			},
			wantPending: []string{"newcomer"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ns := e.site.AddGroup("ns_alpha_admin", "", keycloak.ManagedBy)
			if _, err := e.s.addMember(t.Context(), &sitebusv1.AddMemberRequest{OfferingUuid: offA, Group: &sitebusv1.GroupRef{Id: ns}, User: &sitebusv1.UserRef{Ref: "newcomer"}}); err != nil {
				t.Fatal(err)
			}
			tc.change(e, ns)
			e.s.retryPending(t.Context())
			if got := e.site.MemberIDs(ns); !slices.Equal(got, tc.wantMembers) {
				t.Errorf("members %v, want %v", got, tc.wantMembers)
			}
			if got := e.pendingRefs(t, offA, ns); !slices.Equal(got, tc.wantPending) {
				t.Errorf("pending %v, want %v", got, tc.wantPending)
			}
		})
	}
}

func TestRetryPendingKeepsAnOfferingWithoutKeycloakHere(t *testing.T) {
	e := newEnv(t)
	unknown := "0d0d0d0d0d0d4d0d8d0d0d0d0d0d0d0d"
	if err := e.s.putPending(t.Context(), unknown, keycloak.Group{ID: "g9", Name: "ns_x_admin"}, &sitebusv1.UserRef{Ref: "newcomer"}); err != nil {
		t.Fatal(err)
	}
	e.s.retryPending(t.Context())
	if got := e.pendingRefs(t, unknown, "g9"); !slices.Equal(got, []string{"newcomer"}) {
		t.Errorf("pending %v: another replica's offering's membership was dropped", got)
	}
}

func TestClassify(t *testing.T) {
	tests := map[string]struct {
		err          error
		wantTerminal bool
	}{
		"Keycloak answering 5xx is retried":   {keycloakfake.Error("get group", 503), false},
		"Keycloak answering 429 is retried":   {keycloakfake.Error("get group", 429), false},
		"Keycloak unreachable is retried":     {keycloakfake.Error("get group", 0), false},
		"a 401 with a fresh token is retried": {keycloakfake.Error("get group", 401), false},
		"a 409 left over is retried":          {keycloakfake.Error("create group", 409), false},
		"a 400 or 403 is rejected for good":   {keycloakfake.Error("create group", 403), true},
		"credentials refused are final":       {keycloak.CredentialsError(401), true},
		"a group not sitebus's is final":      {keycloak.NotManagedError("delete group", "not ours"), true},
		"a bad argument is final":             {fmt.Errorf("keycloak: create group: %w: empty name", keycloak.ErrInvalid), true},
		// fault retries NotFound by default; keycloak-sync's classify makes a
		// 404 left after its handlers dealt with the expected ones final (a
		// parent group that does not exist).
		"a 404 the handler did not deal with is final":       {keycloakfake.Error("get parent", 404), true},
		"a cancelled call is retried":                        {context.Canceled, false},
		"an error nobody classified is retried":              {errors.New("connection reset"), false},
		"an error marked final by the handler stays final":   {fault.Terminal(errors.New("x")), true},
		"a keycloak error marked final by the handler stays": {fault.Terminal(keycloakfake.Error("get group", 503)), true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := classify(tc.err)
			if fault.IsTerminal(got) != tc.wantTerminal {
				t.Errorf("terminal = %v, want %v (%v)", !tc.wantTerminal, tc.wantTerminal, got)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("classify lost the error: %v", got)
			}
		})
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}
