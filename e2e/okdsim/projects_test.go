package okdsim_test

import (
	"net/http"
	"slices"
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

func projectNames(r response) []string {
	items, _ := r.obj["items"].([]any)
	out := []string{}
	for _, it := range items {
		out = append(out, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	return out
}

func TestProjects(t *testing.T) {
	e := newEnv(t, okdsim.Options{})
	name := e.uniqueName(t, "proj")
	e.c.requestProject(name, "P", "d", nil).want(t, http.StatusCreated)
	plain := e.uniqueName(t, "plain") // a namespace nobody requested
	if err := e.sim.SeedProject(e.ctx, okdsim.Project{Name: "unused-" + plain}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.dyn.Resource(namespaceGVR).Delete(e.ctx, "unused-"+plain, metav1.DeleteOptions{}) })
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": plain}}
	e.c.do("POST", "/api/v1/namespaces", ns).want(t, http.StatusCreated)

	t.Run("the list has requested and seeded projects, not plain namespaces", func(t *testing.T) {
		r := e.c.do("GET", api+"/projects", nil).want(t, http.StatusOK)
		eq(t, "kind", r.str("kind"), "ProjectList")
		names := projectNames(r)
		if !slices.Contains(names, name) || !slices.Contains(names, "unused-"+plain) {
			t.Errorf("list %v lacks %s or the seeded project", names, name)
		}
		if slices.Contains(names, plain) || slices.Contains(names, "kube-system") {
			t.Errorf("list %v has a namespace nobody requested", names)
		}
	})

	t.Run("a label selector narrows the list", func(t *testing.T) {
		e.c.doType("PATCH", api+"/projects/"+name, "application/merge-patch+json",
			map[string]any{"metadata": map[string]any{"labels": map[string]string{"sel": name}}}).want(t, http.StatusOK)
		r := e.c.do("GET", api+"/projects?labelSelector=sel%3D"+name, nil).want(t, http.StatusOK)
		if got := projectNames(r); !slices.Equal(got, []string{name}) {
			t.Errorf("selected %v, want [%s]", got, name)
		}
	})

	t.Run("get returns the project with its annotations", func(t *testing.T) {
		r := e.c.do("GET", api+"/projects/"+name, nil).want(t, http.StatusOK)
		eq(t, "kind", r.str("kind"), "Project")
		eq(t, "display name", r.str("metadata", "annotations", okdsim.DisplayNameAnnotation), "P")
	})

	t.Run("get of a missing project is a 404 naming the project", func(t *testing.T) {
		r := e.c.do("GET", api+"/projects/no-such-"+name, nil).wantStatus(t, http.StatusNotFound, "NotFound")
		eq(t, "message", r.str("message"), `projects.project.openshift.io "no-such-`+name+`" not found`)
	})

	t.Run("a merge patch adds and removes annotations on the namespace", func(t *testing.T) {
		e.c.doType("PATCH", api+"/projects/"+name, "application/merge-patch+json", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"waldur/organization": "org-x", okdsim.DescriptionAnnotation: nil}},
		}).want(t, http.StatusOK)
		p, _, err := e.sim.Project(e.ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "waldur/organization", p.Annotations["waldur/organization"], "org-x")
		if _, ok := p.Annotations[okdsim.DescriptionAnnotation]; ok {
			t.Error("description annotation still there after a null patch")
		}
	})

	t.Run("a JSON patch outside metadata labels and annotations is Invalid", func(t *testing.T) {
		e.c.doType("PATCH", api+"/projects/"+name, "application/json-patch+json",
			[]map[string]any{{"op": "add", "path": "/spec/finalizers/-", "value": "x"}}).wantStatus(t, http.StatusUnprocessableEntity, "Invalid")
	})

	t.Run("put replaces labels and annotations; a stale resourceVersion is a 409 Conflict", func(t *testing.T) {
		cur := e.c.do("GET", api+"/projects/"+name, nil).want(t, http.StatusOK).obj
		md := cur["metadata"].(map[string]any)
		md["annotations"] = map[string]any{"waldur/managed": "yes"}
		stale := md["resourceVersion"]
		r := e.c.do("PUT", api+"/projects/"+name, cur).want(t, http.StatusOK)
		eq(t, "managed", r.str("metadata", "annotations", "waldur/managed"), "yes")
		eq(t, "display name gone", r.str("metadata", "annotations", okdsim.DisplayNameAnnotation), "")
		md["resourceVersion"] = stale
		e.c.do("PUT", api+"/projects/"+name, cur).wantStatus(t, http.StatusConflict, "Conflict")
	})

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
}
