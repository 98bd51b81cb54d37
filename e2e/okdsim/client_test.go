package okdsim_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/okdsim"
)

var (
	projectGVR        = schema.GroupVersionResource{Group: "project.openshift.io", Version: "v1", Resource: "projects"}
	projectRequestGVR = schema.GroupVersionResource{Group: "project.openshift.io", Version: "v1", Resource: "projectrequests"}
	userGVR           = schema.GroupVersionResource{Group: "user.openshift.io", Version: "v1", Resource: "users"}
)

// TestClientGo uses client-go against the simulator as a Go OKD backend
// would: a rest.Config with the simulator's URL and token.
func TestClientGo(t *testing.T) {
	e := newEnv(t, okdsim.Options{})
	cfg := &rest.Config{Host: e.sim.URL(), BearerToken: e.sim.Token(), Timeout: 30 * time.Second}

	t.Run("discovery finds the project group next to the real server's groups", func(t *testing.T) {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		groups, err := dc.ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range groups.Groups {
			names = append(names, g.Name)
		}
		for _, want := range []string{"project.openshift.io", "rbac.authorization.k8s.io", ""} {
			if !slices.Contains(names, want) {
				t.Errorf("groups %v lack %q", names, want)
			}
		}
		res, err := dc.ServerResourcesForGroupVersion("project.openshift.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, r := range res.APIResources {
			kinds = append(kinds, r.Name+"/"+r.Kind)
		}
		slices.Sort(kinds)
		if !slices.Equal(kinds, []string{"projectrequests/ProjectRequest", "projects/Project"}) {
			t.Errorf("resources %v", kinds)
		}
	})

	t.Run("a dynamic client requests and deletes a project", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := e.uniqueName(t, "dyn")
		req := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "project.openshift.io/v1", "kind": "ProjectRequest",
			"metadata": map[string]any{"name": name}, "displayName": "Dyn", "description": "via client-go",
		}}
		created, err := dyn.Resource(projectRequestGVR).Create(e.ctx, req, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("project request: %v", err)
		}
		eq(t, "kind", created.GetKind(), "Project")
		_, err = dyn.Resource(projectRequestGVR).Create(e.ctx, req, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Errorf("second request: %v, want AlreadyExists", err)
		}
		stale := types.UID("not-" + string(created.GetUID()))
		err = dyn.Resource(projectGVR).Delete(e.ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &stale}})
		if !apierrors.IsConflict(err) {
			t.Errorf("delete with a stale UID: %v, want Conflict", err)
		}
		uid := created.GetUID()
		if err := dyn.Resource(projectGVR).Delete(e.ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
			t.Fatal(err)
		}
		if err := dyn.Resource(projectGVR).Delete(e.ctx, "no-such-"+name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("delete missing: %v, want NotFound", err)
		}
	})

	t.Run("a rotated token is an Unauthorized error for client-go", func(t *testing.T) {
		old := e.sim.Token()
		if err := e.sim.RotateToken("sha256~client-go-rotated"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.sim.RotateToken(old) })
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(userGVR).Get(e.ctx, "~", metav1.GetOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("old token: %v, want Unauthorized", err)
		}
		fresh := rest.CopyConfig(cfg)
		fresh.BearerToken = "sha256~client-go-rotated"
		dyn, err = dynamic.NewForConfig(fresh)
		if err != nil {
			t.Fatal(err)
		}
		if u, err := dyn.Resource(userGVR).Get(e.ctx, "~", metav1.GetOptions{}); err != nil || u.GetName() != okdsim.DefaultUser {
			t.Errorf("new token: %v, %v", u, err)
		}
	})
}

func TestFaults(t *testing.T) {
	e := newEnv(t, okdsim.Options{})

	t.Run("a fault answers the next N matching calls, then the API does", func(t *testing.T) {
		e.sim.AddFault(okdsim.Fault{Method: "GET", PathPrefix: whoami, Status: http.StatusServiceUnavailable, Count: 2})
		for range 2 {
			e.c.do("GET", whoami, nil).wantStatus(t, http.StatusServiceUnavailable, "InternalError")
		}
		e.c.do("GET", whoami, nil).want(t, http.StatusOK)
		calls := e.sim.Calls()
		var faulted []bool
		for _, c := range calls {
			faulted = append(faulted, c.Faulted)
		}
		if !slices.Equal(faulted, []bool{true, true, false}) {
			t.Errorf("faulted flags %v, want [true true false]", faulted)
		}
		eq(t, "503s counted", e.sim.CallCount("GET", whoami, http.StatusServiceUnavailable), 2)
	})

	t.Run("a fault on a proxied path answers before the API server", func(t *testing.T) {
		e.sim.AddFault(okdsim.Fault{Method: "POST", PathPrefix: "/api/v1/namespaces/", Status: http.StatusInternalServerError, Count: 1})
		e.c.do("POST", "/api/v1/namespaces/default/resourcequotas", map[string]any{}).
			wantStatus(t, http.StatusInternalServerError, "InternalError")
	})

	t.Run("down answers 503 to everything, OAuth included, until lifted", func(t *testing.T) {
		e.sim.Down(true)
		e.c.do("GET", "/api/v1", nil).want(t, http.StatusServiceUnavailable)
		e.c.do("POST", "/oauth/token", nil).want(t, http.StatusServiceUnavailable)
		e.sim.Down(false)
		e.c.do("GET", "/api/v1", nil).want(t, http.StatusOK)
	})
}
