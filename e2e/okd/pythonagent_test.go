package okd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// sitebus started as a systemd unit written for the Python agent starts it
// (`-m order_process`, WALDUR_LOG_LEVEL=debug): it runs the mode's
// services, logs at debug level, and a create binds the team, a project
// administrator (PROJECT.ADMIN) to OpenShift's admin role.
func TestOKDStartedAsThePythonAgentsUnit(t *testing.T) {
	s := newSite(t, harness.WithArgs("-m", "order_process"), harness.WithEnv("WALDUR_LOG_LEVEL=debug"))
	_, res := s.createDone("py-unit", map[string]int{"cpu": 1, "ram": 1, "storage": 1},
		member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER"))
	s.waitBindings("bindings after create", res.BackendID, map[string]string{"alice01": "admin", "bob01": "view"})

	out := s.Sitebus.Output()
	var running string
	for line := range strings.Lines(out) {
		if strings.Contains(line, `msg="sitebus running"`) {
			running = line
		}
	}
	if !strings.Contains(running, "mode=order_process") ||
		!strings.Contains(running, "[stomp-bridge order membership keycloak-sync saga-coordinator cluster-provisioner]") {
		t.Errorf("start line %q; want order_process's services", running)
	}
	if !strings.Contains(out, "level=DEBUG") {
		t.Errorf("no debug record with WALDUR_LOG_LEVEL=debug:\n%s", s.Sitebus.Tail(20))
	}
}

// The API server answers a request with 403 Forbidden after an external
// system rotated the token (the file still looks unchanged): sitebus reads
// the file again, as the Python plugin refreshes on 401 and 403, and the
// request succeeds with the new token at once, with no 401 on the way.
func TestOKDTokenForbiddenMidRun(t *testing.T) {
	s := newSite(t)
	_, resUUID, backendID, old, fresh := s.rotateUnseen("forbid", "f")
	// OpenShift's body for a token whose account may not do the call.
	s.OKD.AddFault(okdsim.Fault{PathPrefix: "/", Status: http.StatusForbidden, Count: 1,
		Body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"` + backendID +
			`\" is forbidden: User \"system:serviceaccount:waldur:agent\" cannot get resource \"namespaces\" in API group \"\"","reason":"Forbidden","code":403}`})
	up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 2, "ram": 1, "storage": 1}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("update after the rotation: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	s.waitQuota("quota after the rotation", backendID, map[string]string{"requests.cpu": "2", "limits.cpu": "4",
		"requests.memory": "1Gi", "limits.memory": "2Gi", "requests.storage": "1Gi"})
	if n := s.OKD.CallCount("", "/", http.StatusForbidden); n != 1 {
		t.Errorf("%d calls answered 403, want the one injected", n)
	}
	if n := s.OKD.CallCount("", "/", http.StatusUnauthorized); n != 0 {
		t.Errorf("%d calls answered 401; want none: the 403 should have read the rotated token", n)
	}
	if strings.Contains(s.Sitebus.Output(), fresh) || strings.Contains(s.Sitebus.Output(), old) {
		t.Error("sitebus logged the OpenShift token")
	}
}
