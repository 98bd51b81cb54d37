package orders_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
)

// migrate runs `sitebus migrate -c CONFIG args...` as an operator would;
// it returns the output and the exit code.
func (s *site) migrate(args ...string) (string, int) {
	s.t.Helper()
	return s.Command(s.t, "migrate", args...)
}

// A site exactly as the Python agent leaves it: migrate lists the CR it
// would adopt (with the proof) and the foreign one it refuses (with the
// reason), and exits 1 for the refusal; --apply adopts; a second run has
// nothing left to adopt.
func TestMigrateListsAndAdoptsThePythonAgentsManagedNamespaces(t *testing.T) {
	const ours, theirs = "a0000000000040008000000000000a11", "a0000000000040008000000000000a12"
	fx := harness.Fixture(t)
	fx.Orders = nil
	fx.Resources = append(fx.Resources, pythonResource(ours, "py-mig"), pythonResource(theirs, "py-foreign"))
	s := newSite(t, harness.WithFixture(fx), harness.WithoutStart())
	s.createPythonCR("waldur-py-mig", customerUUID, projectUUID)
	foreign := s.createPythonCR("waldur-py-foreign", "11111111-2222-4333-8444-555555555555", projectUUID)

	out, code := s.migrate()
	if code != 1 {
		t.Fatalf("migrate exit %d, want 1 (a refusal needs a person):\n%s", code, out)
	}
	want := []string{"REFUSES waldur-py-foreign", "would adopt waldur-py-mig"} // by object name
	if got := harness.Adoptions(out); !slices.Equal(got, want) {
		t.Fatalf("migrate lists %v, want exactly %v:\n%s", got, want, out)
	}
	for _, says := range []string{"resource " + ours + " names it; spec.owner.orgID is its customer", "its spec.owner.orgID is 11111111-2222-4333-8444-555555555555", "nothing was changed"} {
		if !strings.Contains(out, says) {
			t.Errorf("migrate output lacks %q:\n%s", says, out)
		}
	}
	if cr := s.mustCR("waldur-py-mig"); len(cr.GetLabels()) > 0 {
		t.Errorf("migrate without --apply marked the CR: %v", cr.GetLabels())
	}

	out, code = s.migrate("--apply")
	if code != 1 {
		t.Fatalf("migrate --apply exit %d, want 1 (the refusal stays):\n%s", code, out)
	}
	if got, want := harness.Adoptions(out), []string{"REFUSES waldur-py-foreign", "adopted waldur-py-mig"}; !slices.Equal(got, want) {
		t.Fatalf("migrate --apply lists %v, want %v:\n%s", got, want, out)
	}
	cr := s.mustCR("waldur-py-mig")
	if cr.GetLabels()["app.kubernetes.io/managed-by"] != "sitebus" || cr.GetAnnotations()["sitebus.io/resource-uuid"] != ours {
		t.Errorf("after --apply: labels %v, annotations %v; want sitebus's mark for %s", cr.GetLabels(), cr.GetAnnotations(), ours)
	}
	if after := s.mustCR("waldur-py-foreign"); after.GetResourceVersion() != foreign.GetResourceVersion() {
		t.Errorf("the foreign CR was modified: %v", after.Object)
	}

	out, _ = s.migrate()
	if got, want := harness.Adoptions(out), []string{"REFUSES waldur-py-foreign"}; !slices.Equal(got, want) {
		t.Errorf("a second migrate lists %v, want only %v:\n%s", got, want, out)
	}
	if !strings.Contains(out, "0 to adopt, 1 refused") {
		t.Errorf("a second migrate has something to adopt:\n%s", out)
	}
}
