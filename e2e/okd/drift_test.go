package okd_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/pkg/backend/okd"
)

// A user's RoleBinding deleted by hand: `sitebus drift` lists it and
// nothing else (the quota as created is no drift), --repair has the
// running sitebus's membership service bind the user again, and a second
// report is clean.
func TestDriftOfADeletedRoleBinding(t *testing.T) {
	s := newSite(t)
	_, res := s.createDone("drift-lab", map[string]int{"cpu": 2, "ram": 4, "storage": 10}, member("alice01", "PROJECT.MANAGER"))
	ns := res.BackendID
	s.waitBindings("bindings after create", ns, map[string]string{"alice01": "edit"})
	if err := s.Cluster.Dynamic().Resource(roleBindingGVR).Namespace(ns).Delete(ctx(t), okd.BindingPrefix+"alice01", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	out, code := s.Command(t, "drift")
	if code != 1 || !strings.Contains(out, "bindings "+ns+"/waldur-alice01") || !strings.Contains(out, "want alice01 bound to edit, have no binding") {
		t.Fatalf("drift exit %d, want 1 listing alice01's deleted binding:\n%s", code, out)
	}
	if strings.Contains(out, "limits") || strings.Contains(out, "flags") {
		t.Errorf("drift lists the quota as created:\n%s", out)
	}
	out, code = s.Command(t, "drift", "--repair", "--nats-url", s.Sitebus.NATSURL)
	if code != 0 {
		t.Fatalf("drift --repair exit %d, want 0:\n%s", code, out)
	}
	s.waitBindings("bindings after the repair", ns, map[string]string{"alice01": "edit"})
	if out, code = s.Command(t, "drift"); code != 0 {
		t.Errorf("drift after the repair exit %d, want 0:\n%s", code, out)
	}
}
