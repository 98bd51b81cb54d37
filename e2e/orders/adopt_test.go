package orders_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// pythonResource is a resource the Python agent provisioned before the
// switch: OK in Waldur, its backend_id the namespace name.
func pythonResource(uuid, slug string) waldursim.Resource {
	return waldursim.Resource{UUID: uuid, Name: slug, Slug: slug, State: "OK", BackendID: "waldur-" + slug,
		Offering: strings.ReplaceAll(offeringUUID, "-", ""), Project: strings.ReplaceAll(projectUUID, "-", ""),
		Limits: map[string]int{"cpu": 2, "ram": 4}}
}

// createPythonCR makes a ManagedNamespace exactly as the Python
// k8s-ut-namespace plugin leaves it (Keycloak off): spec.name, the quota
// strings, the configured namespace labels and spec.owner with the dashed
// customer and project UUIDs; no labels or annotations of its own.
func (s *site) createPythonCR(name, orgID, projectID string) *unstructured.Unstructured {
	s.t.Helper()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "provisioning.hpc.ut.ee/v1", "kind": "ManagedNamespace",
		"metadata": map[string]any{"name": name, "namespace": s.CRNamespace},
		"spec": map[string]any{"name": name, "quota": map[string]any{"cpu": "2", "memory": "4Gi"},
			"labels": map[string]any{"tier": "research"},
			"owner":  map[string]any{"orgID": orgID, "projectID": projectID}},
	}}
	made, err := s.Cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).Create(ctx(s.t), cr, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return made
}

// After the switch from the Python agent, update, pause, restore, a role
// change (its users written into the CR) and terminate work on the CR it
// made for a resource (which sitebus adopts, marking it); a CR whose
// spec.owner is another customer stays untouched and its resource's
// orders err.
func TestPythonAgentsManagedNamespaceIsAdopted(t *testing.T) {
	const ours, theirs = "a0000000000040008000000000000a01", "a0000000000040008000000000000a02"
	fx := harness.Fixture(t)
	fx.Orders = nil
	fx.Resources = append(fx.Resources, pythonResource(ours, "py-lab"), pythonResource(theirs, "py-other"))
	s := newSite(t, harness.WithFixture(fx), harness.WithoutStart(), harness.WithSettings(map[string]any{"sync_users_to_cr": true}))
	s.createPythonCR("waldur-py-lab", customerUUID, projectUUID)
	foreign := s.createPythonCR("waldur-py-other", "11111111-2222-4333-8444-555555555555", projectUUID)
	s.Start()

	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: ours, Limits: map[string]int{"cpu": 8, "ram": 16}})
	if o := s.WaitOrder(upd, "done", "erred"); o.State != "done" {
		t.Fatalf("update of the Python agent's CR: %s (%s)", o.State, o.ErrorMessage)
	}
	cr := s.mustCR("waldur-py-lab")
	if cr.GetLabels()["app.kubernetes.io/managed-by"] != "sitebus" || cr.GetAnnotations()["sitebus.io/resource-uuid"] != ours {
		t.Errorf("adopted CR: labels %v, annotations %v; want sitebus's mark for %s", cr.GetLabels(), cr.GetAnnotations(), ours)
	}
	if got, want := quota(cr), map[string]string{"cpu": "8", "memory": "16Gi"}; !maps.Equal(got, want) {
		t.Errorf("quota after update = %v, want %v", got, want)
	}
	s.metricAtLeast(t, `sitebus_adoptions_total{backend="k8s-ut-namespace",outcome="adopted"}`, 1)

	if _, err := s.Admin.SetFlags(ctx(t), ours, waldursim.FlagsRequest{Paused: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	paused := map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi"}
	harness.Eventually(t, 30*time.Second, "the adopted CR's quota paused", func() bool {
		return maps.Equal(quota(s.mustCR("waldur-py-lab")), paused)
	})

	if _, err := s.Admin.SetFlags(ctx(t), ours, waldursim.FlagsRequest{Paused: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "the adopted CR's quota restored", func() bool {
		q := quota(s.mustCR("waldur-py-lab"))
		return q["cpu"] == "8" && q["memory"] == "16Gi"
	})

	if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: ours, Member: member("alice01", "PROJECT.ADMIN"), Granted: true}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "the role change written into the adopted CR", func() bool {
		admins, _, _ := unstructured.NestedStringSlice(s.mustCR("waldur-py-lab").Object, "spec", "adminUsers")
		return slices.Contains(admins, "alice01@acme.example")
	})

	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: ours})
	if o := s.WaitOrder(term, "done", "erred"); o.State != "done" {
		t.Fatalf("terminate of the adopted CR: %s (%s)", o.State, o.ErrorMessage)
	}
	if _, err := s.cr("waldur-py-lab"); err == nil {
		t.Error("the adopted ManagedNamespace is still there after terminate")
	}

	bad, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: theirs, Limits: map[string]int{"cpu": 64}})
	o := s.WaitOrder(bad, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") || !strings.Contains(o.ErrorMessage, "spec.owner.orgID") {
		t.Errorf("update of another customer's CR: %s (%q), want erred naming spec.owner.orgID", o.State, o.ErrorMessage)
	}
	if after := s.mustCR("waldur-py-other"); after.GetResourceVersion() != foreign.GetResourceVersion() {
		t.Errorf("another customer's CR was modified (resourceVersion %s → %s): %v", foreign.GetResourceVersion(), after.GetResourceVersion(), after.Object)
	}
}
