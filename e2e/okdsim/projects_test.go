package okdsim_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/okdsim"
)

var (
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	quotaGVR       = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
)

func TestProjectRequest(t *testing.T) {
	e := newEnv(t, okdsim.Options{})

	t.Run("creates the namespace with OpenShift's annotations and an admin binding, ignoring the request's annotations", func(t *testing.T) {
		name := e.uniqueName(t, "waldur-alloc")
		r := e.c.requestProject(name, "Prod env", "the prod env", map[string]string{"waldur/organization": "org"}).
			want(t, http.StatusCreated)
		eq(t, "kind", r.str("kind"), "Project")
		eq(t, "apiVersion", r.str("apiVersion"), "project.openshift.io/v1")
		eq(t, "name", r.str("metadata", "name"), name)
		eq(t, "phase", r.str("status", "phase"), "Active")

		ns, err := e.dyn.Resource(namespaceGVR).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace not created: %v", err)
		}
		a := ns.GetAnnotations()
		eq(t, "display-name", a[okdsim.DisplayNameAnnotation], "Prod env")
		eq(t, "description", a[okdsim.DescriptionAnnotation], "the prod env")
		eq(t, "requester", a[okdsim.RequesterAnnotation], okdsim.DefaultUser)
		if v, ok := a["waldur/organization"]; ok {
			t.Errorf("request annotation waldur/organization=%q reached the namespace; OpenShift drops it", v)
		}
		rb, err := e.dyn.Resource(roleBindingGVR).Namespace(name).Get(e.ctx, okdsim.AdminBindingName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("admin binding: %v", err)
		}
		role, _, _ := unstructuredString(rb.Object, "roleRef", "name")
		eq(t, "admin binding role", role, "admin")
		subjects, _ := rb.Object["subjects"].([]any)
		if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != okdsim.DefaultUser {
			t.Errorf("admin binding subjects %v, want the requester", subjects)
		}
	})

	t.Run("an existing namespace is a 409 AlreadyExists Status", func(t *testing.T) {
		name := e.uniqueName(t, "dup")
		e.c.requestProject(name, "", "", nil).want(t, http.StatusCreated)
		r := e.c.requestProject(name, "", "", nil).wantStatus(t, http.StatusConflict, "AlreadyExists")
		eq(t, "message", r.str("message"), `project.project.openshift.io "`+name+`" already exists`)
	})

	rejected := map[string]struct {
		name   string
		code   int
		reason string
	}{
		"an upper-case name is Invalid":             {"Bad_Name", http.StatusUnprocessableEntity, "Invalid"},
		"a one-letter name is Invalid":              {"a", http.StatusUnprocessableEntity, "Invalid"},
		"no name is Invalid":                        {"", http.StatusUnprocessableEntity, "Invalid"},
		"a reserved name is Forbidden":              {"openshift", http.StatusForbidden, "Forbidden"},
		"a reserved prefix is Forbidden":            {"kube-mine", http.StatusForbidden, "Forbidden"},
		"a name longer than a DNS label is Invalid": {longName, http.StatusUnprocessableEntity, "Invalid"},
	}
	for desc, tc := range rejected {
		t.Run(desc, func(t *testing.T) {
			e.c.requestProject(tc.name, "", "", nil).wantStatus(t, tc.code, tc.reason)
			if tc.name != "" {
				if _, err := e.dyn.Resource(namespaceGVR).Get(e.ctx, tc.name, metav1.GetOptions{}); err == nil {
					t.Errorf("namespace %s exists after a rejected request", tc.name)
				}
			}
		})
	}

	t.Run("a body that is not JSON is a 400 BadRequest", func(t *testing.T) {
		e.c.do("POST", api+"/projectrequests", "not an object").wantStatus(t, http.StatusBadRequest, "BadRequest")
	})
}

const longName = "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij-abc"

func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

func TestProjectDelete(t *testing.T) {
	e := newEnv(t, okdsim.Options{})
	name := e.uniqueName(t, "proj")
	e.c.requestProject(name, "P", "d", nil).want(t, http.StatusCreated)

	t.Run("delete answers Success and the namespace goes away", func(t *testing.T) {
		r := e.c.do("DELETE", api+"/projects/"+name, nil).want(t, http.StatusOK)
		eq(t, "kind", r.str("kind"), "Status")
		eq(t, "status", r.str("status"), "Success")
		// The namespace controller finishes the delete; until then the
		// project is Terminating, as in OpenShift.
		ns, err := e.dyn.Resource(namespaceGVR).Get(e.ctx, name, metav1.GetOptions{})
		if err == nil && ns.GetDeletionTimestamp() == nil {
			t.Errorf("namespace %s not being deleted", name)
		}
		e.c.do("DELETE", api+"/projects/no-such-"+name, nil).wantStatus(t, http.StatusNotFound, "NotFound")
	})
	t.Run("a DeleteOptions body with data after it is a 400 BadRequest", func(t *testing.T) {
		other := e.uniqueName(t, "proj")
		e.c.requestProject(other, "P", "d", nil).want(t, http.StatusCreated)
		req, err := http.NewRequestWithContext(e.ctx, "DELETE", e.c.base+api+"/projects/"+other, strings.NewReader(`{"kind":"DeleteOptions"} {}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.c.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		eq(t, "status", resp.StatusCode, http.StatusBadRequest)
		ns, err := e.dyn.Resource(namespaceGVR).Get(e.ctx, other, metav1.GetOptions{})
		if err != nil || ns.GetDeletionTimestamp() != nil {
			t.Errorf("namespace %s deleted by a refused delete (err %v)", other, err)
		}
	})
}
