package rancher_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// membershipPasses is how many periodic membership reconciles of the
// offering went through all its resources.
func (s *site) membershipPasses() int {
	return s.counter(`sitebus_membership_reconcile_passes_total{offering="` + offeringHex + `",outcome="done"}`)
}

// removals is how many members membership took out of groups so far.
func (s *site) removals() int { return s.counter(`sitebus_membership_changes_total{kind="removed"}`) }

func (s *site) counter(series string) int {
	s.t.Helper()
	v := s.Metric(series)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		s.t.Fatalf("%s = %q", series, v)
	}
	return int(n)
}

// The child group is one per Waldur project (the Python Rancher plugin's
// project_<project slug>_<role>), bound to the projects of every resource
// of it: with restrict_member_access on one resource, the users of its
// sibling keep their access, period after period, and nobody is taken out
// and put back.
func TestRancherSharedGroupKeepsASiblingsUsersWithRestrictMemberAccess(t *testing.T) {
	// Only the test's resources, as in newSiteWith.
	fx := harness.Fixture(t)
	fx.Orders, fx.Resources = nil, nil
	s := &site{t: t, Site: harness.NewSite(t, harness.WithFixture(fx), harness.WithCluster(kube.Shared(t)), harness.WithRancher(ranchersim.Options{}),
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...), harness.WithGPU(),
		harness.WithSettings(map[string]any{"default_role": "workloads-manage"}),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"keycloak_pending_period": "2s", "saga_lease": "3s",
			"membership_sync_period": "2s"}}))}
	limits := map[string]int{"cpu": 1, "ram": 1, "storage": 1, "gpu": 0}
	orderOne, one := s.Create("lab-one", limits, member("alice01", "PROJECT.ADMIN"))
	orderTwo, _ := s.Create("lab-two", limits, member("bob01", "PROJECT.MEMBER"))
	for _, o := range []string{orderOne, orderTwo} {
		if got := s.WaitOrder(o, "done", "erred"); got.State != "done" {
			t.Fatalf("create %s: %s (%s)\n%s", o, got.State, got.ErrorMessage, s.Sitebus.Tail(40))
		}
	}
	s.waitMembers(childPath, "alice01", "bob01")

	before := s.removals()
	if _, err := s.Admin.SetFlags(ctx(t), one, ptrFlags(true)); err != nil {
		t.Fatal(err)
	}
	// alice01 is only lab-one's: she goes; bob01 stays for lab-two.
	s.waitMembers(childPath, "bob01")
	// The group is seen before the sync that changed it has counted its
	// change: the baseline is read once that removal is counted and two
	// whole periodic passes have begun after the group was seen, so no
	// sync that was under way then is still to be counted.
	seen := s.membershipPasses()
	harness.Eventually(t, 60*time.Second, "alice01's removal counted and two passes after it", func() bool {
		return s.removals() > before && s.membershipPasses() >= seen+2
	})
	removed, from := s.removals(), s.membershipPasses()
	harness.Eventually(t, 90*time.Second, "five more membership periods", func() bool {
		if got := s.members(childPath); len(got) != 1 || got[0] != "bob01" {
			t.Fatalf("the shared group holds %v between periods, want [bob01]", got)
		}
		return s.membershipPasses() >= from+5
	})
	if got := s.removals(); got != removed {
		t.Errorf("membership removed %d members over five periods of a steady team: the shared group flaps", got-removed)
	}
	s.waitMembers(childPath, "bob01")
}

func ptrFlags(restrict bool) waldursim.FlagsRequest {
	return waldursim.FlagsRequest{RestrictMemberAccess: ptr(restrict)}
}
