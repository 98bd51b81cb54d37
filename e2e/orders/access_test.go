package orders_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// kcAdminPassword is distinctive so that the harness's grep of sitebus's
// logs for configured secrets would find it.
const kcAdminPassword = "kc-admin-4f1d8e2b9c"

// withKeycloak turns access groups on in a Keycloak whose users' usernames
// are the offering usernames in Waldur's team.
var withKeycloak = harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...)

func member(user, role string) waldursim.TeamMember { return harness.Member(user, role) }

// members returns the usernames in group name, sorted (nil if no group).
func members(kc *keycloaksim.Server, name string) []string {
	g, ok := kc.GroupByPath("waldur", "/"+name)
	if !ok {
		return nil
	}
	m := kc.MemberNames("waldur", g.ID)
	slices.Sort(m)
	return m
}

func waitMembers(t *testing.T, kc *keycloaksim.Server, group string, want ...string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	deadline := time.Now().Add(60 * time.Second)
	for got = members(kc, group); !slices.Equal(got, want); got = members(kc, group) {
		if time.Now().After(deadline) {
			t.Fatalf("group %s has %v, want %v", group, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createWithTeam makes a resource whose team is set before its order is
// delivered, then delivers the order and waits for the outcome.
func (s *site) createWithTeam(name string, team ...waldursim.TeamMember) (orderUUID, resourceUUID string) {
	s.t.Helper()
	res := harness.CreateOrderSilent(s.t, s.Admin, name, map[string]int{"cpu": 2}, team...)
	s.deliverOrder(res.Order.UUID)
	return res.Order.UUID, res.Resource.UUID
}

func (s *site) deliverOrder(orderUUID string) { s.t.Helper(); s.deliverOrderAs(orderUUID, "deliver-") }

// deliverOrderAs publishes the order's event with a message id of its own
// (prefix + order UUID): the same order delivered by another path.
func (s *site) deliverOrderAs(orderUUID, prefix string) {
	s.t.Helper()
	harness.PublishOrder(s.t, s.Admin, "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d", orderUUID, prefix+orderUUID)
}

func TestCreateMakesGroupsAndPutsTheTeamInThem(t *testing.T) {
	s := newSite(t, withKeycloak)
	kc := s.Keycloak
	orderUUID, resUUID := s.createWithTeam("team-lab", member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER"))
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("order %s (%s)", o.State, o.ErrorMessage)
	}
	cr := s.mustCR("waldur-team-lab")
	for field, group := range map[string]string{"adminGroups": "ns_team-lab_admin", "rwGroups": "ns_team-lab_readwrite", "roGroups": "ns_team-lab_readonly"} {
		got, _, _ := unstructured.NestedStringSlice(cr.Object, "spec", field)
		if !slices.Equal(got, []string{group}) {
			t.Errorf("spec.%s = %v, want [%s]", field, got, group)
		}
		if g, ok := kc.GroupByPath("waldur", "/"+group); !ok || g.Attributes["managed_by"][0] != "sitebus" || g.Attributes["description"][0] == "" {
			t.Errorf("group %s: %+v (exists %v)", group, g, ok)
		}
	}
	waitMembers(t, kc, "ns_team-lab_admin", "alice01")
	waitMembers(t, kc, "ns_team-lab_readwrite", "bob01")
	waitMembers(t, kc, "ns_team-lab_readonly")
	logKeycloakCalls(t, kc, "one create order with a team of two")

	t.Run("a role change moves the user", func(t *testing.T) {
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: member("bob01", "PROJECT.ADMIN"), Granted: true}); err != nil {
			t.Fatal(err)
		}
		waitMembers(t, kc, "ns_team-lab_admin", "alice01", "bob01")
		waitMembers(t, kc, "ns_team-lab_readwrite")
	})
	t.Run("a revoke removes the user", func(t *testing.T) {
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: member("bob01", "PROJECT.ADMIN"), Granted: false}); err != nil {
			t.Fatal(err)
		}
		waitMembers(t, kc, "ns_team-lab_admin", "alice01")
	})
	t.Run("grant and revoke delivered in reverse order end in Waldur's state", func(t *testing.T) {
		// In Waldur carol was revoked and then granted again: she belongs.
		// The events arrive the other way round, the revoke last; applying
		// them as deltas would leave her out.
		carol := member("carol01", "PROJECT.MEMBER")
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: carol, Granted: true, Silent: true}); err != nil {
			t.Fatal(err)
		}
		for i, granted := range []bool{true, false} {
			body := fmt.Sprintf(`{"user_uuid": "%s", "user_username": "carol", "project_uuid": "%s", "project_name": "Genomics", "role_name": "PROJECT.MEMBER", "granted": %v, "offering_uuid": "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"}`,
				"c0000000000040008000000000000009", strings.ReplaceAll(projectUUID, "-", ""), granted)
			if _, err := s.Admin.PublishRaw(ctx(t), waldursim.RawEventRequest{OfferingUUID: "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d", ObjectType: "user_role", Body: body, MessageID: fmt.Sprintf("carol-%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		// Carol shows up in the group after the first event already; what
		// counts is the state once the membership service has handled both.
		// (The service applies Waldur's state through keycloak-sync before
		// it acks an event, so the group is final then.)
		waitHandled(t, s, "membership", "carol-0", "carol-1")
		if got := members(kc, "ns_team-lab_readwrite"); !slices.Equal(got, []string{"carol01"}) {
			t.Errorf("readwrite after both events: %v, want [carol01]", got)
		}
	})
	t.Run("terminate deletes the CR, then the groups", func(t *testing.T) {
		term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID})
		if o := s.WaitOrder(term, "done", "erred"); o.State != "done" {
			t.Fatalf("terminate: %s (%s)", o.State, o.ErrorMessage)
		}
		if _, err := s.cr("waldur-team-lab"); err == nil {
			t.Error("the CR is still there")
		}
		for _, g := range []string{"ns_team-lab_admin", "ns_team-lab_readwrite", "ns_team-lab_readonly"} {
			if _, ok := kc.GroupByPath("waldur", "/"+g); ok {
				t.Errorf("group %s is still there", g)
			}
		}
	})
}

// logKeycloakCalls prints the Keycloak calls so far by method and path
// shape, for the figures in the closing notes.
func logKeycloakCalls(t *testing.T, kc *keycloaksim.Server, what string) {
	counts := map[string]int{}
	for _, c := range kc.Calls() {
		parts := strings.Split(c.Path, "/")
		for i, p := range parts {
			if len(p) >= 32 {
				parts[i] = "{id}"
			}
		}
		counts[c.Method+" "+strings.Join(parts, "/")]++
	}
	t.Logf("Keycloak calls for %s: %d in all: %v", what, len(kc.Calls()), counts)
}

func TestFailedCreateRemovesOnlyTheGroupsItMade(t *testing.T) {
	s := newSite(t, withKeycloak, harness.WithoutStart())
	kc := s.Keycloak
	preexisting, err := kc.AddGroup("waldur", "", keycloaksim.Group{Name: "ns_clash_readonly", Attributes: map[string][]string{"managed_by": {"sitebus"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	s.createForeignCR("waldur-clash")
	orderUUID, _ := s.createWithTeam("clash", member("alice01", "PROJECT.ADMIN"))
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") {
		t.Fatalf("order %s: %q, want erred because the CR is foreign", o.State, o.ErrorMessage)
	}
	harness.Eventually(t, 30*time.Second, "the saga's groups removed", func() bool {
		_, admin := kc.GroupByPath("waldur", "/ns_clash_admin")
		_, rw := kc.GroupByPath("waldur", "/ns_clash_readwrite")
		return !admin && !rw
	})
	if g, ok := kc.GroupByPath("waldur", "/ns_clash_readonly"); !ok || g.ID != preexisting {
		t.Errorf("the group that existed before the saga is gone or replaced")
	}
	if cr := s.mustCR("waldur-clash"); cr.GetLabels()["app.kubernetes.io/managed-by"] != "" {
		t.Errorf("the foreign CR was changed: %v", cr.GetLabels())
	}
}

func TestCoordinatorKilledMidSagaFinishesOnce(t *testing.T) {
	tests := map[string]struct {
		failpoint string
		foreign   bool
		wantState string
	}{
		"killed in the middle of the saga":       {failpoint: "saga/team/do=pause", wantState: "done"},
		"killed in the middle of a compensation": {failpoint: "saga/groups/undo=pause", foreign: true, wantState: "erred"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSite(t, withKeycloak, harness.WithoutStart())
			kc := s.Keycloak
			if tc.foreign {
				s.createForeignCR("waldur-crash")
			}
			s.Start("SITEBUS_FAILPOINTS=" + tc.failpoint)
			orderUUID, _ := s.createWithTeam("crash", member("alice01", "PROJECT.ADMIN"))
			harness.Eventually(t, 60*time.Second, "the failpoint", func() bool { return strings.Contains(s.Sitebus.Output(), "failpoint reached") })
			s.Sitebus.Kill()
			s.Start()
			if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != tc.wantState {
				t.Fatalf("order %s (%s), want %s", o.State, o.ErrorMessage, tc.wantState)
			}
			creates := kc.CallCount("POST", "/admin/realms/waldur/groups", 201)
			if creates != 3 {
				t.Errorf("%d groups created, want 3 (each once)", creates)
			}
			if tc.foreign {
				harness.Eventually(t, 30*time.Second, "the groups removed", func() bool { return len(kc.Groups("waldur")) == 0 })
				if d := kc.CallCount("DELETE", "/admin/realms/waldur/groups/", 204); d != 3 {
					t.Errorf("%d group deletes, want 3 (each once)", d)
				}
				return
			}
			waitMembers(t, kc, "ns_crash_admin", "alice01")
			if n := s.crCount(); n != 1 {
				t.Errorf("%d CRs, want 1", n)
			}
		})
	}
}

func TestMembershipConvergesAfterKeycloakOutage(t *testing.T) {
	s := newSite(t, withKeycloak)
	kc := s.Keycloak
	orderUUID, resUUID := s.createWithTeam("outage", member("alice01", "PROJECT.ADMIN"))
	s.WaitOrder(orderUUID, "done")
	waitMembers(t, kc, "ns_outage_admin", "alice01")
	kc.Down(true)
	if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: member("bob01", "PROJECT.MEMBER"), Granted: true}); err != nil {
		t.Fatal(err)
	}
	// The outage is the behaviour under test: a minute, as the issue puts
	// it, longer than the retries of any one call, so that convergence has
	// to come from the later passes. Nothing can change meanwhile (the
	// simulator refuses every request), whatever the machine's speed.
	time.Sleep(time.Minute)
	if got := members(kc, "ns_outage_readwrite"); len(got) != 0 {
		t.Fatalf("members changed while Keycloak was down: %v", got)
	}
	kc.Down(false)
	waitMembers(t, kc, "ns_outage_readwrite", "bob01")
}

func TestUserNotYetInKeycloakIsAddedWhenTheyAppear(t *testing.T) {
	s := newSite(t, withKeycloak)
	kc := s.Keycloak
	orderUUID, resUUID := s.createWithTeam("pending", member("alice01", "PROJECT.ADMIN"))
	s.WaitOrder(orderUUID, "done")
	if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: member("dave01", "PROJECT.MEMBER"), Granted: true}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "a pending membership", func() bool {
		return s.Metric("sitebus_keycloak_pending_memberships") == "1"
	})
	if got := members(kc, "ns_pending_readwrite"); len(got) != 0 {
		t.Fatalf("readwrite has %v before dave exists", got)
	}
	if _, err := kc.AddUser("waldur", keycloaksim.User{Username: "dave01", Email: "dave@acme.example"}); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, kc, "ns_pending_readwrite", "dave01")
}

func TestUsersInTheCRAndRestrictedAccess(t *testing.T) {
	s := newSite(t, withKeycloak, harness.WithSettings(map[string]any{"sync_users_to_cr": true}))
	kc := s.Keycloak
	orderUUID, resUUID := s.createWithTeam("users-lab", member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER"))
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("order %s (%s)", o.State, o.ErrorMessage)
	}
	users := func() map[string][]string {
		cr := s.mustCR("waldur-users-lab")
		out := map[string][]string{}
		for _, f := range []string{"adminUsers", "rwUsers", "roUsers"} {
			out[f], _, _ = unstructured.NestedStringSlice(cr.Object, "spec", f)
		}
		return out
	}
	harness.Eventually(t, 30*time.Second, "users written into the CR", func() bool {
		u := users()
		return slices.Equal(u["adminUsers"], []string{"alice01@acme.example"}) && slices.Equal(u["rwUsers"], []string{"bob01@acme.example"}) && len(u["roUsers"]) == 0
	})
	t.Run("restricted member access empties the groups and the CR's users", func(t *testing.T) {
		restrict := true
		if _, err := s.Admin.SetFlags(ctx(t), resUUID, waldursim.FlagsRequest{RestrictMemberAccess: &restrict}); err != nil {
			t.Fatal(err)
		}
		waitMembers(t, kc, "ns_users-lab_admin")
		waitMembers(t, kc, "ns_users-lab_readwrite")
		harness.Eventually(t, 30*time.Second, "the CR's users cleared", func() bool {
			u := users()
			return len(u["adminUsers"])+len(u["rwUsers"])+len(u["roUsers"]) == 0
		})
	})
}
