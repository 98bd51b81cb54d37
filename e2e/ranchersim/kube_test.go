package ranchersim_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
)

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

const (
	cluster       = ranchersim.DefaultClusterID
	namespacesURL = "/v3/clusters/" + cluster + "/namespaces"
	importURL     = "/v3/clusters/" + cluster + "?action=importYaml"
	proxyURL      = "/k8s/clusters/" + cluster
)

// kubeEnv is a simulator in front of the shared test cluster.
type kubeEnv struct {
	sim *ranchersim.Server
	c   *client
	dyn dynamic.Interface
	ctx context.Context
}

func newKubeEnv(t *testing.T) *kubeEnv {
	t.Helper()
	kc := kube.Shared(t)
	sim := ranchersim.NewTestServer(t, ranchersim.Options{Kube: kc.RESTConfig()})
	return &kubeEnv{sim: sim, c: newClient(t, sim), dyn: kc.Dynamic(), ctx: testCtx(t, 3*time.Minute)}
}

// uniqueName keeps tests apart in the shared cluster.
func uniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// createNamespace creates a namespace through the simulator as the agent
// does.
func (e *kubeEnv) createNamespace(t *testing.T, name, projectID string) response {
	t.Helper()
	body := map[string]any{"type": "namespace", "name": name,
		"labels":      map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "gpu-pool": "h100"},
		"annotations": map[string]string{"waldur/managed": "true"}}
	if projectID != "" {
		body["projectId"] = projectID
	}
	return e.c.do("POST", namespacesURL, body).want(t, http.StatusCreated)
}

func (e *kubeEnv) getNamespace(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	ns, err := e.dyn.Resource(namespaceGVR).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace %s: %v", name, err)
	}
	return ns
}

// quotaYAML is the quota manifest exactly as the Python agent's
// yaml.dump renders it (sorted keys, block style, '2' quoted).
func quotaYAML(ns, cpu string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ResourceQuota
metadata:
  name: custom-resource-quota
  namespace: %s
spec:
  hard:
    limits.cpu: %s
    limits.memory: 8192Mi
    requests.nvidia.com/gpu: '2'
    requests.storage: 102400Mi
`, ns, cpu)
}

// quotaThroughProxy reads the namespace's quotas through /k8s/clusters, as
// the agent's usage report does.
func (e *kubeEnv) quotaThroughProxy(t *testing.T, ns string) (spec, status map[string]any) {
	t.Helper()
	r := e.c.do("GET", proxyURL+"/api/v1/namespaces/"+ns+"/resourcequotas", nil).want(t, http.StatusOK)
	items, _ := r.obj["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("quotas in %s: %s", ns, r.raw)
	}
	q := items[0].(map[string]any)
	spec, _, _ = unstructured.NestedMap(q, "spec", "hard")
	status, _, _ = unstructured.NestedMap(q, "status", "hard")
	return spec, status
}

// waitQuotaStatus polls until the controller manager has computed the
// quota's status for the current spec.
func (e *kubeEnv) waitQuotaStatus(t *testing.T, ns string) map[string]any {
	t.Helper()
	var spec, status map[string]any
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		spec, status = e.quotaThroughProxy(t, ns)
		return len(status) > 0 && reflect.DeepEqual(spec, status), nil
	})
	if err != nil {
		t.Fatalf("quota status in %s never matched its spec %v (last status %v): %v", ns, spec, status, err)
	}
	return status
}

func TestNamespaces(t *testing.T) {
	e := newKubeEnv(t)
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a namespace is a real Kubernetes namespace tied to its project as Rancher ties it", func(t *testing.T) {
			p := e.c.createProject("waldur-ns")
			name := uniqueName("waldur-ns")
			r := e.createNamespace(t, name, p)
			eq(t, "type", r.str("type"), "namespace")
			eq(t, "id", r.str("id"), name)
			eq(t, "projectId", r.str("projectId"), p)
			ns := e.getNamespace(t, name)
			eq(t, "project annotation", ns.GetAnnotations()["field.cattle.io/projectId"], p)
			eq(t, "project label", ns.GetLabels()["field.cattle.io/projectId"], p[len(cluster)+1:])
			eq(t, "requested label", ns.GetLabels()["pod-security.kubernetes.io/enforce"], "restricted")
			eq(t, "requested annotation", ns.GetAnnotations()["waldur/managed"], "true")
			got := e.c.do("GET", "/v3/cluster/"+cluster+"/namespaces/"+name, nil).want(t, http.StatusOK)
			eq(t, "read back projectId", got.str("projectId"), p)
		}},
		{"the listing by projectId holds that project's namespaces only", func(t *testing.T) {
			p1, p2 := e.c.createProject("waldur-l1"), e.c.createProject("waldur-l2")
			n1, n2, loose := uniqueName("waldur-l1"), uniqueName("waldur-l2"), uniqueName("loose")
			e.createNamespace(t, n1, p1)
			e.createNamespace(t, n2, p2)
			e.createNamespace(t, loose, "")
			eqSlice(t, "p1", fieldOf(e.c.do("GET", namespacesURL+"?projectId="+p1, nil).data(t, "namespace"), "name"), []string{n1})
			eqSlice(t, "p2", fieldOf(e.c.do("GET", namespacesURL+"?projectId="+p2, nil).data(t, "namespace"), "name"), []string{n2})
			all := fieldOf(e.c.do("GET", namespacesURL, nil).data(t, "namespace"), "name")
			for _, n := range []string{n1, n2, loose, "kube-system"} {
				if !slices.Contains(all, n) {
					t.Errorf("unfiltered listing lacks %s: %v", n, all)
				}
			}
		}},
		{"a PUT replaces the labels and annotations it is sent, keeping the project link", func(t *testing.T) {
			p := e.c.createProject("waldur-put")
			name := uniqueName("waldur-put")
			e.createNamespace(t, name, p)
			r := e.c.do("PUT", "/v3/cluster/"+cluster+"/namespaces/"+name, map[string]any{
				"labels": map[string]string{"gpu-pool": "a100"}}).want(t, http.StatusOK)
			eq(t, "answered projectId", r.str("projectId"), p)
			ns := e.getNamespace(t, name)
			eq(t, "label not sent", ns.GetLabels()["pod-security.kubernetes.io/enforce"], "")
			eq(t, "project label", ns.GetLabels()["field.cattle.io/projectId"], p[len(cluster)+1:])
			eq(t, "label", ns.GetLabels()["gpu-pool"], "a100")
			eq(t, "annotation not sent stays", ns.GetAnnotations()["waldur/managed"], "true")
			e.c.do("PUT", namespacesURL+"/"+name, map[string]any{"annotations": map[string]string{"team": "x"}}).want(t, http.StatusOK)
			ns = e.getNamespace(t, name)
			eq(t, "project annotation", ns.GetAnnotations()["field.cattle.io/projectId"], p)
			eq(t, "replaced annotation", ns.GetAnnotations()["waldur/managed"], "")
			eq(t, "new annotation", ns.GetAnnotations()["team"], "x")
			e.c.do("PUT", namespacesURL+"/"+uniqueName("absent"), map[string]any{"labels": map[string]string{}}).
				wantErr(t, http.StatusNotFound, "NotFound")
		}},
		{"a duplicate namespace is Kubernetes' 409 AlreadyExists", func(t *testing.T) {
			name := uniqueName("waldur-dup")
			e.createNamespace(t, name, "")
			e.c.do("POST", namespacesURL, map[string]any{"type": "namespace", "name": name}).
				wantErr(t, http.StatusConflict, "AlreadyExists")
		}},
		{"a namespace in an unknown project is a 422 and is not created", func(t *testing.T) {
			name := uniqueName("waldur-orphan")
			e.c.do("POST", namespacesURL, map[string]any{"name": name, "projectId": cluster + ":p-zzzzz"}).
				wantErr(t, http.StatusUnprocessableEntity, "InvalidReference")
			if _, err := e.dyn.Resource(namespaceGVR).Get(e.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("namespace %s: %v", name, err)
			}
		}},
		{"deleting a project deletes its namespaces in Kubernetes, not others", func(t *testing.T) {
			p, other := e.c.createProject("waldur-del"), e.c.createProject("waldur-keep")
			mine := []string{uniqueName("waldur-del"), uniqueName("waldur-del")}
			kept := uniqueName("waldur-keep")
			for _, n := range mine {
				e.createNamespace(t, n, p)
			}
			e.createNamespace(t, kept, other)
			e.c.do("DELETE", "/v3/projects/"+p, nil).want(t, http.StatusOK)
			// The namespace controller removes them for real.
			for _, n := range mine {
				err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
					_, err := e.dyn.Resource(namespaceGVR).Get(ctx, n, metav1.GetOptions{})
					return apierrors.IsNotFound(err), nil
				})
				if err != nil {
					t.Fatalf("namespace %s not removed: %v", n, err)
				}
			}
			if ns := e.getNamespace(t, kept); ns.GetDeletionTimestamp() != nil {
				t.Fatalf("namespace %s of another project is being deleted", kept)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestImportYAML(t *testing.T) {
	e := newKubeEnv(t)
	tests := []struct {
		name string
		run  func(t *testing.T, ns string)
	}{
		{"a ResourceQuota is created for real and the controller manager fills its status", func(t *testing.T, ns string) {
			y := quotaYAML(ns, "4000m")
			r := e.c.do("POST", importURL, map[string]any{"yaml": y, "namespace": ns}).want(t, http.StatusOK)
			eq(t, "type", r.str("type"), "importYamlOutput")
			eq(t, "message", r.str("message"), "resourcequota/custom-resource-quota created\n")
			imps := e.sim.Imports()
			last := imps[len(imps)-1]
			eq(t, "YAML kept byte for byte", last.YAML, y)
			eq(t, "namespace", last.Namespace, ns)
			status := e.waitQuotaStatus(t, ns)
			eq(t, "status limits.cpu (canonical)", status["limits.cpu"], any("4"))
			eq(t, "status requests.nvidia.com/gpu", status["requests.nvidia.com/gpu"], any("2"))
		}},
		{"importing again is unchanged, a new limit is configured and reaches the status", func(t *testing.T, ns string) {
			e.c.do("POST", importURL, map[string]any{"yaml": quotaYAML(ns, "4000m"), "namespace": ns}).want(t, http.StatusOK)
			r := e.c.do("POST", importURL, map[string]any{"yaml": quotaYAML(ns, "4000m"), "namespace": ns}).want(t, http.StatusOK)
			eq(t, "message", r.str("message"), "resourcequota/custom-resource-quota unchanged\n")
			r = e.c.do("POST", importURL, map[string]any{"yaml": quotaYAML(ns, "6000m"), "namespace": ns}).want(t, http.StatusOK)
			eq(t, "message", r.str("message"), "resourcequota/custom-resource-quota configured\n")
			eq(t, "status limits.cpu", e.waitQuotaStatus(t, ns)["limits.cpu"], any("6"))
		}},
		{"an object without a namespace lands in the given one", func(t *testing.T, ns string) {
			y := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n"
			r := e.c.do("POST", importURL, map[string]any{"yaml": y, "namespace": ns}).want(t, http.StatusOK)
			eq(t, "message", r.str("message"), "configmap/cm created\n")
			e.c.do("GET", proxyURL+"/api/v1/namespaces/"+ns+"/configmaps/cm", nil).want(t, http.StatusOK)
		}},
		{"an object in another namespace than the given one is a 400, as kubectl refuses it", func(t *testing.T, ns string) {
			r := e.c.do("POST", importURL, map[string]any{"yaml": quotaYAML("kube-system", "1"), "namespace": ns}).
				want(t, http.StatusBadRequest)
			eq(t, "type", r.str("type"), "importYamlOutput")
			eq(t, "message", r.str("message"), `error: the namespace from the provided object "kube-system" does not match the namespace "`+ns+`". You must pass '--namespace=kube-system' to perform this operation.`+"\n")
			if n := len(e.c.do("GET", proxyURL+"/api/v1/namespaces/kube-system/resourcequotas", nil).want(t, 200).obj["items"].([]any)); n != 0 {
				t.Fatalf("%d quotas created in kube-system", n)
			}
		}},
		{"a missing namespace is a 400 with the API server's reason", func(t *testing.T, _ string) {
			missing := uniqueName("missing")
			r := e.c.do("POST", importURL, map[string]any{"yaml": quotaYAML(missing, "1"), "namespace": missing}).
				want(t, http.StatusBadRequest)
			eq(t, "message", r.str("message"), `Error from server (NotFound): error when creating "resourcequota/custom-resource-quota": namespaces "`+missing+`" not found`+"\n")
		}},
		{"malformed YAML is a 400", func(t *testing.T, ns string) {
			e.c.do("POST", importURL, map[string]any{"yaml": "kind: [", "namespace": ns}).want(t, http.StatusBadRequest)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := uniqueName("waldur-quota")
			e.createNamespace(t, ns, e.c.createProject("waldur-quota"))
			tc.run(t, ns)
		})
	}
}

func TestKubeProxy(t *testing.T) {
	e := newKubeEnv(t)
	ns := uniqueName("waldur-proxy")
	e.createNamespace(t, ns, "")
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a read reaches the API server with the cluster's credentials", func(t *testing.T) {
			r := e.c.do("GET", proxyURL+"/api/v1/namespaces/"+ns, nil).want(t, http.StatusOK)
			eq(t, "kind", r.str("kind"), "Namespace")
			v := e.c.do("GET", proxyURL+"/version", nil).want(t, http.StatusOK)
			eq(t, "gitVersion", v.str("gitVersion"), kube.Version)
		}},
		{"a write goes through with its body", func(t *testing.T) {
			cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "via-proxy"},
				"data": map[string]string{"k": "v"}}
			e.c.do("POST", proxyURL+"/api/v1/namespaces/"+ns+"/configmaps", cm).want(t, http.StatusCreated)
			got, err := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).
				Namespace(ns).Get(e.ctx, "via-proxy", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "data", got.Object["data"].(map[string]any)["k"], any("v"))
		}},
		{"Kubernetes errors pass through as Kubernetes Status objects", func(t *testing.T) {
			r := e.c.do("GET", proxyURL+"/api/v1/namespaces/"+ns+"/configmaps/nope", nil).want(t, http.StatusNotFound)
			eq(t, "kind", r.str("kind"), "Status")
			eq(t, "reason", r.str("reason"), "NotFound")
		}},
		{"another cluster is a Rancher 404", func(t *testing.T) {
			e.c.do("GET", "/k8s/clusters/c-m-other/api/v1/namespaces", nil).wantErr(t, http.StatusNotFound, "NotFound")
		}},
		{"a wrong key is Rancher's 401 and never reaches Kubernetes", func(t *testing.T) {
			bad := newClient(t, e.sim)
			bad.pass = "wrong"
			r := bad.do("GET", proxyURL+"/api/v1/namespaces/"+ns, nil).want(t, http.StatusUnauthorized)
			eq(t, "message", r.str("message"), "must authenticate")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}
