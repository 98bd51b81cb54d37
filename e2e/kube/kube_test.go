package kube_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

var (
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgetGVR    = schema.GroupVersionResource{Group: "e2e.sitebus.io", Version: "v1alpha1", Resource: "widgets"}
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func logTimings(t *testing.T, what string, c *kube.Cluster) {
	t.Helper()
	tm := c.Timings
	t.Logf("%s: ready in %s (etcd %s, kube-apiserver %s, kube-controller-manager %s)", what,
		tm.Total.Round(time.Millisecond), tm.Etcd.Round(time.Millisecond),
		tm.APIServer.Round(time.Millisecond), tm.ControllerManager.Round(time.Millisecond))
}

func createNamespace(t *testing.T, ctx context.Context, dyn dynamic.Interface, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	if _, err := dyn.Resource(namespaceGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func widgetYAML(ns, name string, size int) []byte {
	return fmt.Appendf(nil, `
apiVersion: e2e.sitebus.io/v1alpha1
kind: Widget
metadata:
  name: %s
  namespace: %s
spec:
  size: %d
  color: blue
`, name, ns, size)
}

func TestSharedCluster(t *testing.T) {
	c := kube.Shared(t)
	logTimings(t, "shared cluster", c)
	ctx := testCtx(t, 2*time.Minute)
	dyn := c.Dynamic()

	t.Run("built-in namespaces", func(t *testing.T) {
		list, err := dyn.Resource(namespaceGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list namespaces: %v", err)
		}
		var names []string
		for _, ns := range list.Items {
			names = append(names, ns.GetName())
		}
		for _, want := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			if !slices.Contains(names, want) {
				t.Errorf("namespace %s missing; have %v", want, names)
			}
		}
	})

	t.Run("controller manager creates default ServiceAccount", func(t *testing.T) {
		const ns = "sa-check"
		createNamespace(t, ctx, dyn, ns)
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.WaitForDefaultServiceAccount(wctx, ns); err != nil {
			t.Fatalf("%v\n--- kube-controller-manager (tail) ---\n%s", err, c.LogTail(kube.ControllerManager, 30))
		}
		t.Logf("default ServiceAccount in %s after %s", ns, time.Since(start).Round(time.Millisecond))
	})

	t.Run("apply CRD and custom object", func(t *testing.T) {
		const ns = "widgets"
		createNamespace(t, ctx, dyn, ns)
		start := time.Now()
		if err := c.ApplyFile(ctx, "testdata/widget-crd.yaml"); err != nil {
			t.Fatal(err)
		}
		t.Logf("CRD established after %s", time.Since(start).Round(time.Millisecond))
		// Multi-document, with an empty document and a namespaced object
		// that gets the default namespace.
		manifest := append(widgetYAML(ns, "w1", 3), "---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\ndata:\n  k: v\n"...)
		if err := c.ApplyYAML(ctx, manifest); err != nil {
			t.Fatal(err)
		}
		w, err := dyn.Resource(widgetGVR).Namespace(ns).Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get widget: %v", err)
		}
		if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 3 {
			t.Errorf("spec.size = %d, want 3", size)
		}
		if _, err := dyn.Resource(configMapGVR).Namespace("default").Get(ctx, "cm1", metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap without namespace not in default: %v", err)
		}

		// Applying again updates.
		if err := c.ApplyYAML(ctx, widgetYAML(ns, "w1", 5)); err != nil {
			t.Fatal(err)
		}
		w, err = dyn.Resource(widgetGVR).Namespace(ns).Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get widget: %v", err)
		}
		if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 5 {
			t.Errorf("after re-apply spec.size = %d, want 5", size)
		}

		// The CRD's schema is enforced by the real API server.
		err = c.ApplyYAML(ctx, widgetYAML(ns, "w0", 0))
		if err == nil || !strings.Contains(err.Error(), "spec.size") {
			t.Errorf("widget with size 0: err = %v, want a spec.size validation error", err)
		}
	})

	t.Run("RBAC denies the unprivileged user", func(t *testing.T) {
		udyn, err := dynamic.NewForConfig(c.UserRESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		_, err = udyn.Resource(namespaceGVR).List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("list namespaces as %s: err = %v, want Forbidden", kube.UserName, err)
		}
	})

	t.Run("kubeconfig verifies TLS", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl not installed")
		}
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.Kubeconfig, "get", "namespace", "default", "-o", "name").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "namespace/default" {
			t.Errorf("kubectl with %s: %v\n%s", c.Kubeconfig, err, out)
		}
	})
}

// TestAPIServerRestart uses a dedicated cluster: it takes the API server
// down, which would break other tests sharing one.
func TestAPIServerRestart(t *testing.T) {
	c := kube.StartForTest(t, kube.Options{NoControllerManager: true})
	logTimings(t, "dedicated cluster without controller manager", c)
	ctx := testCtx(t, 2*time.Minute)
	cms := c.Dynamic().Resource(configMapGVR).Namespace("default")

	if err := c.ApplyYAML(ctx, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: survivor\ndata:\n  k: v\n")); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server stopped in %s", time.Since(start).Round(time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := cms.Get(rctx, "survivor", metav1.GetOptions{})
	cancel()
	if err == nil {
		t.Fatal("request succeeded while the API server was stopped")
	}
	t.Logf("while stopped: %v", err)

	start = time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server restarted in %s", time.Since(start).Round(time.Millisecond))
	cm, err := cms.Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "k"); v != "v" {
		t.Errorf("data.k = %q after restart, want v", v)
	}
}
