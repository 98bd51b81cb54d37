package backends_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/backendtest"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/config"
)

var (
	quotaGVR       = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// okdComponents are the conformance suite's components (Waldur's ram
// type for memory).
var okdComponents = map[string]config.BackendComponent{
	"cpu": {}, "ram": {Extra: map[string]any{"type": "ram"}}, "storage": {},
}

type okdEnv struct {
	b         *okd.Backend
	sim       *okdsim.Server
	dyn       dynamic.Interface
	tokenFile string // the backend's own token file
}

// newOKD starts a simulator in front of the shared cluster and a backend
// with a namespace_prefix of its own (so List sees only its projects),
// reading its token from a file of its own.
func newOKD(t *testing.T) okdEnv {
	t.Helper()
	c := kube.Shared(t)
	sim := okdsim.NewTestServer(t, okdsim.Options{Kube: c.RESTConfig()})
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	prefix := "okd" + hex.EncodeToString(rnd[:]) + "-"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(sim.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := okd.DecodeSettings(map[string]any{
		"api_url":          sim.URL(),
		"namespace_prefix": prefix,
		"token_config":     map[string]any{"token_type": "file", "token_file_path": tokenFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := okd.New(s, okdComponents, okd.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dyn := c.Dynamic()
	t.Cleanup(func() {
		list, err := dyn.Resource(namespaceGVR).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.GetName(), prefix) {
				_ = dyn.Resource(namespaceGVR).Delete(context.Background(), ns.GetName(), metav1.DeleteOptions{})
			}
		}
	})
	return okdEnv{b: b, sim: sim, dyn: dyn, tokenFile: tokenFile}
}

func TestOKDConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backendtest.Target {
			e := newOKD(t)
			return backendtest.Target{Backend: e.b, Foreign: e.foreign}
		},
	})
}

// foreign seeds a project as another user would (no sitebus label) and
// returns a check that neither it nor its contents changed.
func (e okdEnv) foreign(t *testing.T, name string) func(*testing.T) {
	t.Helper()
	err := e.sim.SeedProject(testCtx(t), okdsim.Project{Name: name, DisplayName: "Theirs",
		Annotations: map[string]string{"waldur/organization": "someone"}, Labels: map[string]string{"team": "other"}})
	if err != nil {
		t.Fatalf("seed foreign project %s: %v", name, err)
	}
	before, err := e.dyn.Resource(namespaceGVR).Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T) {
		t.Helper()
		after, err := e.dyn.Resource(namespaceGVR).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("foreign project %s: %v", name, err)
		}
		if after.GetResourceVersion() != before.GetResourceVersion() || after.GetDeletionTimestamp() != nil ||
			!maps.Equal(after.GetLabels(), before.GetLabels()) || !maps.Equal(after.GetAnnotations(), before.GetAnnotations()) {
			t.Errorf("foreign project %s changed:\nbefore %v\nafter  %v", name, before.Object, after.Object)
		}
		if _, err := e.dyn.Resource(quotaGVR).Namespace(name).Get(testCtx(t), okd.QuotaName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("foreign project %s got a quota (err %v)", name, err)
		}
	}
}

// The project carries the seed's annotations and sitebus's mark, and the
// quota the 2× limits.
func TestOKDProjectLayout(t *testing.T) {
	e := newOKD(t)
	r := backendtest.DefaultResource("layout")
	r.Name = "Production Environment"
	r.CustomerSlug, r.ProjectSlug = "acme", "webdev"
	c, err := e.b.Create(testCtx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	prefix := e.b.Settings().NamespacePrefix
	if c.BackendID != prefix+"alloc-layout" {
		t.Errorf("BackendID %s", c.BackendID)
	}
	p, found, err := e.sim.Project(testCtx(t), c.BackendID)
	if err != nil || !found {
		t.Fatalf("project %s: %v, %v", c.BackendID, found, err)
	}
	want := map[string]string{
		"openshift.io/description":  "Production Environment",
		"openshift.io/display-name": "Production Environment",
		"waldur/organization":       prefix + "org-acme",
		"waldur/parent":             prefix + "proj-webdev",
		okd.AnnotationResourceUUID:  r.UUID,
	}
	for k, v := range want {
		if p.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, p.Annotations[k], v)
		}
	}
	if p.Labels[okd.LabelManagedBy] != okd.ManagedByValue {
		t.Errorf("labels %v lack sitebus's mark", p.Labels)
	}
	expectHard(t, e, c.BackendID, map[string]string{"requests.cpu": "2", "limits.cpu": "4", "requests.memory": "4Gi",
		"limits.memory": "8Gi", "requests.storage": "10Gi"})
	if _, err := e.b.SetLimits(testCtx(t), c.BackendID, map[string]float64{"cpu": 3, "ram": 1.5}); err != nil {
		t.Fatal(err)
	}
	expectHard(t, e, c.BackendID, map[string]string{"requests.cpu": "3", "limits.cpu": "6", "requests.memory": "1536Mi",
		"limits.memory": "3Gi", "requests.storage": "10Gi"})
	if err := e.b.Downscale(testCtx(t), c.BackendID); err != nil {
		t.Fatal(err)
	}
	expectHard(t, e, c.BackendID, map[string]string{"requests.cpu": "1", "limits.cpu": "2", "requests.memory": "1Gi",
		"limits.memory": "2Gi", "requests.storage": "1Gi", "pods": "1"})
}

func expectHard(t *testing.T, e okdEnv, ns string, want map[string]string) {
	t.Helper()
	q, err := e.dyn.Resource(quotaGVR).Namespace(ns).Get(testCtx(t), okd.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hard, _, _ := unstructured.NestedStringMap(q.Object, "spec", "hard")
	if !maps.Equal(hard, want) {
		t.Errorf("quota hard = %v\nwant         %v", hard, want)
	}
}

// One binding per user to the mapped ClusterRole; a role change re-binds,
// a removed user loses the binding; bindings sitebus did not make stay.
func TestOKDRoleBindings(t *testing.T) {
	e := newOKD(t)
	c, err := e.b.Create(testCtx(t), backendtest.DefaultResource("team"))
	if err != nil {
		t.Fatal(err)
	}
	rbs := e.dyn.Resource(roleBindingGVR).Namespace(c.BackendID)
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "waldur-carol"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
		"subjects": []any{
			map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"},
			map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dave"},
		},
	}}
	if _, err := rbs.Create(testCtx(t), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindings := func() map[string]string {
		t.Helper()
		list, err := rbs.List(testCtx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, rb := range list.Items {
			role, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name")
			out[rb.GetName()] = role
		}
		return out
	}
	step := func(users map[string]string, wantChanged bool, want map[string]string) {
		t.Helper()
		changed, err := e.b.SetRoleBindings(testCtx(t), c.BackendID, users)
		if err != nil || changed != wantChanged {
			t.Fatalf("SetRoleBindings(%v) = %v, %v; want changed %v", users, changed, err, wantChanged)
		}
		// The simulator's template binds the requester as "admin".
		want = maps.Clone(want)
		want["admin"], want["waldur-carol"] = "admin", "view"
		if got := bindings(); !maps.Equal(got, want) {
			t.Errorf("bindings %v, want %v", got, want)
		}
	}
	step(map[string]string{"alice@example.com": "Owner", "bob": "Member", "eve": "guest"}, true,
		map[string]string{"waldur-alice@example.com": "admin", "waldur-bob": "view", "waldur-eve": "edit"})
	step(map[string]string{"alice@example.com": "Owner", "bob": "Member", "eve": "guest"}, false,
		map[string]string{"waldur-alice@example.com": "admin", "waldur-bob": "view", "waldur-eve": "edit"})
	step(map[string]string{"alice@example.com": "Owner", "bob": "Manager"}, true,
		map[string]string{"waldur-alice@example.com": "admin", "waldur-bob": "edit"})
	step(map[string]string{"bob": "Manager"}, true, map[string]string{"waldur-bob": "edit"})

	// carol's name is taken by a binding sitebus did not make.
	_, err = e.b.SetRoleBindings(testCtx(t), c.BackendID, map[string]string{"bob": "Manager", "carol": "Member"})
	if !errors.Is(err, backend.ErrNotManaged) {
		t.Errorf("binding over a foreign one: err = %v, want ErrNotManaged", err)
	}
	if got := bindings(); got["waldur-carol"] != "view" || got["waldur-bob"] != "edit" {
		t.Errorf("bindings %v", got)
	}
}

// The API server stops taking the token while the backend's file still
// looks unchanged (same size and time, as a copy that keeps times does):
// one 401, the file is read again, and the call succeeds.
func TestOKDTokenRotatedMidRun(t *testing.T) {
	e := newOKD(t)
	c, err := e.b.Create(testCtx(t), backendtest.DefaultResource("rotate"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(e.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	old := e.sim.Token()
	fresh := "sha256~" + strings.Repeat("r", len(old)-len("sha256~"))
	if err := e.sim.RotateToken(fresh); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.tokenFile, []byte(fresh+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(e.tokenFile, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	e.sim.ResetCalls()
	if _, err := e.b.SetLimits(testCtx(t), c.BackendID, backendtest.NewLimits); err != nil {
		t.Fatalf("SetLimits after rotation: %v", err)
	}
	if n := e.sim.CallCount("", "/", 401); n != 1 {
		t.Errorf("%d calls answered 401, want exactly one", n)
	}
	got, err := e.b.Limits(testCtx(t), c.BackendID)
	if err != nil || !maps.Equal(got, backendtest.NewLimits) {
		t.Errorf("Limits = %v, %v; want %v", got, err, backendtest.NewLimits)
	}

	// A rotation the file shows (new size) costs no 401 at all.
	newer := fresh + "-2"
	if err := e.sim.RotateToken(newer); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.tokenFile, []byte(newer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.sim.ResetCalls()
	if err := e.b.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.CallCount("", "/", 401); n != 0 {
		t.Errorf("%d calls answered 401 after a visible rotation, want none", n)
	}
}
