package orders_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// handEdit changes a CR as an operator with kubectl edit would.
func (s *site) handEdit(name string, edit func(cr *unstructured.Unstructured)) {
	s.t.Helper()
	cr := s.mustCR(name)
	edit(cr)
	if _, err := s.Cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).Update(ctx(s.t), cr, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func quotaAndTier(cr *unstructured.Unstructured) (cpu, tier string) {
	cpu, _, _ = unstructured.NestedString(cr.Object, "spec", "quota", "cpu")
	tier, _, _ = unstructured.NestedString(cr.Object, "spec", "labels", "tier")
	return cpu, tier
}

// driftSite has a resource "drift" whose CR is then edited by hand
// (edit), and a CR sitebus did not make.
func driftSite(t *testing.T, opts ...harness.SiteOption) (s *site, edit func(), foreign *unstructured.Unstructured) {
	s = newSite(t, opts...)
	orderUUID, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: "drift", Limits: map[string]int{"cpu": 2, "ram": 4, "storage": 10}})
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create: %s (%s)", o.State, o.ErrorMessage)
	}
	s.createForeignCR("waldur-foreign")
	edit = func() {
		s.handEdit("waldur-drift", func(cr *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cr.Object, "40", "spec", "quota", "cpu")
			unstructured.RemoveNestedField(cr.Object, "spec", "labels", "tier")
		})
	}
	edit()
	return s, edit, s.mustCR("waldur-foreign")
}

// A quota edited by hand and a namespace label removed by hand: `sitebus
// drift` lists both and exits 1, changing nothing; `--repair` puts both
// back; a CR sitebus did not make is never listed or touched.
func TestDriftCommandReportsAndRepairs(t *testing.T) {
	s, _, foreign := driftSite(t) // the drift period stays 30m: only the command repairs
	out, code := s.Command(t, "drift")
	if code != 1 {
		t.Fatalf("drift exit %d, want 1 (drift left):\n%s", code, out)
	}
	for _, says := range []string{"limits   waldur-drift", "want cpu=2, have cpu=40", "labels   waldur-drift", "spec.labels.tier=research", "Nothing was changed"} {
		if !strings.Contains(out, says) {
			t.Errorf("drift output lacks %q:\n%s", says, out)
		}
	}
	if strings.Contains(out, "waldur-foreign") {
		t.Errorf("drift lists the foreign CR:\n%s", out)
	}
	if cpu, tier := quotaAndTier(s.mustCR("waldur-drift")); cpu != "40" || tier != "" {
		t.Fatalf("drift without --repair changed the CR: cpu %q tier %q", cpu, tier)
	}

	out, code = s.Command(t, "drift", "--repair", "--nats-url", s.Sitebus.NATSURL)
	if code != 0 {
		t.Fatalf("drift --repair exit %d, want 0:\n%s", code, out)
	}
	if cpu, tier := quotaAndTier(s.mustCR("waldur-drift")); cpu != "2" || tier != "research" {
		t.Fatalf("after --repair: cpu %q tier %q, want 2 and research:\n%s", cpu, tier, out)
	}
	if out, code = s.Command(t, "drift"); code != 0 {
		t.Errorf("drift after the repair exit %d, want 0:\n%s", code, out)
	}
	if after := s.mustCR("waldur-foreign"); after.GetResourceVersion() != foreign.GetResourceVersion() {
		t.Errorf("the foreign CR was modified: %v", after.Object)
	}
}

// The periodic drift pass of the running sitebus repairs the same edits,
// counting each repair by kind; the foreign CR stays untouched.
func TestDriftPassRepairs(t *testing.T) {
	s, _, foreign := driftSite(t, harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"drift_period": "10s"}}))
	harness.Eventually(t, 60*time.Second, "the drift pass repairs the CR", func() bool {
		cpu, tier := quotaAndTier(s.mustCR("waldur-drift"))
		return cpu == "2" && tier == "research"
	})
	s.metricAtLeast(t, `sitebus_quota_changes_total{kind="limits",outcome="repaired"}`, 1)
	s.metricAtLeast(t, `sitebus_drift_repairs_total{kind="labels",outcome="repaired"}`, 1)
	if after := s.mustCR("waldur-foreign"); after.GetResourceVersion() != foreign.GetResourceVersion() {
		t.Errorf("the foreign CR was modified: %v", after.Object)
	}
}

// A user taken out of a resource's Keycloak group by hand: `sitebus
// drift` lists the missing membership, and --repair has the running
// sitebus's membership service put the team back (through keycloak-sync).
func TestDriftOfKeycloakMembersIsReportedAndRepaired(t *testing.T) {
	s := newSite(t, withKeycloak)
	kc := s.Keycloak
	orderUUID, _ := s.createWithTeam("kcdrift", member("alice01", "PROJECT.ADMIN"))
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create: %s (%s)", o.State, o.ErrorMessage)
	}
	waitMembers(t, kc, "ns_kcdrift_admin", "alice01")
	g, _ := kc.GroupByPath("waldur", "/ns_kcdrift_admin")
	if err := kc.RemoveMember("waldur", g.ID, "alice01"); err != nil {
		t.Fatal(err)
	}

	out, code := s.Command(t, "drift")
	if code != 1 || !strings.Contains(out, "members  ns_kcdrift_admin") || !strings.Contains(out, "want alice01 is a member, have alice01 is not") {
		t.Fatalf("drift exit %d, want 1 listing alice01's missing membership:\n%s", code, out)
	}
	if got := members(kc, "ns_kcdrift_admin"); len(got) != 0 {
		t.Fatalf("drift without --repair changed the group: %v", got)
	}
	out, code = s.Command(t, "drift", "--repair", "--nats-url", s.Sitebus.NATSURL)
	if code != 0 {
		t.Fatalf("drift --repair exit %d, want 0:\n%s", code, out)
	}
	waitMembers(t, kc, "ns_kcdrift_admin", "alice01")
	s.metricAtLeast(t, `sitebus_membership_changes_total{kind="added"}`, 2)
}
