package vcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/fault"
)

// limitRange is the LimitRange EnsureLimitRange makes in host namespace
// ns: default requests for containers that set none, so the quota (which
// counts requests) admits them.
func limitRange(ns string) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: ns,
		Annotations: map[string]string{AnnotationManaged: "true"}},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}}}
}

// LimitRangeDrift compares the LimitRange EnsureLimitRange makes in the
// resource's host namespace ns with the one there, changing nothing:
// have is "" when it is as made, else what differs ("missing", or its
// spec). A namespace that is not the resource's is ErrNotManaged; a
// LimitRange of that name without sitebus's mark is someone else's and
// not compared.
func (b *Backend) LimitRangeDrift(ctx context.Context, ns, resourceUUID string) (have string, err error) {
	if _, err := b.namespace(ctx, ns, resourceUUID); err != nil {
		return "", err
	}
	lr, err := b.host.CoreV1().LimitRanges(ns).Get(ctx, LimitRangeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "missing", nil
	}
	if err != nil {
		return "", apiErr("get limit range in "+ns, err)
	}
	if lr.Annotations[AnnotationManaged] != "true" || equality.Semantic.DeepEqual(lr.Spec, limitRange(ns).Spec) {
		return "", nil
	}
	return fmt.Sprintf("%v", lr.Spec.Limits), nil
}

// RepairLimitRange puts the LimitRange of LimitRangeDrift back: made
// when missing, its spec written back when it carries sitebus's mark.
func (b *Backend) RepairLimitRange(ctx context.Context, ns, resourceUUID string) error {
	if _, err := b.namespace(ctx, ns, resourceUUID); err != nil {
		return err
	}
	lr, err := b.host.CoreV1().LimitRanges(ns).Get(ctx, LimitRangeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return b.EnsureLimitRange(ctx, ns)
	}
	if err != nil {
		return apiErr("get limit range in "+ns, err)
	}
	if lr.Annotations[AnnotationManaged] != "true" {
		return fault.Errorf(fault.NotManaged, "LimitRange %s/%s is not sitebus's (no %s: \"true\"); refusing to touch it", ns, LimitRangeName, AnnotationManaged)
	}
	lr.Spec = limitRange(ns).Spec
	_, err = b.host.CoreV1().LimitRanges(ns).Update(ctx, lr, metav1.UpdateOptions{})
	return apiErr("update limit range in "+ns, err)
}

// PlanSync is Sync's dry run, for the drift pass: the bindings the member
// source wants that the imported virtual cluster in host namespace ns
// lacks (missing), and the bindings with sitebus's marks for the resource
// that the source no longer wants (stale), which Sync would make and
// remove. It changes nothing. Bindings without those marks are never
// stale, as Sync never removes them. A virtual cluster not imported has
// nothing to compare: no error.
func (a *Access) PlanSync(ctx context.Context, resourceUUID, ns string) (missing, stale []rancher.RoleBinding, err error) {
	ref := rancher.ClusterRef{Name: ClusterName(ns), ResourceUUID: resourceUUID}
	current, err := a.Rancher.ClusterRoleBindings(ctx, ref)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list the bindings of Rancher cluster %s: %w", ref, err)
	}
	desired, err := a.Desired(ctx, resourceUUID, ns)
	if err != nil {
		return nil, nil, err
	}
	same := func(x rancher.RoleBinding) func(rancher.RoleBinding) bool {
		return func(y rancher.RoleBinding) bool { return x.RoleTemplateID == y.RoleTemplateID && x.SameSubject(y) }
	}
	for _, d := range desired {
		if !slices.ContainsFunc(current, same(d)) {
			missing = append(missing, d)
		}
	}
	for _, c := range current {
		if c.OwnedBy(resourceUUID) && !slices.ContainsFunc(desired, same(c)) {
			stale = append(stale, c)
		}
	}
	return missing, stale, nil
}
