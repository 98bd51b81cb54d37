package vcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// VirtualClusterInstanceGVR is vCluster Platform's (Loft's) virtual
// cluster, the storage.loft.sh/v1 custom resource the platform keeps in a
// project's namespace and turns into a vCluster on a connected cluster.
var VirtualClusterInstanceGVR = schema.GroupVersionResource{Group: "storage.loft.sh", Version: "v1", Resource: "virtualclusterinstances"}

// VirtualClusterInstanceKind is the kind of VirtualClusterInstanceGVR.
const VirtualClusterInstanceKind = "VirtualClusterInstance"

// PlatformProjectPrefix starts a platform project's namespace: the
// platform keeps project <name>'s objects in namespace p-<name>.
const PlatformProjectPrefix = "p-"

// MaxInstanceName is the longest VirtualClusterInstance name: the platform
// uses it as a label value and a DNS label, 63 characters.
const MaxInstanceName = 63

// InstanceName is the VirtualClusterInstance of host namespace vc-<slug>:
// the slug, so that the vCluster the platform deploys there is named as
// the helm driver's (kubeconfig Secret vc-<slug>). A slug too long is
// refused, not shortened.
func InstanceName(ns string) (string, error) {
	return slugName(ns, "the VirtualClusterInstance", "the platform", MaxInstanceName)
}

// PlatformNamespace is the namespace of platform project project.
func PlatformNamespace(project string) string { return PlatformProjectPrefix + project }

// PlatformInstance is the VirtualClusterInstance s's platform driver makes
// for resourceUUID's virtual cluster in host namespace ns: from template
// platform_template, on connected cluster platform_cluster in ns (which
// the namespace step made), owned by platform_owner when set, with
// sitebus's marks (the labels of a helm release, the annotations of the
// host namespace) so that another's instance of that name is refused.
func PlatformInstance(s Settings, ns, resourceUUID string) (*unstructured.Unstructured, error) {
	name, err := InstanceName(ns)
	if err != nil {
		return nil, err
	}
	if resourceUUID == "" {
		return nil, fault.Errorf(fault.Invalid, "VirtualClusterInstance %s: the Waldur resource UUID is required", name)
	}
	spec := map[string]any{
		"templateRef": map[string]any{"name": s.PlatformTemplate},
		// virtualCluster names the vCluster (its Helm release) in ns: the
		// slug, so its kubeconfig Secret is vc-<slug>, as SecretName says.
		"clusterRef": map[string]any{"cluster": s.PlatformCluster, "namespace": ns, "virtualCluster": name},
	}
	if s.PlatformOwner != "" {
		spec["owner"] = map[string]any{"user": s.PlatformOwner}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": VirtualClusterInstanceGVR.GroupVersion().String(),
		"kind":       VirtualClusterInstanceKind,
		"spec":       spec,
	}}
	u.SetName(name)
	u.SetNamespace(PlatformNamespace(s.PlatformProject))
	u.SetLabels(marks(resourceUUID))
	u.SetAnnotations(map[string]string{AnnotationManaged: "true", AnnotationResourceUUID: resourceUUID})
	return u, nil
}

// oursInstance refuses an instance without sitebus's marks for
// resourceUUID: one the platform's users made by hand, or another
// resource's.
func oursInstance(u *unstructured.Unstructured, resourceUUID string) error {
	l, a := u.GetLabels(), u.GetAnnotations()
	if l[LabelManaged] != "true" || a[AnnotationManaged] != "true" {
		return fault.Errorf(fault.NotManaged, "VirtualClusterInstance %s in %s exists and is not managed by sitebus (no %s: \"true\"); refusing to touch it",
			u.GetName(), u.GetNamespace(), AnnotationManaged)
	}
	if l[LabelResourceUUID] != resourceUUID {
		return fault.Errorf(fault.NotManaged, "VirtualClusterInstance %s in %s belongs to Waldur resource %q, not %q; refusing to touch it",
			u.GetName(), u.GetNamespace(), l[LabelResourceUUID], resourceUUID)
	}
	return nil
}

// PlatformDriver is the platform driver: vCluster Platform (Loft) makes
// the virtual cluster from a VirtualClusterInstance sitebus writes into
// the platform project's namespace, through the platform's API (the
// cluster its CRDs live in) with client-go's dynamic client.
type PlatformDriver struct {
	s   Settings
	dyn dynamic.Interface
	log *slog.Logger
}

// NewPlatformDriver is the platform driver of s over the platform's cfg.
func NewPlatformDriver(s Settings, cfg *rest.Config, log *slog.Logger) (*PlatformDriver, error) {
	if cfg == nil {
		return nil, errors.New("platform driver: no platform API configuration")
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("platform driver: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PlatformDriver{s: s, dyn: dyn, log: log}, nil
}

// PlatformDriver is the platform driver of the backend's settings: over
// platform_kubeconfig_path, or the host cluster's API when it is "" (the
// platform installed on the host). Only a Backend made by New knows how
// to reach the host.
func (b *Backend) PlatformDriver() (*PlatformDriver, error) {
	cfg := b.hostConfig
	if p := b.settings.PlatformKubeconfigPath; p != "" {
		c, err := clientcmd.BuildConfigFromFlags("", p)
		if err != nil {
			return nil, fmt.Errorf("%s: platform_kubeconfig_path %s: %w", Type, p, err)
		}
		kubeapi.SetDefaults(c)
		kubeapi.GuardAnswers(c, "the vCluster Platform")
		cfg = c
	}
	return NewPlatformDriver(b.settings, cfg, b.log)
}

func (d *PlatformDriver) instances() dynamic.ResourceInterface {
	return d.dyn.Resource(VirtualClusterInstanceGVR).Namespace(PlatformNamespace(d.s.PlatformProject))
}

// Install makes resourceUUID's VirtualClusterInstance for host namespace
// ns, or brings its spec and marks up to date: an instance already as
// wanted is left as it is (unchanged), and one of that name that is not
// this resource's is refused, untouched. The order's Kubernetes version
// and limits are the template's business on the platform, so they are
// not written.
func (d *PlatformDriver) Install(ctx context.Context, ns, resourceUUID, _ string, _ map[string]float64) (ReleaseResult, error) {
	want, err := PlatformInstance(d.s, ns, resourceUUID)
	if err != nil {
		return ReleaseResult{}, err
	}
	name := want.GetName()
	ri := d.instances()
	cur, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// One made between the read and the create fails as
		// AlreadyExists and is judged on the saga's next try.
		made, err := ri.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return ReleaseResult{}, apiErr("create VirtualClusterInstance "+name, err)
		}
		d.log.Info("created the virtual cluster's VirtualClusterInstance", "namespace", made.GetNamespace(), "instance", name)
		return ReleaseResult{Name: name, Revision: int(made.GetGeneration()), Action: ReleaseInstalled}, nil
	case err != nil:
		return ReleaseResult{}, apiErr("get VirtualClusterInstance "+name, err)
	}
	if err := oursInstance(cur, resourceUUID); err != nil {
		return ReleaseResult{}, err
	}
	// Only the fields sitebus writes are compared: the platform fills in
	// others (the template's version, status) which must not count as a
	// change.
	changed := false
	spec, _, _ := unstructured.NestedMap(cur.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	wantSpec, _, _ := unstructured.NestedMap(want.Object, "spec")
	for k, v := range wantSpec {
		if sub, ok := v.(map[string]any); ok {
			have, _ := spec[k].(map[string]any)
			merged := maps.Clone(have)
			if merged == nil {
				merged = map[string]any{}
			}
			maps.Copy(merged, sub)
			if !reflect.DeepEqual(have, merged) {
				spec[k], changed = merged, true
			}
			continue
		}
		if !reflect.DeepEqual(spec[k], v) {
			spec[k], changed = v, true
		}
	}
	if !changed {
		return ReleaseResult{Name: name, Revision: int(cur.GetGeneration()), Action: ReleaseUnchanged}, nil
	}
	if err := unstructured.SetNestedMap(cur.Object, spec, "spec"); err != nil {
		return ReleaseResult{}, err
	}
	up, err := ri.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		return ReleaseResult{}, apiErr("update VirtualClusterInstance "+name, err)
	}
	d.log.Info("updated the virtual cluster's VirtualClusterInstance", "namespace", up.GetNamespace(), "instance", name, "generation", up.GetGeneration())
	return ReleaseResult{Name: name, Revision: int(up.GetGeneration()), Action: ReleaseUpgraded}, nil
}

// Uninstall deletes resourceUUID's VirtualClusterInstance of host
// namespace ns (the platform then removes the vCluster); it reports
// whether there was one. An instance of that name that is not this
// resource's is refused, untouched; the delete is conditioned on the UID
// read, so one made in between by someone else is not removed either.
func (d *PlatformDriver) Uninstall(ctx context.Context, ns, resourceUUID string) (bool, error) {
	name, err := InstanceName(ns)
	if err != nil {
		return false, err
	}
	ri := d.instances()
	cur, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, apiErr("get VirtualClusterInstance "+name, err)
	}
	if err := oursInstance(cur, resourceUUID); err != nil {
		return false, err
	}
	uid := types.UID(cur.GetUID())
	err = ri.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, apiErr("delete VirtualClusterInstance "+name, err)
	}
	d.log.Info("deleted the virtual cluster's VirtualClusterInstance", "namespace", cur.GetNamespace(), "instance", name)
	return true, nil
}
