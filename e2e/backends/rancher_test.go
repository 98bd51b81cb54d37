package backends_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/backendtest"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// rancherComponents are the components of the reference configuration,
// keyed as the suite's limits are (cpu, ram, storage).
func rancherComponents() map[string]config.BackendComponent {
	return map[string]config.BackendComponent{
		"cpu":     {Extra: map[string]any{"type": "cpu"}},
		"ram":     {Extra: map[string]any{"type": "ram"}},
		"storage": {Extra: map[string]any{"type": "storage"}},
	}
}

// newRancher returns a Rancher backend on a simulator of its own, backed by
// the shared kube-apiserver. Each gets a project prefix of its own, since
// namespaces (named after projects) are real and shared by every simulator.
func newRancher(t *testing.T, raw map[string]any, opts ranchersim.Options) (*rancher.Backend, *ranchersim.Server) {
	t.Helper()
	opts.Kube = cluster(t).RESTConfig()
	sim := ranchersim.NewTestServer(t, opts)
	o := sim.Options()
	var b [3]byte
	_, _ = rand.Read(b[:])
	settings := map[string]any{
		"backend_url": sim.URL(), "username": o.AccessKey, "password": o.SecretKey,
		"cluster_id": o.ClusterID, "project_prefix": "r" + hex.EncodeToString(b[:]) + "-",
	}
	maps.Copy(settings, raw)
	s, err := rancher.DecodeSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	be, err := rancher.New(s, rancherComponents(), rancher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return be, sim
}

func TestRancherConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backendtest.Target {
			b, sim := newRancher(t, nil, ranchersim.Options{})
			return backendtest.Target{
				Backend: b,
				Foreign: func(t *testing.T, name string) func(*testing.T) { return foreignProject(t, sim, name) },
			}
		},
		// An empty slug names the project by the UUID, as in Python.
		InvalidSlugs: slicesWithout(backendtest.DefaultInvalidSlugs, ""),
		PlatformIDs:  true,
	})
}

func slicesWithout(in []string, drop string) []string {
	var out []string
	for _, s := range in {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// foreignProject creates a project as someone clicking in Rancher would
// (no waldur/managed annotation) and returns a check that nothing changed
// it or made anything in it.
func foreignProject(t *testing.T, sim *ranchersim.Server, name string) func(*testing.T) {
	t.Helper()
	before, err := sim.AddProject(ranchersim.Project{Name: name, Description: "someone else's",
		Annotations: map[string]string{"team": "someone-else"}})
	if err != nil {
		t.Fatal(err)
	}
	imports := len(sim.Imports())
	return func(t *testing.T) {
		t.Helper()
		after, ok := sim.Project(before.ID)
		if !ok {
			t.Fatalf("foreign project %s is gone", before.ID)
		}
		if after.Name != before.Name || after.Description != before.Description || !maps.Equal(after.Annotations, before.Annotations) {
			t.Errorf("foreign project changed:\nbefore %+v\nafter  %+v", before, after)
		}
		if n := len(sim.ProjectsNamed(name)); n != 1 {
			t.Errorf("%d projects named %s, want the foreign one alone", n, name)
		}
		if bs := sim.Bindings(before.ID); len(bs) != 0 {
			t.Errorf("bindings made on the foreign project: %+v", bs)
		}
		if len(sim.Imports()) != imports {
			t.Errorf("quota imported: %+v", sim.Imports()[imports:])
		}
		if _, err := cluster(t).Dynamic().Resource(namespaceGVR).Get(testCtx(t), name, metav1.GetOptions{}); err == nil {
			t.Errorf("namespace %s was made for the foreign project", name)
		}
	}
}

// The project, namespace and quota are what the Python plugin makes: its
// annotations and description, the pod-security labels plus
// namespace_labels, and the quota manifest byte for byte.
func TestRancherLayout(t *testing.T) {
	b, sim := newRancher(t, map[string]any{"namespace_labels": map[string]any{"gpu-pool": "h100-2x"}}, ranchersim.Options{})
	r := backendtest.DefaultResource("layout")
	r.CustomerName = ""
	c, err := b.Create(testCtx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	name := b.Settings().ProjectPrefix + "layout"
	p, ok := sim.Project(c.BackendID)
	if !ok || !strings.HasPrefix(c.BackendID, sim.Options().ClusterID+":p-") {
		t.Fatalf("Create returned %q, want the project id (found %v)", c.BackendID, ok)
	}
	if p.Name != name || p.Description != "Resource layout (Customer: customer, Project: Project)" {
		t.Errorf("project %+v", p)
	}
	wantAnn := map[string]string{"waldur/organization": "customer", "waldur/managed": "true",
		"waldur/project_slug": "project", rancher.AnnotationResourceUUID: r.UUID}
	for k, v := range wantAnn {
		if p.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q (annotations %v)", k, p.Annotations[k], v, p.Annotations)
		}
	}
	ns, err := cluster(t).Dynamic().Resource(namespaceGVR).Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest", "gpu-pool": "h100-2x"} {
		if ns.GetLabels()[k] != v {
			t.Errorf("namespace label %s = %q, want %q", k, ns.GetLabels()[k], v)
		}
	}
	if ns.GetAnnotations()["waldur/managed"] != "true" || ns.GetAnnotations()[ranchersim.ProjectIDAnnotation] != c.BackendID {
		t.Errorf("namespace annotations %v", ns.GetAnnotations())
	}
	imports := sim.Imports()
	want := "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: custom-resource-quota\n  namespace: " + name + "\n" +
		"spec:\n  hard:\n    limits.cpu: 2000m\n    limits.memory: 4096Mi\n    requests.storage: 10240Mi\n"
	if len(imports) != 1 || imports[0].YAML != want || imports[0].Namespace != name || imports[0].Status != http.StatusOK {
		t.Fatalf("imports %+v\nwant one of\n%s", imports, want)
	}
	md, err := b.Metadata(testCtx(t), c.BackendID)
	if err != nil {
		t.Fatal(err)
	}
	if md["name"] != name || md["organization"] != "customer" || md["description"] != p.Description {
		t.Errorf("metadata %v", md)
	}

	// Pause keeps its marks on the project; Restore takes them away.
	if err := b.Pause(testCtx(t), c.BackendID); err != nil {
		t.Fatal(err)
	}
	if p, _ := sim.Project(c.BackendID); p.Annotations[rancher.AnnotationStatus] != "paused" ||
		p.Annotations[rancher.AnnotationSavedLimits] == "" {
		t.Errorf("paused project annotations %v", p.Annotations)
	}
	if err := b.Restore(testCtx(t), c.BackendID); err != nil {
		t.Fatal(err)
	}
	if after, _ := sim.Project(c.BackendID); !maps.Equal(after.Annotations, p.Annotations) {
		t.Errorf("restored project annotations %v, want those before the pause %v", after.Annotations, p.Annotations)
	}
}

// The group binding is Python's: the raw filter query for the lookup, the
// keycloakoidc_group principal, default_role; repeating changes nothing.
func TestRancherGroupBinding(t *testing.T) {
	b, sim := newRancher(t, map[string]any{"default_role": "project-member"}, ranchersim.Options{})
	c, err := b.Create(testCtx(t), backendtest.DefaultResource("bound"))
	if err != nil {
		t.Fatal(err)
	}
	group := rancher.ChildGroupName("project", "project-member")
	for i, wantCreated := range []bool{true, false} {
		created, err := b.BindGroup(testCtx(t), c.BackendID, group)
		if err != nil || created != wantCreated {
			t.Fatalf("BindGroup #%d = %v, %v; want %v", i+1, created, err, wantCreated)
		}
	}
	var groups []ranchersim.Binding
	for _, pb := range sim.Bindings(c.BackendID) {
		if pb.GroupPrincipalID != "" {
			groups = append(groups, pb)
		}
	}
	if len(groups) != 1 || groups[0].GroupPrincipalID != "keycloakoidc_group://project_project_project-member" ||
		groups[0].RoleTemplateID != "project-member" {
		t.Fatalf("group bindings %+v", groups)
	}
	lookup := false
	for _, call := range sim.Calls() {
		if call.Method == http.MethodGet && call.Path == "/v3/projectroletemplatebindings" {
			lookup = true
			if want := "roleTemplateId=project-member&projectId=" + c.BackendID +
				"&groupPrincipalId=keycloakoidc_group://project_project_project-member"; call.Query != want {
				t.Errorf("lookup query %q, want %q", call.Query, want)
			}
		}
	}
	if !lookup {
		t.Error("no binding lookup was made")
	}
	for i := range 2 {
		if err := b.UnbindGroup(testCtx(t), c.BackendID, group); err != nil {
			t.Fatalf("UnbindGroup #%d: %v", i+1, err)
		}
	}
	for _, pb := range sim.Bindings(c.BackendID) {
		if pb.GroupPrincipalID != "" {
			t.Errorf("binding left: %+v", pb)
		}
	}
	// A project sitebus does not manage gets no binding.
	foreign, err := sim.AddProject(ranchersim.Project{Name: "someone-elses"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.BindGroup(testCtx(t), foreign.ID, group); !errors.Is(err, backend.ErrNotManaged) {
		t.Errorf("BindGroup on a foreign project: err = %v, want ErrNotManaged", err)
	}
}

// A wrong secret key is a terminal error that names the access key and
// never the secret.
func TestRancherWrongKeyIsTerminal(t *testing.T) {
	b, sim := newRancher(t, map[string]any{"password": "not-the-secret-at-all"}, ranchersim.Options{})
	_, err := b.Create(testCtx(t), backendtest.DefaultResource("denied"))
	if !fault.IsTerminal(err) || !strings.Contains(err.Error(), sim.Options().AccessKey) ||
		strings.Contains(err.Error(), "not-the-secret-at-all") {
		t.Fatalf("err = %v, want a terminal error naming the access key", err)
	}
	if err := b.Ping(testCtx(t)); !fault.IsTerminal(err) {
		t.Errorf("Ping: err = %v, want terminal", err)
	}
}

// Rancher down (503) or hanging is retryable.
func TestRancherOutageIsRetryable(t *testing.T) {
	b, sim := newRancher(t, nil, ranchersim.Options{})
	sim.Down(true)
	_, err := b.Create(testCtx(t), backendtest.DefaultResource("outage"))
	if err == nil || fault.IsTerminal(err) || errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Create while Rancher is down: err = %v, want retryable", err)
	}
	sim.Down(false)
	if _, err := b.Create(testCtx(t), backendtest.DefaultResource("outage")); err != nil {
		t.Fatalf("Create once Rancher is back: %v", err)
	}
}

// A crash between the project and the quota is finished by the next
// Create, which is then not a repeat.
func TestRancherCreateFinishesAHalfDoneCreate(t *testing.T) {
	b, sim := newRancher(t, nil, ranchersim.Options{})
	r := backendtest.DefaultResource("half")
	sim.AddFault(ranchersim.Fault{Method: http.MethodPost, QueryContains: "action=importYaml", Status: http.StatusServiceUnavailable, Count: 1})
	if _, err := b.Create(testCtx(t), r); err == nil || fault.IsTerminal(err) {
		t.Fatalf("Create with importYaml failing: err = %v, want retryable", err)
	}
	c, err := b.Create(testCtx(t), r)
	if err != nil || c.Existed {
		t.Fatalf("second Create = %+v, %v; want the quota added, not Existed", c, err)
	}
	if n := len(sim.ProjectsNamed(b.Settings().ProjectPrefix + "half")); n != 1 {
		t.Errorf("%d projects, want 1", n)
	}
	if got, err := b.Limits(testCtx(t), c.BackendID); err != nil || !maps.Equal(got, r.Limits) {
		t.Errorf("Limits = %v, %v; want %v", got, err, r.Limits)
	}
}

// A create never adopts: a project the Python agent made (managed, naming
// no resource) of the new resource's name is refused and left as it was;
// the changes of a resource Waldur already has adopt it (package rancher's
// adopt).
func TestRancherCreateNeverAdoptsThePythonAgentsProject(t *testing.T) {
	b, sim := newRancher(t, nil, ranchersim.Options{})
	r := backendtest.DefaultResource("legacy")
	ann := map[string]string{"waldur/managed": "true", "waldur/organization": "org"}
	made, err := sim.AddProject(ranchersim.Project{Name: b.Settings().ProjectPrefix + "legacy", Annotations: ann})
	if err != nil {
		t.Fatal(err)
	}
	imports := len(sim.Imports())
	if c, err := b.Create(testCtx(t), r); !errors.Is(err, backend.ErrNotManaged) {
		t.Fatalf("Create over the Python agent's project = %+v, %v; want ErrNotManaged", c, err)
	}
	if p, ok := sim.Project(made.ID); !ok || !maps.Equal(p.Annotations, made.Annotations) || len(sim.Imports()) != imports {
		t.Errorf("the Python agent's project changed: %+v (found %v), %d quota imports", p, ok, len(sim.Imports())-imports)
	}
}

// Usage is what the pods request and the PVCs claim in all the project's
// namespaces (not the quota's status.used, whose limits.cpu is a sum of
// limits: the pods here have limits above their requests), read for many
// projects with the same few lists whatever their number; the one-project
// Usage agrees.
func TestRancherUsageAll(t *testing.T) {
	b, sim := newRancher(t, nil, ranchersim.Options{})
	c := cluster(t)
	ids := map[string]string{}
	for _, slug := range []string{"u1", "u2", "u3"} {
		cr, err := b.Create(testCtx(t), backendtest.DefaultResource(slug))
		if err != nil {
			t.Fatal(err)
		}
		ids[slug] = cr.BackendID
	}
	prefix := b.Settings().ProjectPrefix
	ns1 := prefix + "u1"
	// Requests 1 core and 2 GiB; limits 2 cores, 3 GiB (the quota admits them).
	createUsagePod(t, c, ns1, "web", podContainer{"250m", "512Mi", "500m", "1Gi"}, podContainer{"250m", "512Mi", "500m", "1Gi"})
	createUsagePod(t, c, ns1, "job", podContainer{"500m", "1Gi", "1", "1Gi"})
	createUsagePVC(t, c, ns1, "data", "3Gi")
	// A second namespace of u1, as Rancher marks one moved into a project,
	// without the quota: counted too. Its finished pod holds nothing.
	ns1b := prefix + "u1-extra"
	createProjectNamespace(t, c, ns1b, ids["u1"])
	createUsagePod(t, c, ns1b, "batch", podContainer{cpu: "1", mem: "2Gi"})
	createUsagePod(t, c, ns1b, "finished", podContainer{cpu: "16", mem: "64Gi"})
	finishPod(t, c, ns1b, "finished")
	createUsagePVC(t, c, ns1b, "scratch", "1Gi")
	createUsagePVC(t, c, prefix+"u3", "only-a-claim", "2560Mi")
	// Not in any project: not counted anywhere.
	stray := prefix + "stray"
	createProjectNamespace(t, c, stray, "")
	createUsagePod(t, c, stray, "big", podContainer{cpu: "32", mem: "128Gi"})

	want := map[string]map[string]float64{
		ids["u1"]: {"cpu": 2, "ram": 4, "storage": 4},
		ids["u2"]: {"cpu": 0, "ram": 0, "storage": 0},
		ids["u3"]: {"cpu": 0, "ram": 0, "storage": 2.5},
	}
	absent := sim.Options().ClusterID + ":p-absent"
	// Calls are counted as the client sends them: the simulator logs a
	// call after answering it, so its log may lag the client.
	rec := &callRecorder{}
	counted, err := rancher.New(b.Settings(), rancherComponents(), rancher.Options{WrapTransport: rec.wrap})
	if err != nil {
		t.Fatal(err)
	}
	usageAll := func(backendIDs ...string) (map[string]map[string]float64, []*http.Request) {
		t.Helper()
		before := len(rec.all())
		got, err := counted.UsageAll(testCtx(t), backendIDs)
		if err != nil {
			t.Fatal(err)
		}
		return got, rec.all()[before:]
	}
	got, calls := usageAll(ids["u1"], ids["u2"], ids["u3"], absent)
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("UsageAll = %v, want %v", got, want)
	}
	// Projects once, then namespaces, pods and PVCs through the cluster
	// proxy (pages of them on a crowded cluster), nothing per project.
	proxy := "/k8s/clusters/" + sim.Options().ClusterID + "/api/v1/"
	allowed := map[string]bool{"/v3/projects": true, proxy + "namespaces": true, proxy + "pods": true, proxy + "persistentvolumeclaims": true}
	seen := map[string]int{}
	for _, call := range calls {
		if call.Method != http.MethodGet || !allowed[call.URL.Path] {
			t.Errorf("UsageAll called %s %s", call.Method, call.URL)
		}
		seen[call.URL.Path]++
		if call.URL.Path == proxy+"pods" && call.URL.Query().Get("fieldSelector") != "status.phase!=Succeeded,status.phase!=Failed" {
			t.Errorf("pods listed without leaving out finished ones: %s", call.URL)
		}
	}
	if seen["/v3/projects"] != 1 || len(seen) != len(allowed) {
		t.Errorf("UsageAll calls by path %v, want projects once and each list", seen)
	}
	// One project costs what three do.
	if _, one := usageAll(ids["u2"]); len(one) != len(calls) {
		t.Errorf("UsageAll of one project made %d calls, of three %d", len(one), len(calls))
	}
	for id, w := range want {
		if u, err := b.Usage(testCtx(t), id); err != nil || !maps.Equal(u, w) {
			t.Errorf("Usage(%s) = %v, %v; want %v", id, u, err, w)
		}
	}
	if u, err := b.Usage(testCtx(t), prefix+"u1"); err != nil || !maps.Equal(u, want[ids["u1"]]) {
		t.Errorf("Usage by project name = %v, %v; want %v", u, err, want[ids["u1"]])
	}
}

// A key that may not list pods cluster-wide gets a terminal error naming
// the permission, not the generic "check the key".
func TestRancherUsageAllForbiddenNamesThePermission(t *testing.T) {
	b, sim := newRancher(t, nil, ranchersim.Options{})
	cr, err := b.Create(testCtx(t), backendtest.DefaultResource("denied"))
	if err != nil {
		t.Fatal(err)
	}
	sim.AddFault(ranchersim.Fault{Method: http.MethodGet, PathPrefix: "/k8s/clusters/" + sim.Options().ClusterID + "/api/v1/pods",
		Status: http.StatusForbidden, Body: `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden: ` +
			`User \"u-abc\" cannot list resource \"pods\" in API group \"\" at the cluster scope","reason":"Forbidden","code":403}`})
	_, err = b.UsageAll(testCtx(t), []string{cr.BackendID})
	if err == nil || !fault.IsTerminal(err) {
		t.Fatalf("UsageAll without pod access: err = %v, want terminal", err)
	}
	for _, s := range []string{"may not list pods", sim.Options().AccessKey, "cannot list resource", "persistentvolumeclaims"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if strings.Contains(err.Error(), sim.Options().SecretKey) {
		t.Errorf("error shows the secret key: %v", err)
	}
}

// callRecorder keeps the requests a backend sends.
type callRecorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *callRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.mu.Unlock()
		return next.RoundTrip(req)
	})
}

func (r *callRecorder) all() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// podContainer is one container's requests and limits (limits empty: none).
type podContainer struct{ cpu, mem, cpuLimit, memLimit string }

// createUsagePod makes a pod the namespace's restricted pod security and
// quota admit. Quota admission refuses pods until the controller manager
// has computed the quota's status, so creation is retried until then.
func createUsagePod(t *testing.T, c *kube.Cluster, ns, name string, cs ...podContainer) {
	t.Helper()
	if err := c.WaitForDefaultServiceAccount(testCtx(t), ns); err != nil {
		t.Fatal(err)
	}
	var list []any
	for i, pc := range cs {
		res := map[string]any{"requests": map[string]any{"cpu": pc.cpu, "memory": pc.mem}}
		if pc.cpuLimit != "" {
			res["limits"] = map[string]any{"cpu": pc.cpuLimit, "memory": pc.memLimit}
		}
		list = append(list, map[string]any{"name": fmt.Sprintf("c%d", i), "image": "registry.invalid/none", "resources": res,
			"securityContext": map[string]any{"allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": int64(1000),
				"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}})
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"containers": list, "automountServiceAccountToken": false},
	}}
	createWhenAdmitted(t, c, podGVR, ns, "pod", pod)
}

// createWhenAdmitted creates obj (a kind) in ns, retrying while admission
// forbids it: quota admission refuses objects until the controller manager
// has computed the quota's status.
func createWhenAdmitted(t *testing.T, c *kube.Cluster, gvr schema.GroupVersionResource, ns, kind string, obj *unstructured.Unstructured) {
	t.Helper()
	var last error
	harness.Eventually(t, time.Minute, kind+" "+ns+"/"+obj.GetName()+" admitted", func() bool {
		_, last = c.Dynamic().Resource(gvr).Namespace(ns).Create(testCtx(t), obj, metav1.CreateOptions{})
		if last != nil && !apierrors.IsForbidden(last) {
			t.Fatalf("%s %s/%s: %v", kind, ns, obj.GetName(), last)
		}
		return last == nil
	})
}

// finishPod marks a pod Succeeded, as the kubelet would.
func finishPod(t *testing.T, c *kube.Cluster, ns, name string) {
	t.Helper()
	pods := c.Dynamic().Resource(podGVR).Namespace(ns)
	pod, err := pods.Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(pod.Object, "Succeeded", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.UpdateStatus(testCtx(t), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s/%s Succeeded: %v", ns, name, err)
	}
}

func createUsagePVC(t *testing.T, c *kube.Cluster, ns, name, size string) {
	t.Helper()
	pvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": size}}},
	}}
	createWhenAdmitted(t, c, pvcGVR, ns, "PVC", pvc)
}

// createProjectNamespace makes a namespace (removed at cleanup) in Rancher
// project projectID as Rancher marks it (none when empty).
func createProjectNamespace(t *testing.T, c *kube.Cluster, name, projectID string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if projectID != "" {
		ns.SetAnnotations(map[string]string{ranchersim.ProjectIDAnnotation: projectID})
	}
	if _, err := c.Dynamic().Resource(namespaceGVR).Create(testCtx(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic().Resource(namespaceGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

var (
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pvcGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
)
