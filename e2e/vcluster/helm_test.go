package vcluster_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/vclustersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// withSettings adds backend_settings to the offering.
func withSettings(kv map[string]any) envOption { return func(e *env) { e.settings = kv } }

// chartObject is one object of sitebus's vCluster chart for release rel.
type chartObject struct {
	kind string
	get  func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error)
}

func chartObjects(rel string) []chartObject {
	sa := func(name string) chartObject {
		return chartObject{"ServiceAccount/" + name, func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error) {
			return cs.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		}}
	}
	svc := func(name string) chartObject {
		return chartObject{"Service/" + name, func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error) {
			return cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		}}
	}
	return []chartObject{
		sa("vc-" + rel), sa("vc-workload-" + rel), svc(rel), svc(rel + "-headless"),
		{"Role/vc-" + rel, func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error) {
			return cs.RbacV1().Roles(ns).Get(ctx, "vc-"+rel, metav1.GetOptions{})
		}},
		{"RoleBinding/vc-" + rel, func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error) {
			return cs.RbacV1().RoleBindings(ns).Get(ctx, "vc-"+rel, metav1.GetOptions{})
		}},
		{"Secret/vc-config-" + rel, func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error) {
			return cs.CoreV1().Secrets(ns).Get(ctx, "vc-config-"+rel, metav1.GetOptions{})
		}},
		{"StatefulSet/" + rel, func(ctx context.Context, cs kubernetes.Interface, ns string) (metav1.Object, error) {
			return cs.AppsV1().StatefulSets(ns).Get(ctx, rel, metav1.GetOptions{})
		}},
	}
}

// releaseSecrets are Helm's storage Secrets of release rel in ns.
func releaseSecrets(t *testing.T, cs kubernetes.Interface, ns, rel string) []corev1.Secret {
	t.Helper()
	l, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + rel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// vclusterStandIn plays vCluster's control plane, which never runs here
// (no kubelet): once the chart's StatefulSet is on the host, it writes
// the kubeconfig Secret vc-<release> as the control plane does at start,
// pointing at the second API server.
func (e *env) vclusterStandIn(t *testing.T) {
	e.standIn(t, func(ctx context.Context) (string, string, bool) {
		_, err := e.hostCS.AppsV1().StatefulSets(e.ns()).Get(ctx, e.slug, metav1.GetOptions{})
		return e.ns(), vcluster.SecretName(e.ns()), err == nil
	})
}

// standIn writes the kubeconfig Secret of the second API server once
// started finds what starts vCluster (vclustersim.BringKubeconfigWhen),
// for at most two minutes of the test.
func (e *env) standIn(t *testing.T, started func(context.Context) (ns, name string, ok bool)) {
	t.Helper()
	raw, err := os.ReadFile(e.virt.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	go vclustersim.BringKubeconfigWhen(ctx, e.hostCS, raw, started)
}

func TestHelmDriverInstallsTheChartAndTerminateLeavesNoRelease(t *testing.T) {
	e := newEnvWith(t, "helmed", []envOption{withSettings(map[string]any{"driver": vcluster.DriverHelm})})
	ctx := context.Background()
	e.vclusterStandIn(t)
	req := e.create()
	req.Attributes["kubernetes_version"] = "1.31"
	o := e.order(req)
	if o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	resUUID := o.MarketplaceResourceUUID
	for _, obj := range chartObjects(e.slug) {
		m, err := obj.get(ctx, e.hostCS, e.ns())
		if err != nil {
			t.Errorf("%s in %s: %v", obj.kind, e.ns(), err)
			continue
		}
		if m.GetLabels()[vcluster.LabelManaged] != "true" || m.GetAnnotations()[vcluster.AnnotationManaged] != "true" ||
			hexOf(m.GetAnnotations()[vcluster.AnnotationResourceUUID]) != hexOf(resUUID) || m.GetAnnotations()["meta.helm.sh/release-name"] != e.slug {
			t.Errorf("%s lacks sitebus's marks or Helm's: labels %v annotations %v", obj.kind, m.GetLabels(), m.GetAnnotations())
		}
	}
	sts, err := e.hostCS.AppsV1().StatefulSets(e.ns()).Get(ctx, e.slug, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := sts.Spec.Template.Spec.Containers[0]; c.Resources.Limits.Cpu().String() != "2" || c.Resources.Limits.Memory().String() != "4Gi" {
		t.Errorf("control plane limits %v, want the order's cpu 2 and ram 4", c.Resources.Limits)
	}
	if img := sts.Spec.Template.Spec.InitContainers[0].Image; img != "ghcr.io/loft-sh/kubernetes:v1.31.0" {
		t.Errorf("Kubernetes image %s, want the order's version", img)
	}
	rels := releaseSecrets(t, e.hostCS, e.ns(), e.slug)
	if len(rels) != 1 || rels[0].Labels["status"] != "deployed" || rels[0].Labels[vcluster.LabelManaged] != "true" ||
		hexOf(rels[0].Labels[vcluster.LabelResourceUUID]) != hexOf(resUUID) {
		t.Fatalf("Helm release Secrets %v, want one deployed revision with sitebus's marks", rels)
	}
	// Loft's operator finds a vCluster by its Service; sitebus labels the
	// Rancher cluster with its UID as the operator does.
	svc, err := e.hostCS.CoreV1().Services(e.ns()).Get(ctx, e.slug, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pc, ok := e.Rancher.ProvisioningClusterNamed(e.ns()); !ok || pc.Labels[vcluster.LabelServiceUID] != string(svc.UID) {
		t.Errorf("Rancher cluster %+v (found %v), want label %s=%s", pc.Labels, ok, vcluster.LabelServiceUID, svc.UID)
	}

	if o := e.order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID}); o.State != "done" {
		t.Fatalf("terminate %s: %s", o.State, o.ErrorMessage)
	}
	if inv := e.Rancher.Inventory(); !inv.Empty() {
		t.Errorf("left in Rancher: %s", inv)
	}
	// The release went before the namespace, so its objects and history
	// are gone whether or not the namespace has finished terminating.
	if rels := releaseSecrets(t, e.hostCS, e.ns(), e.slug); len(rels) != 0 {
		t.Errorf("Helm release Secrets left: %d", len(rels))
	}
	for _, obj := range chartObjects(e.slug) {
		if _, err := obj.get(ctx, e.hostCS, e.ns()); !apierrors.IsNotFound(err) {
			t.Errorf("%s left in %s: %v", obj.kind, e.ns(), err)
		}
	}
	harness.Eventually(t, 2*time.Minute, "the host namespace to be gone", func() bool {
		_, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// The driver against a real API server: a second install of the same
// release changes nothing, other values upgrade it, another resource's
// release and a release that is not sitebus's are refused untouched.
func TestHelmDriverIsIdempotentAndRefusesReleasesNotItsOwn(t *testing.T) {
	host := kube.Shared(t)
	cs, err := kubernetes.NewForConfig(host.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns, mine, other = "vc-helm-idem", "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-8999-000000000000"
	for _, n := range []string{ns, "vc-helm-foreign"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	d, err := vcluster.NewHelmDriver(host.RESTConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name, uuid string
		limits     map[string]float64
		want       string
		revision   int
	}{
		{name: "first install", uuid: mine, limits: map[string]float64{"cpu": 1}, want: vcluster.ReleaseInstalled, revision: 1},
		{name: "the same again", uuid: mine, limits: map[string]float64{"cpu": 1}, want: vcluster.ReleaseUnchanged, revision: 1},
		{name: "new limits", uuid: mine, limits: map[string]float64{"cpu": 2}, want: vcluster.ReleaseUpgraded, revision: 2},
	}
	for _, s := range steps {
		res, err := d.Install(ctx, ns, s.uuid, "", s.limits)
		if err != nil || res.Action != s.want || res.Revision != s.revision || res.Name != "helm-idem" {
			t.Fatalf("%s: %+v %v, want %s revision %d", s.name, res, err, s.want, s.revision)
		}
	}
	if _, err := d.Install(ctx, ns, other, "", nil); !errors.Is(err, backend.ErrNotManaged) {
		t.Fatalf("another resource's install: %v, want ErrNotManaged", err)
	}
	if _, err := d.Uninstall(ctx, ns, other); !errors.Is(err, backend.ErrNotManaged) {
		t.Fatalf("another resource's uninstall: %v, want ErrNotManaged", err)
	}
	if rels := releaseSecrets(t, cs, ns, "helm-idem"); len(rels) != 2 {
		t.Fatalf("%d revisions after the refusals, want 2", len(rels))
	}

	// A release someone else installed with Helm, without sitebus's marks.
	cfg := new(action.Configuration)
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, foreignNS := host.KubeconfigPath(), "vc-helm-foreign"
	flags.KubeConfig, flags.Namespace = &kubeconfig, &foreignNS
	if err := cfg.Init(flags, foreignNS, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	chrt, err := vcluster.Chart()
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.Namespace, in.ReleaseName = "vc-helm-foreign", "helm-foreign"
	if _, err := in.Run(chrt, map[string]any{"sitebus": map[string]any{"resourceUUID": "someone-else"}}); err != nil {
		t.Fatal(err)
	}
	for what, call := range map[string]func() error{
		"install":   func() error { _, err := d.Install(ctx, "vc-helm-foreign", mine, "", nil); return err },
		"uninstall": func() error { _, err := d.Uninstall(ctx, "vc-helm-foreign", mine); return err },
	} {
		if err := call(); !errors.Is(err, backend.ErrNotManaged) {
			t.Errorf("%s of a foreign release: %v, want ErrNotManaged", what, err)
		}
	}
	if rels := releaseSecrets(t, cs, "vc-helm-foreign", "helm-foreign"); len(rels) != 1 || rels[0].Labels["status"] != "deployed" {
		t.Errorf("foreign release %v, want its one deployed revision untouched", rels)
	}

	if had, err := d.Uninstall(ctx, ns, mine); err != nil || !had {
		t.Fatalf("uninstall: %v %v", had, err)
	}
	if had, err := d.Uninstall(ctx, ns, mine); err != nil || had {
		t.Fatalf("second uninstall: %v %v, want nothing to do", had, err)
	}
	if rels := releaseSecrets(t, cs, ns, "helm-idem"); len(rels) != 0 {
		t.Errorf("%d revisions left after uninstall", len(rels))
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "helm-idem", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet left after uninstall: %v", err)
	}
}
