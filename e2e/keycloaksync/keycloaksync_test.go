package keycloaksync_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/services/keycloaksync"
)

// call sends one command with a fresh key, as a saga step would.
func (e *env) call(c context.Context, key, command string, req, resp proto.Message) error {
	return e.bus.Call(c, keycloaksync.Name, command, req, resp, bus.WithKey(e.t.Name()+"."+key))
}

func (e *env) ensure(key string, names ...string) *sitebusv1.EnsureGroupsResponse {
	e.t.Helper()
	req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: offeringUUID}
	for _, n := range names {
		req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: n, Description: "test group " + n})
	}
	var resp sitebusv1.EnsureGroupsResponse
	if err := e.call(ctx(e.t), key, keycloaksync.CmdEnsureGroups, req, &resp); err != nil {
		e.t.Fatalf("ensure-groups %v: %v", names, err)
	}
	return &resp
}

func TestEnsureGroupsIsIdempotent(t *testing.T) {
	e := newEnv(t, envOptions{})
	first := e.ensure("first", "ns_alpha_admin", "ns_alpha_readwrite")
	second := e.ensure("second", "ns_alpha_admin", "ns_alpha_readwrite")
	for i := range 2 {
		if !first.Groups[i].Created || !first.Groups[i].Managed {
			t.Errorf("first call: %v, want created and managed", first.Groups[i])
		}
		if second.Groups[i].Created || second.Groups[i].Id != first.Groups[i].Id {
			t.Errorf("second call: %v, want the same group, not created", second.Groups[i])
		}
	}
	g, ok := e.group("ns_alpha_admin")
	if !ok || !slices.Equal(g.Attributes["managed_by"], []string{"sitebus"}) || g.Attributes["description"][0] != "test group ns_alpha_admin" {
		t.Errorf("group in Keycloak: %+v (found %v)", g, ok)
	}
	if n := len(e.kc.Groups("waldur")); n != 2 {
		t.Errorf("%d groups in Keycloak, want 2", n)
	}
}

func TestSetGroupMembersConverges(t *testing.T) {
	e := newEnv(t, envOptions{pendingPeriod: time.Second})
	gid := e.ensure("ensure", "ns_alpha_readwrite").Groups[0].Id
	if err := e.kc.AddMember("waldur", gid, "dave"); err != nil { // not wanted: removed
		t.Fatal(err)
	}
	req := &sitebusv1.SetGroupMembersRequest{
		OfferingUuid: offeringUUID, Group: &sitebusv1.GroupRef{Name: "ns_alpha_readwrite"},
		Members: []*sitebusv1.UserRef{{Ref: "alice"}, {Ref: bobID, ById: true}, {Ref: "erin"}},
	}
	var resp sitebusv1.SetGroupMembersResponse
	if err := e.call(ctx(t), "set-1", keycloaksync.CmdSetGroupMembers, req, &resp); err != nil {
		t.Fatal(err)
	}
	if got := e.kc.MemberNames("waldur", gid); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("members %v, want alice and bob", got)
	}
	if len(resp.Added) != 2 || len(resp.Removed) != 1 || resp.Removed[0].Username != "dave" ||
		len(resp.Pending) != 1 || resp.Pending[0].Ref != "erin" {
		t.Errorf("response %v", &resp)
	}

	// Applying the same desired state again changes nothing.
	var again sitebusv1.SetGroupMembersResponse
	if err := e.call(ctx(t), "set-2", keycloaksync.CmdSetGroupMembers, req, &again); err != nil {
		t.Fatal(err)
	}
	if len(again.Added)+len(again.Removed) != 0 || len(again.Pending) != 1 {
		t.Errorf("second apply: %v, want no change and erin still pending", &again)
	}

	// Erin signs in to Keycloak for the first time: the periodic retry adds her.
	if _, err := e.kc.AddUser("waldur", keycloaksim.User{Username: "erin"}); err != nil {
		t.Fatal(err)
	}
	// The retry adds erin to the group and only then drops her pending
	// entry: poll the listing (both at once), not the group and then the
	// listing. Each listing is a command of its own (a new key).
	var list sitebusv1.ListMembersResponse
	tries := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		tries++
		list.Reset()
		if err := e.call(ctx(t), fmt.Sprintf("list-%d", tries), keycloaksync.CmdListMembers, &sitebusv1.ListMembersRequest{
			OfferingUuid: offeringUUID, Group: &sitebusv1.GroupRef{Id: gid},
		}, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Members) == 3 && len(list.Pending) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(list.Members) != 3 || len(list.Pending) != 0 {
		t.Errorf("after the retry: %v, want three members and nothing pending", &list)
	}
	if got := e.kc.MemberNames("waldur", gid); !slices.Contains(got, "erin") {
		t.Errorf("members %v, want erin among them", got)
	}
}

func TestPendingMemberNoLongerWantedIsNotAdded(t *testing.T) {
	e := newEnv(t, envOptions{pendingPeriod: time.Second})
	gid := e.ensure("ensure", "ns_alpha_readonly").Groups[0].Id
	set := func(key string, refs ...string) {
		req := &sitebusv1.SetGroupMembersRequest{OfferingUuid: offeringUUID, Group: &sitebusv1.GroupRef{Id: gid}}
		for _, r := range refs {
			req.Members = append(req.Members, &sitebusv1.UserRef{Ref: r})
		}
		if err := e.call(ctx(t), key, keycloaksync.CmdSetGroupMembers, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	set("with-frank", "alice", "frank")
	// gina is wanted and pending too: she is the control that shows a
	// retry pass ran after both users appeared.
	set("without-frank", "alice", "gina")
	for _, u := range []string{"frank", "gina"} {
		if _, err := e.kc.AddUser("waldur", keycloaksim.User{Username: u}); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 20*time.Second, "gina to be added by a retry pass", func() bool {
		return slices.Contains(e.kc.MemberNames("waldur", gid), "gina")
	})
	if got := e.kc.MemberNames("waldur", gid); !slices.Equal(got, []string{"alice", "gina"}) {
		t.Errorf("members %v, want alice and gina (frank is no longer wanted)", got)
	}
}

func TestDeleteGroupsRefusesAnUnmanagedGroup(t *testing.T) {
	e := newEnv(t, envOptions{})
	foreignID, err := e.kc.AddGroup("waldur", "", keycloaksim.Group{Name: "ns_alpha_admin", Members: []string{"alice"}})
	if err != nil {
		t.Fatal(err)
	}
	mine := e.ensure("ensure", "ns_mine_admin").Groups[0].Id

	err = e.call(ctx(t), "delete-both", keycloaksync.CmdDeleteGroups, &sitebusv1.DeleteGroupsRequest{
		OfferingUuid: offeringUUID, Groups: []*sitebusv1.GroupRef{{Id: mine}, {Id: foreignID}},
	}, nil)
	if !bus.IsTerminal(err) || !strings.Contains(err.Error(), "managed_by") {
		t.Fatalf("error %v, want a terminal refusal", err)
	}
	if _, ok := e.group("ns_alpha_admin"); !ok {
		t.Error("the unmanaged group was deleted")
	}
	if got := e.kc.MemberNames("waldur", foreignID); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("the unmanaged group's members changed: %v", got)
	}
	if _, ok := e.group("ns_mine_admin"); !ok {
		t.Error("a refused request deleted the managed group it also named")
	}

	var resp sitebusv1.DeleteGroupsResponse
	if err := e.call(ctx(t), "delete-mine", keycloaksync.CmdDeleteGroups, &sitebusv1.DeleteGroupsRequest{
		OfferingUuid: offeringUUID, Groups: []*sitebusv1.GroupRef{{Id: mine}, {Name: "ns_never_admin"}},
	}, &resp); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.group("ns_mine_admin"); ok || len(resp.DeletedIds) != 1 || len(resp.Missing) != 1 {
		t.Errorf("managed delete: %v (group still there: %v)", &resp, ok)
	}
}

func TestUnknownOfferingIsTerminal(t *testing.T) {
	e := newEnv(t, envOptions{})
	err := e.call(ctx(t), "x", keycloaksync.CmdEnsureGroups, &sitebusv1.EnsureGroupsRequest{
		OfferingUuid: "00000000000000000000000000000000", Groups: []*sitebusv1.GroupSpec{{Name: "g"}},
	}, nil)
	if !bus.IsTerminal(err) {
		t.Fatalf("error %v, want terminal", err)
	}
}

func TestKeycloakOutageIsWaitedOut(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.kc.Down(true)
	result := make(chan error, 1)
	go func() {
		var resp sitebusv1.EnsureGroupsResponse
		result <- e.call(ctx(t), "during-outage", keycloaksync.CmdEnsureGroups, &sitebusv1.EnsureGroupsRequest{
			OfferingUuid: offeringUUID, Groups: []*sitebusv1.GroupSpec{{Name: "ns_alpha_admin"}},
		}, &resp)
	}()
	harness.Eventually(t, 20*time.Second, "the service to meet the outage", func() bool {
		return e.kc.CallCount("", "/", 503) >= 4
	})
	// Several more deliveries meet the outage (two client attempts each,
	// 300ms apart; 20 deliveries are allowed): the command is still being
	// retried, not given up. Counting them is the wait, not a fixed time.
	harness.Eventually(t, 20*time.Second, "more attempts during the outage", func() bool {
		select {
		case err := <-result:
			t.Fatalf("the command ended during the outage: %v", err)
		default:
		}
		return e.kc.CallCount("", "/", 503) >= 12
	})
	e.kc.Down(false)
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("after the outage: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no result after Keycloak came back")
	}
	if _, ok := e.group("ns_alpha_admin"); !ok {
		t.Error("group not created")
	}
}

func TestLeftoverGroupsAreRemovedOnlyWhenTheirResourceIsGone(t *testing.T) {
	e := newEnv(t, envOptions{cleanupPeriod: time.Second})
	e.ensure("ensure", "ns_gone_admin", "ns_gone_readonly", "ns_"+aliveSlug+"_admin", "team-gone")
	if _, err := e.kc.AddGroup("waldur", "", keycloaksim.Group{Name: "ns_foreign_admin"}); err != nil { // not ours
		t.Fatal(err)
	}
	if _, err := e.kc.AddGroup("waldur", "", keycloaksim.Group{Name: "ns_legacy_admin",
		Attributes: map[string][]string{"managed_by": {"waldur-site-agent"}}}); err != nil { // the Python agent's
		t.Fatal(err)
	}
	harness.Eventually(t, 20*time.Second, "the leftover groups to be removed", func() bool {
		_, a := e.group("ns_gone_admin")
		_, b := e.group("ns_gone_readonly")
		return !a && !b
	})
	// Let the pass that removed them finish and one more run whole: each
	// pass starts by listing Waldur's resources, so two more listings mean
	// the next pass has ended (passes run one after another).
	passes := func() int {
		n := 0
		for _, c := range e.ws.Calls() {
			if c.Method == "GET" && c.Path == "/api/marketplace-provider-resources/" && !strings.Contains("&"+c.Query, "&page=") {
				n++
			}
		}
		return n
	}
	seen := passes()
	harness.Eventually(t, 20*time.Second, "another whole cleanup pass", func() bool { return passes() >= seen+2 })
	for _, keep := range []string{"ns_" + aliveSlug + "_admin", "team-gone", "ns_foreign_admin", "ns_legacy_admin"} {
		if _, ok := e.group(keep); !ok {
			t.Errorf("group %s was removed", keep)
		}
	}
}

// A Rancher project's child group names its parent (the cluster's group)
// by name: the parent ensured earlier in the same request, or an existing
// top-level one; deleting the parent with if_no_subgroups keeps it while
// another project's group is still under it.
func TestGroupsUnderAParentNamedByName(t *testing.T) {
	e := newEnv(t, envOptions{})
	ensure := func(key, child string) *sitebusv1.EnsureGroupsResponse {
		t.Helper()
		req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: offeringUUID, Groups: []*sitebusv1.GroupSpec{
			{Name: "c_cmtest", Description: "Cluster access group for c-m-test"},
			{Name: child, ParentName: "c_cmtest", Description: "Project " + child},
		}}
		var resp sitebusv1.EnsureGroupsResponse
		if err := e.call(ctx(t), key, keycloaksync.CmdEnsureGroups, req, &resp); err != nil {
			t.Fatal(err)
		}
		return &resp
	}
	first := ensure("first", "project_alpha_workloads-manage")
	if !first.Groups[0].Created || !first.Groups[1].Created || first.Groups[1].ParentId != first.Groups[0].Id {
		t.Fatalf("first ensure: %v", first.Groups)
	}
	second := ensure("second", "project_beta_workloads-manage")
	if second.Groups[0].Created || !second.Groups[1].Created || second.Groups[1].ParentId != first.Groups[0].Id {
		t.Fatalf("second ensure: %v", second.Groups)
	}
	if _, ok := e.kc.GroupByPath("waldur", "/c_cmtest/project_beta_workloads-manage"); !ok {
		t.Fatal("the child group is not under the parent")
	}

	del := func(key, child string) *sitebusv1.DeleteGroupsResponse {
		t.Helper()
		var resp sitebusv1.DeleteGroupsResponse
		err := e.call(ctx(t), key, keycloaksync.CmdDeleteGroups, &sitebusv1.DeleteGroupsRequest{OfferingUuid: offeringUUID, Groups: []*sitebusv1.GroupRef{
			{Name: child, ParentName: "c_cmtest"}, {Name: "c_cmtest", IfNoSubgroups: true},
		}}, &resp)
		if err != nil {
			t.Fatal(err)
		}
		return &resp
	}
	resp := del("del-alpha", "project_alpha_workloads-manage")
	if len(resp.DeletedIds) != 1 || len(resp.Kept) != 1 || resp.Kept[0].Name != "c_cmtest" {
		t.Fatalf("delete alpha: %v", resp)
	}
	if _, ok := e.group("c_cmtest"); !ok {
		t.Fatal("the parent went while beta's group is under it")
	}
	resp = del("del-beta", "project_beta_workloads-manage")
	if len(resp.DeletedIds) != 2 || len(resp.Kept) != 0 {
		t.Fatalf("delete beta: %v", resp)
	}
	if n := len(e.kc.Groups("waldur")); n != 0 {
		t.Errorf("%d groups left, want none", n)
	}
}

func TestAChildNamingAnUnknownParentIsRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	var resp sitebusv1.EnsureGroupsResponse
	err := e.call(ctx(t), "orphan", keycloaksync.CmdEnsureGroups, &sitebusv1.EnsureGroupsRequest{OfferingUuid: offeringUUID,
		Groups: []*sitebusv1.GroupSpec{{Name: "project_x_role", ParentName: "c_nothere"}}}, &resp)
	if err == nil || !strings.Contains(err.Error(), "parent group c_nothere") {
		t.Fatalf("err = %v, want the missing parent named", err)
	}
	if n := len(e.kc.Groups("waldur")); n != 0 {
		t.Errorf("%d groups made, want none", n)
	}
}
