package okdsim_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sitebus/sitebus/e2e/okdsim"
)

// TestPassthrough makes the Python plugin's quota and role binding calls
// through the simulator and checks the real cluster.
func TestPassthrough(t *testing.T) {
	e := newEnv(t, okdsim.Options{})
	ns := e.uniqueName(t, "pass")
	e.c.requestProject(ns, "", "", nil).want(t, http.StatusCreated)
	quotaPath := "/api/v1/namespaces/" + ns + "/resourcequotas"
	bindingsPath := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings"

	t.Run("the API root answers an APIResourceList (the plugin's ping)", func(t *testing.T) {
		eq(t, "kind", e.c.do("GET", "/api/v1", nil).want(t, http.StatusOK).str("kind"), "APIResourceList")
	})

	t.Run("a ResourceQuota is created for real and the controller manager fills its status", func(t *testing.T) {
		e.c.do("GET", quotaPath+"/waldur-quota", nil).wantStatus(t, http.StatusNotFound, "NotFound")
		e.c.do("POST", quotaPath, map[string]any{
			"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": map[string]any{"name": "waldur-quota", "namespace": ns},
			"spec":     map[string]any{"hard": map[string]any{"requests.cpu": "2", "limits.cpu": "4", "requests.memory": "4Gi", "pods": "3"}},
		}).want(t, http.StatusCreated)
		var used map[string]any
		err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			q, err := e.dyn.Resource(quotaGVR).Namespace(ns).Get(e.ctx, "waldur-quota", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			used, _, _ = unstructured.NestedMap(q.Object, "status", "used")
			return used["pods"] != nil, nil
		})
		if err != nil {
			t.Fatalf("quota status.used never filled: %v", err)
		}
		eq(t, "used pods", used["pods"], any("0"))
		// The plugin reads usage back through the simulator.
		r := e.c.do("GET", quotaPath+"/waldur-quota", nil).want(t, http.StatusOK)
		eq(t, "hard limits.cpu via proxy", r.str("status", "hard", "limits.cpu"), "4")
	})

	t.Run("a RoleBinding is created, listed and deleted for real", func(t *testing.T) {
		e.c.do("POST", bindingsPath, map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "waldur-alice", "namespace": ns},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}},
		}).want(t, http.StatusCreated)
		rb, err := e.dyn.Resource(roleBindingGVR).Namespace(ns).Get(e.ctx, "waldur-alice", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("binding not in the cluster: %v", err)
		}
		role, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name")
		eq(t, "role", role, "edit")
		items, _ := e.c.do("GET", bindingsPath, nil).want(t, http.StatusOK).obj["items"].([]any)
		eq(t, "bindings listed (admin from the template, waldur-alice)", len(items), 2)
		e.c.do("DELETE", bindingsPath+"/waldur-alice", nil).want(t, http.StatusOK)
		if _, err := e.dyn.Resource(roleBindingGVR).Namespace(ns).Get(e.ctx, "waldur-alice", metav1.GetOptions{}); err == nil {
			t.Error("binding still in the cluster after DELETE")
		}
	})

	t.Run("the simulator's token does not reach the API server, which still authorises the call", func(t *testing.T) {
		// The test cluster does not know the simulator's token: a 200
		// proves the proxy replaced it with the cluster's credentials.
		e.c.do("GET", "/api/v1/namespaces/"+ns, nil).want(t, http.StatusOK)
	})
}
