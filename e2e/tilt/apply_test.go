package tilt

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/sitebus/sitebus/e2e/kube"
)

// TestKubernetesModeAppliesToAnAPIServer applies the manifests of
// deploy/dev, then every object the Kubernetes mode would deploy in Tilt's
// resource order (the setup resource first), to a real kube-apiserver with
// server-side apply and strict field validation, so a field its schemas do
// not know is an error; then reads the workloads back. Rendering alone
// would accept a misspelt probe or volume field.
func TestKubernetesModeAppliesToAnAPIServer(t *testing.T) {
	env := tiltEnv(t, writeKubeconfig(t, "kind-sitebus"), t.TempDir())
	res, err := renderTiltfile(t, env)
	if err != nil {
		t.Fatal(err)
	}
	cluster := kube.StartForTest(t, kube.Options{NoControllerManager: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	apply := strictApplier(t, cluster)
	// Tilt decodes the YAML into typed objects and drops fields it does not
	// know, so a misspelt field in deploy/dev would vanish silently: apply
	// the sources strictly first.
	for _, f := range devManifests(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := apply(ctx, string(b)); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
	}
	setup, ok := res.manifest("sitebus-dev-setup")
	if !ok {
		t.Fatalf("no resource sitebus-dev-setup; resources %v", res.names())
	}
	if err := apply(ctx, setup.DeployTarget.YAML); err != nil {
		t.Fatalf("apply sitebus-dev-setup: %v", err)
	}
	var workloads []k8sObject
	for _, m := range res.Manifests {
		if m.Name == setup.Name || m.DeployTarget.YAML == "" {
			continue
		}
		if err := apply(ctx, m.DeployTarget.YAML); err != nil {
			t.Fatalf("apply %s: %v", m.Name, err)
		}
		for _, o := range decodeObjects(t, m.DeployTarget.YAML) {
			if o.Kind == "Deployment" || o.Kind == "StatefulSet" {
				workloads = append(workloads, o)
			}
		}
	}
	if len(workloads) == 0 {
		t.Fatal("the Kubernetes mode deploys no workload")
	}

	for _, w := range workloads {
		gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: strings.ToLower(w.Kind) + "s"}
		got, err := cluster.Dynamic().Resource(gvr).Namespace(w.Metadata.Namespace).Get(ctx, w.Metadata.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s/%s not stored: %v", w.Kind, w.Metadata.Namespace, w.Metadata.Name, err)
			continue
		}
		containers := images(got.Object)
		if len(containers) == 0 || containers[0] != w.Spec.Template.Spec.Containers[0].Image {
			t.Errorf("%s %s stored with images %v, applied %s", w.Kind, w.Metadata.Name, containers, w.Spec.Template.Spec.Containers[0].Image)
		}
	}

	// ranchersim reaches the API server with this kubeconfig: the pod's
	// service account token and CA, at their standard paths.
	cm, err := cluster.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).
		Namespace("sitebus-dev").Get(ctx, "ranchersim-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := cm.Object["data"].(map[string]any)
	text, _ := data["kubeconfig"].(string)
	kc, err := clientcmd.Load([]byte(text))
	if err != nil {
		t.Fatalf("ranchersim kubeconfig: %v", err)
	}
	cur := kc.Contexts[kc.CurrentContext]
	if cur == nil || kc.Clusters[cur.Cluster] == nil || kc.AuthInfos[cur.AuthInfo] == nil {
		t.Fatalf("ranchersim kubeconfig has no complete current context: %+v", kc)
	}
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	if c := kc.Clusters[cur.Cluster]; c.Server != "https://kubernetes.default.svc" || c.CertificateAuthority != sa+"ca.crt" {
		t.Errorf("ranchersim kubeconfig cluster %+v, want the in-cluster API server and CA", c)
	}
	if u := kc.AuthInfos[cur.AuthInfo]; u.TokenFile != sa+"token" {
		t.Errorf("ranchersim kubeconfig user token file %q, want %stoken", u.TokenFile, sa)
	}
}

// images lists the container images of a stored workload's pod template.
func images(obj map[string]any) []string {
	list, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
	var out []string
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			img, _ := m["image"].(string)
			out = append(out, img)
		}
	}
	return out
}

// strictApplier returns a function applying a YAML stream object by object
// with server-side apply and fieldValidation=Strict (kube.Cluster.ApplyYAML
// leaves unknown fields to the server's default, which only warns).
func strictApplier(t *testing.T, cluster *kube.Cluster) func(context.Context, string) error {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return func(ctx context.Context, stream string) error {
		for _, doc := range strings.Split(stream, "\n---\n") {
			if strings.Trim(strings.TrimSpace(doc), "-") == "" {
				continue
			}
			var obj unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				return err
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %w", gvk, err)
			}
			ri := dynamic.ResourceInterface(cluster.Dynamic().Resource(m.Resource))
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = cluster.Dynamic().Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			body, err := json.Marshal(obj.Object)
			if err != nil {
				return err
			}
			force := true
			if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
				FieldManager: kube.FieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict,
			}); err != nil {
				return fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		return nil
	}
}

// devManifests are the Kubernetes manifests in deploy/dev (files whose
// documents have apiVersion and kind; values.yaml, config.yaml and the
// fixture's offering are not).
func devManifests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy/dev/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := "\n" + string(b)
		if strings.Contains(text, "\napiVersion:") && strings.Contains(text, "\nkind:") {
			out = append(out, f)
		}
	}
	if len(out) < 5 {
		t.Fatalf("deploy/dev has manifests %v, want at least the namespace, RabbitMQ and the three simulators", out)
	}
	// The namespace first, as Tilt applies it first.
	slices.SortStableFunc(out, func(a, b string) int {
		rank := func(f string) int {
			if filepath.Base(f) == "namespace.yaml" {
				return 0
			}
			return 1
		}
		return cmp.Compare(rank(a), rank(b))
	})
	return out
}
