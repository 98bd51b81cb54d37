package provisioner_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// clusterMembers returns the usernames in the cluster's role group
// c_<hex>_<role> under c_<hex>, sorted; ok is false without the group.
func (s *site) clusterMembers(resUUID, role string) (members []string, ok bool) {
	hex := strings.ReplaceAll(resUUID, "-", "")
	g, ok := s.Keycloak.GroupByPath("waldur", "/c_"+hex+"/c_"+hex+"_"+role)
	if !ok {
		return nil, false
	}
	m := s.Keycloak.MemberNames("waldur", g.ID)
	slices.Sort(m)
	return m, true
}

// waitAccess waits until the cluster's owner and member groups hold
// exactly owners and members.
func (s *site) waitAccess(t *testing.T, resUUID string, owners, members []string) {
	t.Helper()
	var gotOwners, gotMembers []string
	harness.Eventually(t, 60*time.Second, "cluster groups owners "+strings.Join(owners, ",")+" members "+strings.Join(members, ","), func() bool {
		var ok1, ok2 bool
		gotOwners, ok1 = s.clusterMembers(resUUID, "cluster-owner")
		gotMembers, ok2 = s.clusterMembers(resUUID, "cluster-member")
		return ok1 && ok2 && slices.Equal(gotOwners, owners) && slices.Equal(gotMembers, members)
	})
}

// The resource's Waldur team is the cluster's access: the membership
// service puts each member into the cluster's role group by role_mapping
// (here project managers excluded), moves them when their role changes
// and takes them out when they leave.
func TestClusterTeamGetsAccessThroughTheRoleGroups(t *testing.T) {
	s := newSiteWith(t, siteOptions{membership: true, roleMapping: map[string]string{"PROJECT.MANAGER": ""}})
	// A Waldur name is free text: the managed cluster is named by the
	// slug (k8s-access-lab), the name is only shown.
	name := "acc create"
	attrs := createAttributes(name, 1)
	attrs["openstack_offering_uuid_list"] = []any{zones[0].uuid}
	orderUUID, resUUID := s.Order(waldursim.CreateOrderRequest{ResourceName: name, ResourceSlug: "access-lab", Attributes: attrs, Silent: true})
	for _, m := range []waldursim.TeamMember{
		harness.Member("alice01", "PROJECT.ADMIN"), harness.Member("bob01", "PROJECT.MEMBER"), harness.Member("carol01", "PROJECT.MANAGER"),
	} {
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: true, Silent: true}); err != nil {
			t.Fatal(err)
		}
	}
	s.Deliver(orderUUID)
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create order %s: %s", o.State, o.ErrorMessage)
	}

	if _, ok := s.Rancher.ProvisioningClusterNamed("k8s-access-lab"); !ok {
		t.Errorf("no provisioning cluster k8s-access-lab: %v", s.Rancher.Inventory())
	}
	res, err := s.Admin.Resource(ctx(t), resUUID)
	if err != nil {
		t.Fatal(err)
	}
	if res.BackendMetadata["display_name"] != name {
		t.Errorf("backend_metadata %v, want display_name %q", res.BackendMetadata, name)
	}

	t.Run("the team lands in the groups of its roles; an excluded role in none", func(t *testing.T) {
		s.waitAccess(t, resUUID, []string{"alice01"}, []string{"bob01"})
	})
	t.Run("a role change moves the user", func(t *testing.T) {
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: harness.Member("bob01", "PROJECT.ADMIN"), Granted: true}); err != nil {
			t.Fatal(err)
		}
		s.waitAccess(t, resUUID, []string{"alice01", "bob01"}, nil)
	})
	t.Run("a user who leaves the team leaves the group", func(t *testing.T) {
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: harness.Member("alice01", "PROJECT.ADMIN"), Granted: false}); err != nil {
			t.Fatal(err)
		}
		s.waitAccess(t, resUUID, []string{"bob01"}, nil)
	})
	t.Run("a member Keycloak does not know yet joins once they appear", func(t *testing.T) {
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: harness.Member("dave01", "PROJECT.MEMBER"), Granted: true}); err != nil {
			t.Fatal(err)
		}
		// Each membership sync of the resource counts dave01 pending.
		harness.Eventually(t, 60*time.Second, "dave01 counted pending", func() bool {
			v, err := strconv.ParseFloat(s.Metric(`sitebus_membership_changes_total{kind="pending"}`), 64)
			return err == nil && v >= 1
		})
		if got, _ := s.clusterMembers(resUUID, "cluster-member"); len(got) != 0 {
			t.Fatalf("cluster-member holds %v while dave01 is not in Keycloak", got)
		}
		if _, err := s.Keycloak.AddUser("waldur", keycloaksim.User{Username: "dave01", Email: "dave@acme.example"}); err != nil {
			t.Fatal(err)
		}
		s.waitAccess(t, resUUID, []string{"bob01"}, []string{"dave01"})
	})
	t.Run("the excluded role moved to an included one gets access", func(t *testing.T) {
		// carol01 was excluded all along (the groups held exactly the
		// others after every change); as a member she is one.
		if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: harness.Member("carol01", "PROJECT.MEMBER"), Granted: true}); err != nil {
			t.Fatal(err)
		}
		s.waitAccess(t, resUUID, []string{"bob01"}, []string{"carol01", "dave01"})
	})
}
