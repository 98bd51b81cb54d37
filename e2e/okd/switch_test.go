package okd_test

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/okd"
)

// migrate runs `sitebus migrate -c CONFIG args...` as an operator would;
// it returns the output and the exit code.
func (s *site) migrate(args ...string) (string, int) {
	s.t.Helper()
	return s.Command(s.t, "migrate", args...)
}

// untouched is what must not change on a foreign object: its labels,
// annotations and spec, and the resourceVersion that proves no write.
type untouched struct {
	Version     string
	Labels      map[string]string
	Annotations map[string]string
	Spec        any
}

func snapshotOf(u *unstructured.Unstructured) untouched {
	return untouched{Version: u.GetResourceVersion(), Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Spec: u.Object["spec"]}
}

// The switch-over of an OKD offering: the site as the Python agent leaves
// it (a project its token's user requested for a resource, and a project
// another user requested); `migrate` lists exactly the adoption and the
// refusal, --apply adopts, and sitebus then updates, pauses, restores,
// re-binds and terminates the adopted project, while the foreign one
// stays as it was.
func TestOKDSwitchOverFromThePythonAgent(t *testing.T) {
	const ours, theirs = "a0000000000040008000000000000c01", "a0000000000040008000000000000c02"
	s, ourNS, theirNS := pythonAgentsProjects(t, ours, theirs, "sw-web", "sw-other")
	foreign := func() untouched {
		u, err := s.Cluster.Dynamic().Resource(namespaceGVR).Get(ctx(t), theirNS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return snapshotOf(u)
	}
	before := foreign()

	out, code := s.migrate()
	if code != 1 {
		t.Fatalf("migrate exit %d, want 1 (a refusal needs a person):\n%s", code, out)
	}
	if got, want := harness.Adoptions(out), []string{"REFUSES " + theirNS, "would adopt " + ourNS}; !slices.Equal(got, want) {
		t.Fatalf("migrate lists %v, want exactly %v:\n%s", got, want, out)
	}
	for _, says := range []string{"requester is alice", "adoption: 1 to adopt, 1 refused", "nothing was changed"} {
		if !strings.Contains(out, says) {
			t.Errorf("migrate output lacks %q:\n%s", says, out)
		}
	}
	if p, _, _ := s.OKD.Project(ctx(t), ourNS); p.Labels[okd.LabelManagedBy] != "" {
		t.Errorf("migrate without --apply marked the project: %v", p.Labels)
	}

	out, code = s.migrate("--apply")
	if code != 1 {
		t.Fatalf("migrate --apply exit %d, want 1 (the refusal stays):\n%s", code, out)
	}
	if got, want := harness.Adoptions(out), []string{"REFUSES " + theirNS, "adopted " + ourNS}; !slices.Equal(got, want) {
		t.Fatalf("migrate --apply lists %v, want %v:\n%s", got, want, out)
	}
	p, found, err := s.OKD.Project(ctx(t), ourNS)
	if err != nil || !found {
		t.Fatalf("project %s: %v, %v", ourNS, found, err)
	}
	if p.Labels[okd.LabelManagedBy] != okd.ManagedByValue || p.Annotations[okd.AnnotationResourceUUID] != ours {
		t.Errorf("adopted project: labels %v, annotations %v; want sitebus's mark for %s", p.Labels, p.Annotations, ours)
	}

	s.Start()
	up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: ours, Limits: map[string]int{"cpu": 3, "ram": 6, "storage": 10}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("update of the adopted project: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(30))
	}
	updated := map[string]string{"requests.cpu": "3", "limits.cpu": "6", "requests.memory": "6Gi", "limits.memory": "12Gi", "requests.storage": "10Gi"}
	s.waitQuota("quota after update", ourNS, updated)

	for _, st := range []struct {
		name  string
		flags waldursim.FlagsRequest
		check func(map[string]string) bool
	}{
		{"pause zeroes the adopted project's quota", waldursim.FlagsRequest{Paused: ptr(true)}, allZero},
		{"unpause restores the limits of before", waldursim.FlagsRequest{Paused: ptr(false)}, equal(updated)},
	} {
		if _, err := s.Admin.SetFlags(ctx(t), ours, st.flags); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 60*time.Second, st.name, func() bool { return st.check(s.hardQuota(ourNS)) })
	}

	s.setTeam(ours, member("alice01", "PROJECT.ADMIN"), true)
	s.waitBindings("alice01 bound", ourNS, map[string]string{"alice01": "admin"})
	s.setTeam(ours, member("alice01", "PROJECT.MEMBER"), true)
	s.waitBindings("alice01 re-bound after the role change", ourNS, map[string]string{"alice01": "view"})

	s.terminateDone(t, ours, ourNS)

	if after := foreign(); !reflect.DeepEqual(after, before) {
		t.Errorf("another user's project changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if q := s.hardQuota(theirNS); q != nil {
		t.Errorf("another user's project got a quota: %v", q)
	}
	if got := s.bindings(theirNS); !maps.Equal(got, map[string]string{}) {
		t.Errorf("another user's project got bindings: %v", got)
	}
}
