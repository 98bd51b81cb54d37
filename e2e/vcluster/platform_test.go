package vcluster_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// virtualClusterInstanceCRD stands in for vCluster Platform's CRD: the
// same group, version, kind and scope, its schema left open (the
// platform's own is large and sitebus writes only a few fields), so the
// API server stores what the driver writes as the platform's would.
const virtualClusterInstanceCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: virtualclusterinstances.storage.loft.sh
spec:
  group: storage.loft.sh
  names: {kind: VirtualClusterInstance, listKind: VirtualClusterInstanceList, plural: virtualclusterinstances, singular: virtualclusterinstance}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// platformOn installs the VirtualClusterInstance CRD into host's API
// server and makes project's namespace p-<project>.
func platformOn(t *testing.T, host *kube.Cluster, project string) (kubernetes.Interface, dynamic.ResourceInterface) {
	t.Helper()
	ctx := context.Background()
	if err := host.ApplyYAML(ctx, []byte(virtualClusterInstanceCRD)); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(host.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(host.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := vcluster.PlatformNamespace(project)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return cs, dyn.Resource(vcluster.VirtualClusterInstanceGVR).Namespace(ns)
}

// The platform driver against a real API server holding the platform's
// CRD: a second install changes nothing, an instance made by hand or of
// another resource is refused untouched, and a second uninstall finds
// nothing.
func TestPlatformDriverIsIdempotentAndRefusesInstancesNotItsOwn(t *testing.T) {
	host := kube.Shared(t)
	const project, mine, other = "plat-idem", "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-8999-000000000000"
	_, instances := platformOn(t, host, project)
	ctx := context.Background()

	s := vcluster.DefaultSettings()
	s.Driver, s.ImportToRancher, s.PlatformProject, s.PlatformTemplate, s.PlatformOwner = vcluster.DriverPlatform, false, project, "small", "admin"
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := vcluster.NewPlatformDriver(s, host.RESTConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	// A foreign instance, as a platform user would make it in the UI.
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storage.loft.sh/v1", "kind": "VirtualClusterInstance",
		"metadata": map[string]any{"name": "plat-foreign"},
		"spec":     map[string]any{"templateRef": map[string]any{"name": "theirs"}},
	}}
	if _, err := instances.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name       string
		do         func() (string, error)
		want       string
		notManaged bool
	}{
		{name: "first install creates the instance", want: vcluster.ReleaseInstalled, do: func() (string, error) {
			r, err := d.Install(ctx, "vc-plat-mine", mine, "1.31", nil)
			return r.Action, err
		}},
		{name: "a second install changes nothing", want: vcluster.ReleaseUnchanged, do: func() (string, error) {
			r, err := d.Install(ctx, "vc-plat-mine", mine, "1.31", nil)
			return r.Action, err
		}},
		{name: "another resource's instance is refused", notManaged: true, do: func() (string, error) {
			r, err := d.Install(ctx, "vc-plat-mine", other, "", nil)
			return r.Action, err
		}},
		{name: "another resource cannot uninstall it", notManaged: true, do: func() (string, error) {
			_, err := d.Uninstall(ctx, "vc-plat-mine", other)
			return "", err
		}},
		{name: "an instance made by hand is refused", notManaged: true, do: func() (string, error) {
			r, err := d.Install(ctx, "vc-plat-foreign", mine, "", nil)
			return r.Action, err
		}},
		{name: "and is not uninstalled", notManaged: true, do: func() (string, error) {
			_, err := d.Uninstall(ctx, "vc-plat-foreign", mine)
			return "", err
		}},
		{name: "uninstall deletes ours", want: "existed", do: func() (string, error) {
			had, err := d.Uninstall(ctx, "vc-plat-mine", mine)
			return map[bool]string{true: "existed", false: "none"}[had], err
		}},
		{name: "a second uninstall finds none", want: "none", do: func() (string, error) {
			had, err := d.Uninstall(ctx, "vc-plat-mine", mine)
			return map[bool]string{true: "existed", false: "none"}[had], err
		}},
	}
	for _, st := range steps {
		got, err := st.do()
		if st.notManaged {
			if !errors.Is(err, backend.ErrNotManaged) {
				t.Fatalf("%s: %q, %v; want ErrNotManaged", st.name, got, err)
			}
			continue
		}
		if err != nil || got != st.want {
			t.Fatalf("%s: %q, %v; want %q", st.name, got, err, st.want)
		}
		if st.want == vcluster.ReleaseInstalled {
			u, err := instances.Get(ctx, "plat-mine", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "clusterRef")
			tpl, _, _ := unstructured.NestedString(u.Object, "spec", "templateRef", "name")
			if tpl != "small" || ref["cluster"] != vcluster.DefaultPlatformCluster || ref["namespace"] != "vc-plat-mine" || u.GetLabels()[vcluster.LabelResourceUUID] != mine {
				t.Errorf("stored instance: template %q, clusterRef %v, labels %v", tpl, ref, u.GetLabels())
			}
		}
	}

	left, err := instances.Get(ctx, "plat-foreign", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the foreign instance: %v", err)
	}
	if tpl, _, _ := unstructured.NestedString(left.Object, "spec", "templateRef", "name"); tpl != "theirs" || len(left.GetLabels()) != 0 {
		t.Errorf("the foreign instance was changed: template %q, labels %v", tpl, left.GetLabels())
	}
	if _, err := instances.Get(ctx, "plat-mine", metav1.GetOptions{}); err == nil {
		t.Error("our instance is still there after uninstall")
	}
}

// platformStandIn plays vCluster Platform, which does not run here: once
// the VirtualClusterInstance of the test's resource is in the project's
// namespace, it writes the kubeconfig Secret vc-<virtual cluster> into
// the instance's spec.clusterRef.namespace, as the vCluster the platform
// deploys there does at start, pointing at the second API server.
func (e *env) platformStandIn(t *testing.T, instances dynamic.ResourceInterface) {
	e.standIn(t, func(ctx context.Context) (string, string, bool) {
		u, err := instances.Get(ctx, e.slug, metav1.GetOptions{})
		if err != nil {
			return "", "", false
		}
		ns, _, _ := unstructured.NestedString(u.Object, "spec", "clusterRef", "namespace")
		vc, _, _ := unstructured.NestedString(u.Object, "spec", "clusterRef", "virtualCluster")
		return ns, "vc-" + vc, true
	})
}

// The whole create and terminate with the platform driver: the create's
// release step writes the instance, the platform (its stand-in) brings the
// kubeconfig Secret, the import completes; terminate deletes the instance.
func TestPlatformDriverCreatesTheInstanceAndTerminateDeletesIt(t *testing.T) {
	const project = "plat-saga"
	_, instances := platformOn(t, kube.Shared(t), project)
	e := newEnvWith(t, "platformed", []envOption{withSettings(map[string]any{"driver": vcluster.DriverPlatform,
		"platform_project": project, "platform_template": "small"})})
	ctx := context.Background()
	e.platformStandIn(t, instances)
	o := e.order(e.create())
	if o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	resUUID := o.MarketplaceResourceUUID
	u, err := instances.Get(ctx, e.slug, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tpl, _, _ := unstructured.NestedString(u.Object, "spec", "templateRef", "name"); tpl != "small" ||
		hexOf(u.GetLabels()[vcluster.LabelResourceUUID]) != hexOf(resUUID) {
		t.Errorf("instance: template %q, labels %v", tpl, u.GetLabels())
	}

	if o := e.order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID}); o.State != "done" {
		t.Fatalf("terminate %s: %s", o.State, o.ErrorMessage)
	}
	if inv := e.Rancher.Inventory(); !inv.Empty() {
		t.Errorf("left in Rancher: %s", inv)
	}
	if _, err := instances.Get(ctx, e.slug, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the instance after terminate: %v", err)
	}
}
