// Package backends_test runs the backend conformance suite, and
// backend-specific checks, against real platforms: here the
// ManagedNamespace backend on a real kube-apiserver with the CRD of
// deploy/crds installed.
package backends_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/backendtest"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// crdOnce installs deploy/crds once per test binary.
var crdOnce struct {
	sync.Once
	err error
}

// cluster returns the shared cluster with the CRDs of deploy/crds applied.
func cluster(t *testing.T) *kube.Cluster {
	t.Helper()
	c := kube.Shared(t)
	crdOnce.Do(func() {
		paths, err := filepath.Glob(filepath.Join("..", "..", "deploy", "crds", "*.yaml"))
		if err == nil && len(paths) == 0 {
			err = errors.New("no CRDs in deploy/crds")
		}
		for _, p := range paths {
			if err == nil {
				err = c.ApplyFile(context.Background(), p)
			}
		}
		crdOnce.err = err
	})
	if crdOnce.err != nil {
		t.Fatalf("install CRDs: %v", crdOnce.err)
	}
	return c
}

// crNamespace creates a namespace of its own for a test's CRs.
func crNamespace(t *testing.T, dyn dynamic.Interface) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "mns-" + hex.EncodeToString(b[:])
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	if _, err := dyn.Resource(namespaceGVR).Create(testCtx(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(namespaceGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// newBackend returns a ManagedNamespace backend over a fresh CR namespace.
func newBackend(t *testing.T, raw map[string]any, components map[string]config.BackendComponent) (*managedns.Backend, dynamic.ResourceInterface) {
	t.Helper()
	c := cluster(t)
	ns := crNamespace(t, c.Dynamic())
	if raw == nil {
		raw = map[string]any{}
	}
	raw["cr_namespace"] = ns
	s, err := managedns.ParseSettings(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := managedns.New(s, components, managedns.Options{RESTConfig: c.RESTConfig()})
	if err != nil {
		t.Fatal(err)
	}
	return b, c.Dynamic().Resource(managedns.GVR).Namespace(ns)
}

func TestManagedNamespaceConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) backendtest.Target {
			b, crs := newBackend(t, nil, nil)
			return backendtest.Target{
				Backend: b,
				Foreign: func(t *testing.T, id string) func(*testing.T) { return foreignCR(t, crs, id) },
			}
		},
	})
}

// foreignCR creates a ManagedNamespace as a person would (no sitebus
// label) and returns a check that nobody changed it since.
func foreignCR(t *testing.T, crs dynamic.ResourceInterface, name string) func(*testing.T) {
	t.Helper()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": managedns.Group + "/" + managedns.Version,
		"kind":       managedns.Kind,
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"team": "someone-else"}},
		"spec":       map[string]any{"name": name, "quota": map[string]any{"cpu": "7", "memory": "7Gi"}},
	}}
	before, err := crs.Create(testCtx(t), cr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create foreign CR %s: %v", name, err)
	}
	return func(t *testing.T) {
		t.Helper()
		after, err := crs.Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("foreign CR %s: %v", name, err)
		}
		if after.GetResourceVersion() != before.GetResourceVersion() ||
			!reflect.DeepEqual(after.Object["spec"], before.Object["spec"]) ||
			!maps.Equal(after.GetLabels(), before.GetLabels()) ||
			!maps.Equal(after.GetAnnotations(), before.GetAnnotations()) {
			t.Errorf("foreign CR %s changed:\nbefore %v\nafter  %v", name, before.Object, after.Object)
		}
	}
}

// The CR has the Python plugin's layout, plus sitebus's marks.
func TestManagedNamespaceCRLayout(t *testing.T) {
	b, crs := newBackend(t, map[string]any{
		"namespace_labels":        map[string]any{"hpc.ut.ee/managed-by": "waldur"},
		"namespace_annotations":   map[string]any{"hpc.ut.ee/contact": "hpc@ut.ee"},
		"component_quota_mapping": map[string]any{"gpu": "requests.nvidia.com/gpu"},
	}, map[string]config.BackendComponent{
		"ram": {Extra: map[string]any{"type": "ram"}},
		"gpu": {Extra: map[string]any{"type": "gpu"}},
	})
	r := backendtest.DefaultResource("layout")
	r.CustomerUUID = "AABBCCDDEEFF00112233445566778899"
	r.Limits["gpu"] = 1
	c, err := b.Create(testCtx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := crs.Get(testCtx(t), c.BackendID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSpec := map[string]any{
		"name":        "waldur-layout",
		"quota":       map[string]any{"cpu": "2", "memory": "4Gi", "storage": "10Gi", "requests.nvidia.com/gpu": "1"},
		"labels":      map[string]any{"hpc.ut.ee/managed-by": "waldur"},
		"annotations": map[string]any{"hpc.ut.ee/contact": "hpc@ut.ee"},
		"owner":       map[string]any{"orgID": "aabbccdd-eeff-0011-2233-445566778899", "projectID": r.ProjectUUID},
	}
	if !reflect.DeepEqual(cr.Object["spec"], wantSpec) {
		t.Errorf("spec = %v\nwant   %v", cr.Object["spec"], wantSpec)
	}
	if cr.GetLabels()[managedns.LabelManagedBy] != managedns.ManagedByValue ||
		cr.GetAnnotations()[managedns.AnnotationResourceUUID] != r.UUID {
		t.Errorf("marks: labels %v annotations %v", cr.GetLabels(), cr.GetAnnotations())
	}

	// Pause and downscale name cpu/memory/storage only: the GPU quota stays.
	if err := b.Pause(testCtx(t), c.BackendID); err != nil {
		t.Fatal(err)
	}
	got, err := b.Limits(testCtx(t), c.BackendID)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"cpu": 0, "ram": 0, "storage": 0, "gpu": 1}; !maps.Equal(got, want) {
		t.Errorf("paused limits %v, want %v", got, want)
	}
	if err := b.Restore(testCtx(t), c.BackendID); err != nil {
		t.Fatal(err)
	}
	cr, err = crs.Get(testCtx(t), c.BackendID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cr.Object["spec"], wantSpec) {
		t.Errorf("restored spec = %v\nwant   %v", cr.Object["spec"], wantSpec)
	}
	for _, a := range []string{managedns.AnnotationSavedQuota, managedns.AnnotationStatus} {
		if _, ok := cr.GetAnnotations()[a]; ok {
			t.Errorf("annotation %s left after Restore", a)
		}
	}
}

// Metadata reads the operator's Ready condition from the status subresource.
func TestManagedNamespaceMetadataReadsReady(t *testing.T) {
	b, crs := newBackend(t, nil, nil)
	c, err := b.Create(testCtx(t), backendtest.DefaultResource("ready"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := b.Metadata(testCtx(t), c.BackendID)
	if err != nil {
		t.Fatal(err)
	}
	if st := md["status"].(map[string]any); st["ready"] != nil {
		t.Errorf("before the operator: status %v, want ready null", st)
	}
	cr, err := crs.Get(testCtx(t), c.BackendID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Reconciled", "message": "namespace ready",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}}
	if _, err := crs.UpdateStatus(testCtx(t), cr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	md, err = b.Metadata(testCtx(t), c.BackendID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name":   c.BackendID,
		"quota":  map[string]any{"cpu": "2", "memory": "4Gi", "storage": "10Gi"},
		"status": map[string]any{"ready": true, "message": "namespace ready"},
	}
	if !reflect.DeepEqual(md, want) {
		t.Errorf("Metadata = %v\nwant       %v", md, want)
	}
}

// Racing creates of one resource: one creates, the other finds it.
func TestManagedNamespaceConcurrentCreate(t *testing.T) {
	b, _ := newBackend(t, nil, nil)
	r := backendtest.DefaultResource("race")
	const n = 4
	results := make([]backend.Created, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = b.Create(testCtx(t), r) })
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Create #%d: %v", i, errs[i])
		}
		if !results[i].Existed {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d creates did not find the CR there, want 1", created)
	}
}

// A managed CR of a reused slug belongs to the resource that made it.
func TestManagedNamespaceOtherResourcesCRIsRefused(t *testing.T) {
	b, _ := newBackend(t, nil, nil)
	first := backendtest.DefaultResource("reused")
	if _, err := b.Create(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	second := backendtest.DefaultResource("reused")
	if _, err := b.Create(testCtx(t), second); !errors.Is(err, backend.ErrNotManaged) {
		t.Fatalf("Create for another resource: err = %v, want ErrNotManaged", err)
	}
}

func TestManagedNamespaceDiagnostics(t *testing.T) {
	b, _ := newBackend(t, nil, nil)
	if _, err := b.Create(testCtx(t), backendtest.DefaultResource("diag")); err != nil {
		t.Fatal(err)
	}
	d, err := b.Diagnostics(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if d["crd_installed"] != true || d["managed_namespaces"] != 1 || d["server_version"] != kube.Version {
		t.Errorf("Diagnostics = %v", d)
	}
}

// An API server that does not answer is a retryable error, not a terminal one.
func TestManagedNamespaceUnreachableIsRetryable(t *testing.T) {
	c := cluster(t)
	cfg := c.RESTConfig()
	cfg.Host = "https://127.0.0.1:1" // nothing listens there
	cfg.Timeout = 2 * time.Second
	s, err := managedns.ParseSettings(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := managedns.New(s, nil, managedns.Options{RESTConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(testCtx(t)); err == nil {
		t.Error("Ping of a closed port succeeded")
	}
	_, err = b.Create(testCtx(t), backendtest.DefaultResource("unreachable"))
	if err == nil || fault.IsTerminal(err) || errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Create against a closed port: err = %v, want a retryable error", err)
	}
}

// A CR whose deletion waits on the operator's finalizer is not reported as
// created: the namespace is about to go. Create succeeds again once it has.
func TestManagedNamespaceCreateWhileDeletingIsRetryable(t *testing.T) {
	b, crs := newBackend(t, nil, nil)
	r := backendtest.DefaultResource("deleting")
	c, err := b.Create(testCtx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	finalizers := func(f []any) {
		t.Helper()
		p, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": f}})
		if _, err := crs.Patch(testCtx(t), c.BackendID, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
			t.Fatalf("set finalizers: %v", err)
		}
	}
	finalizers([]any{"provisioning.hpc.ut.ee/namespace"})
	if err := b.Delete(testCtx(t), c.BackendID); err != nil {
		t.Fatal(err)
	}
	_, err = b.Create(testCtx(t), r)
	if err == nil || fault.IsTerminal(err) {
		t.Fatalf("Create while deleting: err = %v, want a retryable error", err)
	}
	finalizers(nil)
	if _, err := b.Create(testCtx(t), r); err != nil {
		t.Fatalf("Create after the deletion finished: %v", err)
	}
}
