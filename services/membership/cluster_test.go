package membership

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/fault"

	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// clusterRoles and clusterMapping are a rancher-cluster offering's
// defaults (ranchercluster.DefaultClusterRoles, DefaultRoleMapping).
var (
	clusterRoles   = []string{"cluster-owner", "cluster-member"}
	clusterMapping = map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "cluster-owner", "PROJECT.MEMBER": "cluster-member"}
)

// clusterGroups are a cluster's role groups c_<name>_<role> under c_<name>
// (named by the slug here; the real ones by the resource's UUID).
func clusterGroups(res *waldur.Resource) []contract.GroupSpec {
	var out []contract.GroupSpec
	for _, r := range clusterRoles {
		out = append(out, contract.GroupSpec{Role: r, Name: "c_" + res.Slug + "_" + r, Parent: "c_" + res.Slug})
	}
	return out
}

func TestClusterTeamGoesIntoTheClusterRoleGroups(t *testing.T) {
	team := []waldur.ProjectUser{
		user("alice", "PROJECT.ADMIN"), user("erin", "PROJECT.MANAGER"), user("bob", "PROJECT.MEMBER"),
		user("carol", "PROJECT.GUEST"), user("dan", "PROJECT.MEMBER"), user("dan", "PROJECT.ADMIN"),
	}
	tests := map[string]struct {
		mapping  map[string]string
		restrict bool
		want     map[string][]string
		pending  int32
	}{
		"admins and managers own the cluster, members are its members, other roles get nothing": {
			mapping: clusterMapping,
			want:    map[string][]string{"c_k1_cluster-owner": {"alice", "dan", "erin"}, "c_k1_cluster-member": {"bob"}},
		},
		"a role mapped to the empty role is in no group": {
			mapping: map[string]string{"PROJECT.ADMIN": "cluster-owner", "PROJECT.MANAGER": "", "PROJECT.MEMBER": "cluster-member"},
			want:    map[string][]string{"c_k1_cluster-owner": {"alice", "dan"}, "c_k1_cluster-member": {"bob"}},
		},
		"a role mapped elsewhere moves its users": {
			mapping: map[string]string{"PROJECT.ADMIN": "cluster-member", "PROJECT.MEMBER": "cluster-member", "PROJECT.GUEST": "cluster-member"},
			want:    map[string][]string{"c_k1_cluster-owner": nil, "c_k1_cluster-member": {"alice", "bob", "carol", "dan"}},
		},
		"restricted member access empties both groups": {
			mapping: clusterMapping, restrict: true,
			want: map[string][]string{"c_k1_cluster-owner": nil, "c_k1_cluster-member": nil},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnvAs(t, Offering{Groups: clusterGroups, Roles: clusterRoles, RoleMapping: tc.mapping})
			// zed left the team: he leaves the group.
			e.sib.setMembers("c_k1_cluster-owner", "zed")
			e.sib.setMembers("c_k1_cluster-member")
			for _, u := range []string{"alice", "bob", "carol", "dan", "erin"} {
				e.sib.known[u] = true
			}
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "k1", State: waldur.ResourceStateOK, BackendID: "c-m-1", RestrictMemberAccess: tc.restrict}, team...)
			if _, err := e.sync(t, resUUID(1), false); err != nil {
				t.Fatal(err)
			}
			for g, want := range tc.want {
				if got := e.sib.members(g); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", g, got, want)
				}
			}
			for _, r := range e.sib.reqs {
				if req, ok := r.(*sitebusv1.SetGroupMembersRequest); ok && req.Group.ParentName != "c_k1" {
					t.Errorf("group %s set without its parent c_k1 (%q)", req.Group.Name, req.Group.ParentName)
				}
			}
		})
	}
}

func TestClusterUserNotInKeycloakYetIsPending(t *testing.T) {
	e := newEnvAs(t, Offering{Groups: clusterGroups, Roles: clusterRoles, RoleMapping: clusterMapping})
	e.sib.setMembers("c_k1_cluster-owner")
	e.sib.setMembers("c_k1_cluster-member")
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "k1", State: waldur.ResourceStateOK, BackendID: "c-m-1"}, user("newcomer", "PROJECT.MEMBER"))
	resp, err := e.sync(t, resUUID(1), false)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Pending != 1 || resp.Added != 0 {
		t.Errorf("answer %v, want one pending", resp)
	}
}

// A cluster's groups are made and bound by the cluster-provisioner; the
// membership service, which has no backend for the offering, fills them
// and never makes them.
func TestClusterGroupsMissingAreNotMadeByMembership(t *testing.T) {
	e := newEnvAs(t, Offering{Groups: clusterGroups, Roles: clusterRoles, RoleMapping: clusterMapping})
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "k1", State: waldur.ResourceStateOK, BackendID: "c-m-1"}, user("alice", "PROJECT.ADMIN"))
	if _, err := e.sync(t, resUUID(1), false); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.sib.commands() {
		if c != contract.KeycloakSync+" "+contract.CmdSetGroupMembers {
			t.Errorf("command %s sent; want only set-group-members", c)
		}
	}
	if e.sib.hasGroup("c_k1_cluster-owner") {
		t.Error("membership made the cluster's group")
	}
}

// accessor records the resources an offering's Access was asked to sync.
type accessor struct {
	synced []string
	err    error
}

func (a *accessor) SyncAccess(_ context.Context, res *waldur.Resource) (int, int, error) {
	a.synced = append(a.synced, res.UUID)
	return 1, 0, a.err
}

// A virtual cluster's bindings are kept by the offering's Access on every
// sync, next to its role groups; a foreign cluster (a terminal error)
// does not come again by redelivery, a Rancher that is down does.
func TestAccessIsKeptOnEverySync(t *testing.T) {
	tests := map[string]struct {
		err      error
		terminal bool
	}{
		"synced":                     {},
		"a foreign cluster is final": {err: fault.Errorf(fault.NotManaged, "not ours"), terminal: true},
		"Rancher down is retried":    {err: errors.New("connection refused")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			acc := &accessor{err: tc.err}
			e := newEnv(t, Offering{Groups: clusterGroups, Roles: clusterRoles, RoleMapping: clusterMapping, Access: acc})
			e.sib.setMembers("c_k1_cluster-owner")
			e.sib.setMembers("c_k1_cluster-member")
			e.sib.known["alice"] = true
			e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "k1", State: waldur.ResourceStateOK, BackendID: "vc-k1"}, user("alice", "PROJECT.ADMIN"))
			_, err := e.sync(t, resUUID(1), false)
			if (err != nil) != (tc.err != nil) || bus.IsTerminal(err) != tc.terminal {
				t.Fatalf("err %v, want %v (terminal %v)", err, tc.err, tc.terminal)
			}
			if !slices.Equal(acc.synced, []string{resUUID(1)}) {
				t.Errorf("access synced for %v, want the resource once", acc.synced)
			}
			if got := e.sib.members("c_k1_cluster-owner"); !slices.Equal(got, []string{"alice"}) {
				t.Errorf("owner group %v, want alice", got)
			}
		})
	}
}

// A backend's missing role groups under a parent the groups do not list
// (a virtual cluster's c_<uuid hex>) are made with the parent first, as
// keycloak-sync makes a child only under a parent that exists or comes
// before it; then they are filled.
func TestMissingRoleGroupsAreMadeUnderTheirParentFirst(t *testing.T) {
	e := newEnv(t, Offering{Backend: newPlatform("vc-k1"), Groups: clusterGroups, Roles: clusterRoles, RoleMapping: clusterMapping})
	e.sib.known["alice"] = true
	e.w.add(waldur.Resource{UUID: resUUID(1), Slug: "k1", State: waldur.ResourceStateOK, BackendID: "vc-k1"}, user("alice", "PROJECT.ADMIN"))
	if _, err := e.sync(t, resUUID(1), false); err != nil {
		t.Fatal(err)
	}
	var ensured []string
	for _, r := range e.sib.reqs {
		if req, ok := r.(*sitebusv1.EnsureGroupsRequest); ok {
			for _, g := range req.Groups {
				ensured = append(ensured, g.ParentName+"/"+g.Name)
			}
		}
	}
	if want := []string{"/c_k1", "c_k1/c_k1_cluster-owner", "c_k1/c_k1_cluster-member"}; !slices.Equal(ensured, want) {
		t.Errorf("ensured %v, want %v", ensured, want)
	}
	if got := e.sib.members("c_k1_cluster-owner"); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("owner group %v, want alice", got)
	}
}
