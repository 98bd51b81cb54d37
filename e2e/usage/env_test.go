// Package usage_test checks the usage-reporter against a real
// kube-apiserver (pods and PVCs exist as objects with their requests; no
// kubelet runs them, and none is needed: requests are what is summed) and
// the Waldur simulator.
package usage_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

const (
	offeringUUID = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	projectUUID  = "5e4d3c2b1a0948f7a6e5d4c3b2a19087"
)

var (
	mnsGVR = schema.GroupVersionResource{Group: "provisioning.hpc.ut.ee", Version: "v1", Resource: "managednamespaces"}
	nsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	saGVR  = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pvcGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
)

// crdOnce installs the ManagedNamespace CRD once per test binary.
var crdOnce struct {
	sync.Once
	err error
}

func cluster(t testing.TB) *kube.Cluster {
	t.Helper()
	c := kube.Shared(t)
	crdOnce.Do(func() { crdOnce.err = harness.InstallManagedNamespaceCRD(context.Background(), c) })
	if crdOnce.err != nil {
		t.Fatalf("install the CRD: %v", crdOnce.err)
	}
	return c
}

// createNamespace makes a namespace (removed at cleanup) with its default
// service account, which pod admission wants before any pod.
func createNamespace(t testing.TB, dyn dynamic.Interface, name string) {
	t.Helper()
	createAnnotatedNamespace(t, dyn, name, nil)
}

// newNamespace is createNamespace of a name unique to t, which it returns.
func newNamespace(t testing.TB, dyn dynamic.Interface, suffix string) string {
	t.Helper()
	name := uniqueName(t, suffix)
	createNamespace(t, dyn, name)
	return name
}

// createAnnotatedNamespace is createNamespace with annotations (Rancher's
// field.cattle.io/projectId puts a namespace in a project).
func createAnnotatedNamespace(t testing.TB, dyn dynamic.Interface, name string, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	ns.SetAnnotations(annotations)
	if _, err := dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = dyn.Resource(nsGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}}
	if _, err := dyn.Resource(saGVR).Namespace(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("service account in %s: %v", name, err)
	}
}

// createCR makes a ManagedNamespace named crName asking for namespace ns,
// as the order service (or the Python agent) leaves it.
func createCR(t testing.TB, dyn dynamic.Interface, crNS, crName, ns string) {
	t.Helper()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "provisioning.hpc.ut.ee/v1", "kind": "ManagedNamespace",
		"metadata": map[string]any{"name": crName, "namespace": crNS, "labels": map[string]any{"app.kubernetes.io/managed-by": "sitebus"}},
		"spec":     map[string]any{"name": ns, "quota": map[string]any{"cpu": "8", "memory": "16Gi"}},
	}}
	if _, err := dyn.Resource(mnsGVR).Namespace(crNS).Create(context.Background(), cr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("ManagedNamespace %s: %v", crName, err)
	}
}

// container is one container's requests (cpu, memory, nvidia.com/gpu).
type container map[string]string

// createPod makes a pod whose containers request what cs say (GPUs as
// limits too: extended resources must have equal requests and limits).
func createPod(t testing.TB, dyn dynamic.Interface, ns, name string, cs ...container) {
	t.Helper()
	var list []any
	for i, c := range cs {
		req := map[string]any{}
		lim := map[string]any{}
		for k, v := range c {
			req[k] = v
			if k == "nvidia.com/gpu" {
				lim[k] = v
			}
		}
		res := map[string]any{"requests": req}
		if len(lim) > 0 {
			res["limits"] = lim
		}
		list = append(list, map[string]any{"name": "c" + strconv.Itoa(i), "image": "registry.invalid/none", "resources": res})
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"containers": list, "automountServiceAccountToken": false},
	}}
	if _, err := dyn.Resource(podGVR).Namespace(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod %s/%s: %v", ns, name, err)
	}
}

// createWorkload makes what the reporters measure: the web pod (0.5+0.25
// cores, 1+0.5 GiB) and a 10 GiB claim in webNS, the train pod (1 core,
// 2 GiB, gpus GPUs) and a 5 GiB claim in trainNS, the tiny pod (0.1 core,
// 128 MiB) in tinyNS, and a large pod and claim in noise, which no
// resource's usage may count.
func createWorkload(t testing.TB, dyn dynamic.Interface, webNS, trainNS, tinyNS, noise, gpus string) {
	t.Helper()
	createPod(t, dyn, webNS, "web", container{"cpu": "500m", "memory": "1Gi"}, container{"cpu": "250m", "memory": "512Mi"})
	createPod(t, dyn, trainNS, "train", container{"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": gpus})
	createPVC(t, dyn, webNS, "data", "10Gi")
	createPVC(t, dyn, trainNS, "scratch", "5Gi")
	createPod(t, dyn, tinyNS, "tiny", container{"cpu": "100m", "memory": "128Mi"})
	createPod(t, dyn, noise, "other", container{"cpu": "64", "memory": "256Gi"})
	createPVC(t, dyn, noise, "other", "1Ti")
}

func createPVC(t testing.TB, dyn dynamic.Interface, ns, name, size string) {
	t.Helper()
	pvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": size}}},
	}}
	if _, err := dyn.Resource(pvcGVR).Namespace(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("PVC %s/%s: %v", ns, name, err)
	}
}

// fixture is the simulator's standard fixture with resources of our own
// (the offering has cpu, ram and storage, not gpu).
func fixture(t testing.TB, resources []waldursim.Resource) *waldursim.Fixture {
	t.Helper()
	fx := harness.Fixture(t)
	fx.Orders = nil
	fx.Resources = resources
	return fx
}

// usageReporter runs `sitebus run --only usage-reporter` on fx, reporting
// from backend with settings: every component is accounted by usage, and
// a cycle runs every 600 ms (0.01 minutes), so a test waits for cycles,
// not minutes.
func usageReporter(t testing.TB, fx *waldursim.Fixture, backend string, settings map[string]any) *harness.Site {
	t.Helper()
	components := map[string]any{}
	for _, c := range []string{"cpu", "ram", "storage", "gpu"} {
		components[c] = map[string]any{"accounting_type": "usage"}
	}
	return harness.NewSite(t, harness.WithoutBroker(), harness.WithFixture(fx), harness.WithOnly("usage-reporter"), harness.WithGPU(),
		harness.WithEnv("WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES=0.01"),
		harness.WithOffering(map[string]any{"name": "e2e-usage", "waldur_offering_uuid": offeringUUID,
			"backend_type": backend, "order_processing_backend": nil, "reporting_backend": backend, "backend_settings": settings, "backend_components": components}))
}

func resource(i int, backendID string) waldursim.Resource {
	return waldursim.Resource{
		UUID: fmt.Sprintf("a0000000000040008000%012d", i), Name: backendID, Slug: backendID, State: "OK",
		BackendID: backendID, Offering: offeringUUID, Project: projectUUID,
	}
}

// uniqueName is a DNS label for this test, so tests sharing the cluster
// never meet.
func uniqueName(t testing.TB, suffix string) string {
	n := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return strings.Trim(n, "-") + "-" + suffix
}
