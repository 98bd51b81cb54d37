package deploy_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint/support"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/services/app"
)

// -update rewrites deploy/kubernetes from the chart (make manifests).
var update = flag.Bool("update", false, "regenerate deploy/kubernetes from deploy/helm/sitebus")

// The chart is the one source of truth; deploy/kubernetes is its rendering
// with default values into the namespace "sitebus", for kustomize users.
const (
	chartDir     = "deploy/helm/sitebus"
	kustomizeDir = "deploy/kubernetes"
	generated    = "# Generated from deploy/helm/sitebus with default values by `make manifests`: edit the chart, not this file.\n"
)

func repoPath(t *testing.T, rel string) string {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// render renders the chart as `helm install sitebus -n ns` would, and returns
// the non-empty manifests by template file name (NOTES.txt left out).
func render(t *testing.T, ns string, vals map[string]any) map[string]string {
	t.Helper()
	ch, err := loader.Load(repoPath(t, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "sitebus", Namespace: ns, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for name, text := range out {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(text) == "" {
			continue
		}
		files[path.Base(name)] = strings.TrimLeft(text, "-\n") + "\n"
	}
	return files
}

func allDocs(files map[string]string) []byte {
	var b strings.Builder
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		b.WriteString("---\n" + files[name])
	}
	return []byte(b.String())
}

func TestChartLints(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults":      nil,
		"external nats": {"nats": map[string]any{"enabled": false, "url": "nats://nats.example:4222"}, "serviceMonitor": map[string]any{"enabled": true}, "rbac": map[string]any{"okd": true}},
	} {
		t.Run(name, func(t *testing.T) {
			res := action.NewLint().Run([]string{repoPath(t, chartDir)}, vals)
			for _, m := range res.Messages {
				// Info is only "icon is recommended"; warnings and errors are real.
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
			if res.TotalChartsLinted != 1 {
				t.Errorf("linted %d charts, want 1: %v", res.TotalChartsLinted, res.Errors)
			}
		})
	}
}

// kustomizeBase is what deploy/kubernetes must hold: the namespace, one file
// per chart template, and a kustomization listing them. It sets no namespace
// transformer, which would move the Role out of the CR namespace.
func kustomizeBase(t *testing.T) map[string]string {
	files := map[string]string{"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sitebus\n  labels:\n    app.kubernetes.io/part-of: sitebus\n"}
	for name, text := range render(t, "sitebus", nil) {
		files[name] = text
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if k != "namespace.yaml" && !yield(k) {
				return
			}
		}
	})
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n"
	for _, n := range names {
		kust += "  - " + n + "\n"
	}
	files["kustomization.yaml"] = kust
	for name, text := range files {
		files[name] = generated + text
	}
	return files
}

func TestKustomizeBaseIsTheChart(t *testing.T) {
	dir := repoPath(t, kustomizeDir)
	want := kustomizeBase(t)
	if *update {
		old, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		for name, text := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s is not rendered from the chart: remove it, or move it into the chart (make manifests)", f)
		}
	}
	for name, text := range want {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(data) != text {
			t.Errorf("%s/%s differs from the chart's rendering: run make manifests (%v)", kustomizeDir, name, err)
		}
	}
}

// Every service `sitebus run --only` knows has its own Deployment in the
// chart, running it alone against NATS: a service added to app.ServiceNames
// without one fails here.
func TestEveryServiceHasADeployment(t *testing.T) {
	objs := decode(t, allDocs(render(t, "sitebus", nil)))
	for _, name := range app.ServiceNames {
		t.Run(name, func(t *testing.T) {
			d := find(objs, "Deployment", "sitebus-"+name)
			if d == nil {
				t.Fatalf("no Deployment sitebus-%s", name)
			}
			checkDeployment(t, d, name, "nats://sitebus-nats.sitebus.svc:4222")
		})
	}
}

// The status page's token comes from a Secret the site names: every pod
// gets it as SITEBUS_STATUS_TOKEN (which the configuration expands), and
// without one no pod has the variable.
func TestStatusPageTokenComesFromTheNamedSecret(t *testing.T) {
	env := func(vals map[string]any) map[string][]any {
		out := map[string][]any{}
		for _, d := range decode(t, allDocs(render(t, "sitebus", vals))) {
			if d.GetKind() != "Deployment" {
				continue
			}
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			e, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
			out[d.GetName()] = e
		}
		return out
	}
	for name, e := range env(nil) {
		if len(e) != 0 {
			t.Errorf("%s: env %v without a token secret", name, e)
		}
	}
	got := env(map[string]any{"statusPage": map[string]any{"tokenSecret": map[string]any{"name": "sitebus-status", "key": "page-token"}}})
	if len(got) != len(app.ServiceNames) {
		t.Fatalf("%d deployments, want %d", len(got), len(app.ServiceNames))
	}
	for name, e := range got {
		want := []any{map[string]any{"name": "SITEBUS_STATUS_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "sitebus-status", "key": "page-token"}}}}
		if !reflect.DeepEqual(e, want) {
			t.Errorf("%s: env %v, want %v", name, e, want)
		}
	}
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := decodeYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// wantReplicas is the chart's default per service: one for the services
// that must not run twice (one STOMP session, one usage poller, one drift
// pass).
var wantReplicas = map[string]int64{"stomp-bridge": 1, "usage-reporter": 1, "drift": 1}

func checkDeployment(t *testing.T, d *unstructured.Unstructured, name, natsURL string) {
	t.Helper()
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	want := int64(2)
	if r, ok := wantReplicas[name]; ok {
		want = r
	}
	if replicas != want {
		t.Errorf("%s: %d replicas, want %d", d.GetName(), replicas, want)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", d.GetName(), len(cs))
	}
	c := cs[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	wantArgs := []string{"run", "--only", name, "-c", "/etc/sitebus/config.yaml", "--nats-url", natsURL, "--http-addr", "0.0.0.0:9090"}
	if !slices.Equal(args, wantArgs) {
		t.Errorf("%s: args %q, want %q", d.GetName(), args, wantArgs)
	}
	for probe, p := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		got, _, _ := unstructured.NestedString(c, probe, "httpGet", "path")
		port, _, _ := unstructured.NestedFieldNoCopy(c, probe, "httpGet", "port")
		if got != p || port != "http" {
			t.Errorf("%s: %s %s on %v, want %s on http", d.GetName(), probe, got, port, p)
		}
	}
	if port, _, _ := unstructured.NestedSlice(c, "ports"); len(port) != 1 || fmt.Sprint(port[0].(map[string]any)["containerPort"]) != "9090" {
		t.Errorf("%s: ports %v, want http 9090", d.GetName(), port)
	}
	user, _, _ := unstructured.NestedInt64(d.Object, "spec", "template", "spec", "securityContext", "runAsUser")
	ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem")
	if user != 65532 || !ro {
		t.Errorf("%s: runAsUser %d, readOnlyRootFilesystem %v; want 65532, true", d.GetName(), user, ro)
	}
}

// The chart installs on a real API server (its validation and defaulting,
// not a dry run) and what is read back is what sites rely on.
func TestChartInstallsOnTheAPIServer(t *testing.T) {
	kube.Require(t)
	cluster := kube.Shared(t)
	const config = "waldur_api_url: https://waldur.example/api/\nwaldur_api_token: secret-token\n"
	cases := []struct {
		name    string
		vals    func(crNS string) map[string]any
		natsURL func(ns string) string
		nats    bool
		monitor bool
	}{
		{
			name: "chart nats",
			vals: func(crNS string) map[string]any {
				return map[string]any{"config": config, "rbac": map[string]any{"crNamespace": crNS}}
			},
			natsURL: func(ns string) string { return "nats://sitebus-nats." + ns + ".svc:4222" },
			nats:    true,
		},
		{
			name: "existing nats and servicemonitor",
			vals: func(crNS string) map[string]any {
				return map[string]any{
					"config":         config,
					"nats":           map[string]any{"enabled": false, "url": "nats://nats.example:4222"},
					"serviceMonitor": map[string]any{"enabled": true},
					"rbac":           map[string]any{"crNamespace": crNS, "okd": true},
				}
			},
			natsURL: func(string) string { return "nats://nats.example:4222" },
			monitor: true,
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ns := fmt.Sprintf("sitebus-helm-%d-%d", i, time.Now().UnixNano()%1e6)
			crNS := ns + "-cr"
			// Release names are global for the cluster-scoped RBAC: one per case.
			if err := cluster.ApplyYAML(ctx, []byte(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns, crNS))); err != nil {
				t.Fatal(err)
			}
			if tc.monitor {
				// The Prometheus Operator's CRD, reduced to what the API server needs to store the kind.
				if err := cluster.ApplyYAML(ctx, []byte(serviceMonitorCRD)); err != nil {
					t.Fatal(err)
				}
			}
			docs := allDocs(render(t, ns, tc.vals(crNS)))
			if err := cluster.ApplyYAML(ctx, docs); err != nil {
				t.Fatalf("apply: %v", err)
			}
			objs := decode(t, docs)
			// Everything rendered is there, in the namespace it was rendered for.
			for _, o := range objs {
				if got := get(t, ctx, cluster, o); got.GetNamespace() != o.GetNamespace() {
					t.Errorf("%s %s: namespace %q, want %q", o.GetKind(), o.GetName(), got.GetNamespace(), o.GetNamespace())
				}
			}
			for _, name := range app.ServiceNames {
				checkDeployment(t, get(t, ctx, cluster, find(objs, "Deployment", "sitebus-"+name)), name, tc.natsURL(ns))
				pdb := get(t, ctx, cluster, find(objs, "PodDisruptionBudget", "sitebus-"+name))
				if mu, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(mu) != "1" {
					t.Errorf("PDB sitebus-%s: maxUnavailable %v, want 1", name, mu)
				}
			}
			secret := get(t, ctx, cluster, find(objs, "Secret", "sitebus-config"))
			stored := decodeSecret(t, secret, "config.yaml")
			if !strings.Contains(stored, "waldur_api_token: secret-token") {
				t.Errorf("the config Secret lacks the configuration:\n%s", stored)
			}
			// R3 streams exactly when the chart runs the 3-node cluster.
			if r3 := strings.Contains(stored, "replicas: 3"); r3 != tc.nats {
				t.Errorf("config Secret with nats.enabled=%v: streams replicas 3 is %v:\n%s", tc.nats, r3, stored)
			}
			checkRBAC(t, ctx, cluster, objs, ns, crNS, tc.monitor)
			sts := find(objs, "StatefulSet", "sitebus-nats")
			if !tc.nats {
				if sts != nil {
					t.Error("nats.enabled=false still renders the NATS StatefulSet")
				}
			} else {
				checkNATS(t, ctx, cluster, get(t, ctx, cluster, sts), find(objs, "ConfigMap", "sitebus-nats"), ns)
			}
			if sm := find(objs, "ServiceMonitor", "sitebus"); (sm != nil) != tc.monitor {
				t.Errorf("ServiceMonitor rendered: %v, want %v", sm != nil, tc.monitor)
			} else if sm != nil {
				get(t, ctx, cluster, sm)
			}
		})
	}
}

func gvr(o *unstructured.Unstructured) schema.GroupVersionResource {
	gvk := o.GroupVersionKind()
	plural := strings.ToLower(gvk.Kind) + "s"
	switch gvk.Kind {
	case "PodDisruptionBudget", "ServiceMonitor", "ConfigMap", "Secret", "Service", "Deployment", "StatefulSet", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
	default:
		panic("no resource for kind " + gvk.Kind)
	}
	return gvk.GroupVersion().WithResource(plural)
}

// get reads o back from the API server.
func get(t *testing.T, ctx context.Context, c *kube.Cluster, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if o == nil {
		t.Fatal("not rendered")
	}
	var got *unstructured.Unstructured
	var err error
	if o.GetNamespace() == "" {
		got, err = c.Dynamic().Resource(gvr(o)).Get(ctx, o.GetName(), metav1.GetOptions{})
	} else {
		got, err = c.Dynamic().Resource(gvr(o)).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("read back %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return got
}
