package okd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Create makes the project through a ProjectRequest, marks its namespace
// as sitebus's and sets its quota; or finishes what an earlier attempt
// began. A project of that name without sitebus's mark, or marked for
// another resource, is refused and left untouched. Existed is set when
// project and quota were there already (nothing is changed then).
func (b *Backend) Create(ctx context.Context, r backend.Resource) (backend.Created, error) {
	names, err := b.settings.Names(r)
	if err != nil {
		return backend.Created{}, err
	}
	hard, err := b.quota.toHard(r.Limits)
	if err != nil {
		return backend.Created{}, err
	}
	name := names.Project
	ns, err := b.getNamespace(ctx, name)
	projectExisted := err == nil
	switch {
	case err == nil:
		if err := b.checkOwn(ns, r); err != nil {
			return backend.Created{}, err
		}
	case !errors.Is(err, backend.ErrNotFound):
		return backend.Created{}, err
	default:
		if ns, err = b.createProject(ctx, names, r); err != nil {
			return backend.Created{}, err
		}
	}
	q, quotaExisted, err := b.ensureQuota(ctx, name, hard)
	if err != nil {
		return backend.Created{}, err
	}
	limits, err := b.quota.fromHard(hardOf(q))
	if err != nil {
		return backend.Created{}, err
	}
	md, err := b.metadata(ctx, ns, q)
	if err != nil {
		return backend.Created{}, err
	}
	return backend.Created{BackendID: name, Limits: limits, Metadata: md, Existed: projectExisted && quotaExisted}, nil
}

// checkOwn refuses a namespace Create must not adopt.
func (b *Backend) checkOwn(ns *unstructured.Unstructured, r backend.Resource) error {
	name := ns.GetName()
	if !isManaged(ns) {
		// A create never adopts: the resource is new to Waldur, so an
		// unmarked project of its name was made for something else.
		return b.notManaged(name)
	}
	if other := ns.GetAnnotations()[AnnotationResourceUUID]; other != "" && other != r.UUID {
		return fault.Errorf(fault.NotManaged, "OpenShift project %s belongs to resource %s, not %s; refusing to touch it", name, other, r.UUID)
	}
	if ns.GetDeletionTimestamp() != nil {
		// Reporting it would hand Waldur a project about to vanish; once
		// it is gone, a retry creates it anew.
		return fmt.Errorf("OpenShift project %s is being deleted; retry when it is gone", name)
	}
	return nil
}

// createProject sends the ProjectRequest and then marks the namespace.
// The request carries the annotations and the mark too (as the Python
// plugin sends its annotations), but OpenShift's default project template
// does not copy them to the project, hence the patch.
func (b *Backend) createProject(ctx context.Context, n Names, r backend.Resource) (*unstructured.Unstructured, error) {
	display := r.Name
	if display == "" {
		display = r.Slug
	}
	annotations := map[string]any{
		AnnotationDescription:  display,
		AnnotationDisplayName:  display,
		AnnotationResourceUUID: r.UUID,
	}
	if n.Organization != "" {
		annotations[AnnotationOrganization] = n.Organization
	}
	if n.Parent != "" {
		annotations[AnnotationParent] = n.Parent
	}
	labels := map[string]any{LabelManagedBy: ManagedByValue}
	req := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion":  ProjectRequestGVR.GroupVersion().String(),
		"kind":        "ProjectRequest",
		"metadata":    map[string]any{"name": n.Project, "annotations": annotations, "labels": labels},
		"displayName": display,
		"description": display,
	}}
	_, err := b.dyn.Resource(ProjectRequestGVR).Create(ctx, req, metav1.CreateOptions{FieldManager: DefaultFieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Made between our read and our request: by a racing create of
		// this resource (then marked in a moment) or by someone else. The
		// retry reads it again and tells which.
		return nil, fmt.Errorf("OpenShift project %s appeared while being created; retry: %w", n.Project, err)
	}
	if err != nil {
		return nil, wrapAPI("create ProjectRequest", n.Project, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	if err != nil {
		return nil, err
	}
	ns, err := b.dyn.Resource(namespaceGVR).Patch(ctx, n.Project, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: DefaultFieldManager})
	if err != nil {
		return nil, wrapAPI("mark the namespace of project", n.Project, err)
	}
	b.log.Info("created OpenShift project", "project", n.Project, "resource", r.UUID)
	return ns, nil
}

// ensureQuota creates the quota with hard unless it is there; existed
// tells which.
func (b *Backend) ensureQuota(ctx context.Context, ns string, hard map[string]string) (*unstructured.Unstructured, bool, error) {
	q, err := b.getQuota(ctx, ns)
	if err == nil {
		return q, true, nil
	}
	if !errors.Is(err, backend.ErrNotFound) {
		return nil, false, err
	}
	q, err = b.quotas(ns).Create(ctx, newQuota(ns, hard), metav1.CreateOptions{FieldManager: DefaultFieldManager})
	if apierrors.IsAlreadyExists(err) {
		q, err = b.getQuota(ctx, ns)
		return q, true, err
	}
	if err != nil {
		return nil, false, wrapAPI("create ResourceQuota "+QuotaName+" in", ns, err)
	}
	b.log.Info("set OpenShift project quota", "project", ns, "hard", hard)
	return q, false, nil
}

func newQuota(ns string, hard map[string]string) *unstructured.Unstructured {
	q := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ResourceQuota",
		"metadata": map[string]any{
			"name": QuotaName, "namespace": ns,
			"labels": map[string]any{LabelManagedBy: ManagedByValue},
		},
	}}
	setHard(q, hard)
	return q
}

// Exists reports whether a project of that name is there, managed or not.
func (b *Backend) Exists(ctx context.Context, backendID string) (bool, error) {
	_, err := b.getNamespace(ctx, backendID)
	return backend.Found(err)
}

// Delete deletes the project (OpenShift then removes its namespace); a
// missing or already terminating one is not an error. The delete is
// conditional on the UID read, so a project replaced in between by one
// sitebus does not manage is not deleted.
func (b *Backend) Delete(ctx context.Context, backendID string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ns, err := b.getManaged(ctx, backendID)
		if errors.Is(err, backend.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if ns.GetDeletionTimestamp() != nil {
			return nil
		}
		uid := ns.GetUID()
		err = b.dyn.Resource(ProjectGVR).Delete(ctx, backendID, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrapAPI("delete project", backendID, err)
		}
		b.log.Info("deleted OpenShift project", "project", backendID)
		return nil
	})
}

// SetLimits sets the quota of limits, keeping the entries of kinds the
// limits do not name. While paused or downscaled, the limits replace the
// saved hard map instead: the reduced quota stays, and Restore brings the
// new limits.
func (b *Backend) SetLimits(ctx context.Context, backendID string, limits map[string]float64) (bool, error) {
	hard, err := b.quota.toHard(limits)
	if err != nil {
		return false, err
	}
	changed := false
	err = b.updateQuota(ctx, backendID, func(q *unstructured.Unstructured) (bool, error) {
		changed = false
		if statusOf(q) != backend.StatusActive {
			saved, err := savedHard(q)
			if err != nil {
				return false, err
			}
			want := merged(saved, hard)
			if saved != nil && kubeapi.SameHard(saved, want) {
				return false, nil
			}
			changed = true
			return true, setSaved(q, want)
		}
		current := hardOf(q)
		want := merged(current, hard)
		if kubeapi.SameHard(current, want) {
			return false, nil
		}
		changed = true
		setHard(q, want)
		return true, nil
	})
	if err != nil {
		return false, err
	}
	if changed {
		b.log.Info("set OpenShift project limits", "project", backendID, "hard", hard)
	}
	return changed, nil
}

func merged(base, over map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// Limits reads the quota in force, in Waldur units (reduced while paused
// or downscaled).
func (b *Backend) Limits(ctx context.Context, backendID string) (map[string]float64, error) {
	if _, err := b.getNamespace(ctx, backendID); err != nil {
		return nil, err
	}
	q, err := b.getQuota(ctx, backendID)
	if errors.Is(err, backend.ErrNotFound) {
		return map[string]float64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return b.quota.fromHard(hardOf(q))
}

// Pause sets the all-zero quota, remembering the one before.
func (b *Backend) Pause(ctx context.Context, backendID string) error {
	return b.reduce(ctx, backendID, backend.StatusPaused, pausedLimits)
}

// Downscale sets the minimal quota (1 core, 1 GB, 1 GB, 1 pod),
// remembering the one before.
func (b *Backend) Downscale(ctx context.Context, backendID string) error {
	return b.reduce(ctx, backendID, backend.StatusDownscaled, downscaledLimits)
}

func (b *Backend) reduce(ctx context.Context, backendID string, status backend.Status, byKind map[string]float64) error {
	want := HardFor(byKind)
	return b.updateQuota(ctx, backendID, func(q *unstructured.Unstructured) (bool, error) {
		if statusOf(q) == status && kubeapi.SameHard(hardOf(q), want) {
			return false, nil
		}
		if statusOf(q) == backend.StatusActive {
			// Only the first reduction saves: a pause after a downscale
			// still restores the limits before both.
			if err := setSaved(q, hardOf(q)); err != nil {
				return false, err
			}
		}
		setAnnotation(q, AnnotationStatus, string(status))
		setHard(q, want)
		b.log.Info("reducing OpenShift project quota", "project", backendID, "status", status)
		return true, nil
	})
}

// Restore puts back the quota from before Pause or Downscale. Without a
// saved one (a project the Python agent paused, whose quota is its all-zero
// or minimal one) it applies the default quotas, as the Python plugin
// always does; an active project with any other quota is left alone.
func (b *Backend) Restore(ctx context.Context, backendID string) error {
	return b.updateQuota(ctx, backendID, func(q *unstructured.Unstructured) (bool, error) {
		saved, err := savedHard(q)
		if err != nil {
			return false, err
		}
		if statusOf(q) == backend.StatusActive {
			current := hardOf(q)
			pythonReduced := kubeapi.SameHard(current, HardFor(pausedLimits)) || kubeapi.SameHard(current, HardFor(downscaledLimits))
			if saved != nil || !pythonReduced {
				return false, nil
			}
		}
		if saved == nil {
			saved = HardFor(b.settings.DefaultQuotas)
			b.log.Warn("restoring OpenShift project to the default quotas: the limits before are not known", "project", backendID)
		}
		setHard(q, saved)
		removeAnnotation(q, AnnotationStatus)
		removeAnnotation(q, AnnotationSavedHard)
		b.log.Info("restoring OpenShift project quota", "project", backendID)
		return true, nil
	})
}

// updateQuota reads the managed project's quota (a fresh one when missing,
// after a create that stopped half-way), lets change modify it and writes
// it; a conflict starts again from the read.
func (b *Backend) updateQuota(ctx context.Context, ns string, change func(*unstructured.Unstructured) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if _, err := b.getManaged(ctx, ns); err != nil {
			return err
		}
		q, err := b.getQuota(ctx, ns)
		missing := errors.Is(err, backend.ErrNotFound)
		if missing {
			q = newQuota(ns, nil)
		} else if err != nil {
			return err
		}
		ok, err := change(q)
		if err != nil || !ok {
			return err
		}
		if missing {
			_, err = b.quotas(ns).Create(ctx, q, metav1.CreateOptions{FieldManager: DefaultFieldManager})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(quotaGVR.GroupResource(), QuotaName, err)
			}
		} else {
			_, err = b.quotas(ns).Update(ctx, q, metav1.UpdateOptions{FieldManager: DefaultFieldManager})
		}
		if apierrors.IsConflict(err) {
			return err // retried from the read
		}
		return wrapAPI("update ResourceQuota "+QuotaName+" in", ns, err)
	})
}

func (b *Backend) quotas(ns string) dynamic.ResourceInterface {
	return b.dyn.Resource(quotaGVR).Namespace(ns)
}

// getNamespace reads a project's namespace; a missing one is
// backend.ErrNotFound.
func (b *Backend) getNamespace(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	ns, err := b.dyn.Resource(namespaceGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFoundf("OpenShift project %s not found", name)
	}
	if err != nil {
		return nil, wrapAPI("get project", name, err)
	}
	return ns, nil
}

// getManaged reads a project that a change is about to be made to; one
// without sitebus's mark is adopted when it is the Python agent's for a
// resource of the offering, and refused otherwise (adopt).
func (b *Backend) getManaged(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	ns, err := b.getNamespace(ctx, name)
	if err != nil {
		return nil, err
	}
	if !isManaged(ns) {
		return b.adopt(ctx, ns)
	}
	return ns, nil
}

func (b *Backend) getQuota(ctx context.Context, ns string) (*unstructured.Unstructured, error) {
	q, err := b.quotas(ns).Get(ctx, QuotaName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFoundf("ResourceQuota %s not found in OpenShift project %s", QuotaName, ns)
	}
	if err != nil {
		return nil, wrapAPI("get ResourceQuota "+QuotaName+" in", ns, err)
	}
	return q, nil
}

func (b *Backend) notManaged(name string) error {
	return fault.Errorf(fault.NotManaged, "OpenShift project %s exists and is not managed by sitebus (no %s=%s label); refusing to touch it",
		name, LabelManagedBy, ManagedByValue)
}

func isManaged(obj *unstructured.Unstructured) bool {
	return obj.GetLabels()[LabelManagedBy] == ManagedByValue
}

// hardOf reads spec.hard (or another path, status.used) as strings.
func hardOf(q *unstructured.Unstructured, path ...string) map[string]string {
	if len(path) == 0 {
		path = []string{"spec", "hard"}
	}
	m, _, _ := unstructured.NestedMap(q.Object, path...)
	out := map[string]string{}
	for k, v := range m {
		switch s := v.(type) {
		case string:
			out[k] = s
		case int64, float64:
			out[k] = fmt.Sprint(s)
		}
	}
	return out
}

func setHard(q *unstructured.Unstructured, hard map[string]string) {
	m := make(map[string]any, len(hard))
	for k, v := range hard {
		m[k] = v
	}
	_ = unstructured.SetNestedMap(q.Object, m, "spec", "hard")
}

func statusOf(q *unstructured.Unstructured) backend.Status {
	return backend.ParseStatus(q.GetAnnotations()[AnnotationStatus])
}

func savedHard(q *unstructured.Unstructured) (map[string]string, error) {
	raw, ok := q.GetAnnotations()[AnnotationSavedHard]
	if !ok {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fault.Errorf(fault.Invalid, "ResourceQuota %s/%s: annotation %s is not a JSON map of quantities: %v",
			q.GetNamespace(), q.GetName(), AnnotationSavedHard, err)
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

func setSaved(q *unstructured.Unstructured, hard map[string]string) error {
	data, err := json.Marshal(hard)
	if err != nil {
		return err
	}
	setAnnotation(q, AnnotationSavedHard, string(data))
	return nil
}

func setAnnotation(obj *unstructured.Unstructured, k, v string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	obj.SetAnnotations(a)
}

func removeAnnotation(obj *unstructured.Unstructured, k string) {
	a := obj.GetAnnotations()
	delete(a, k)
	obj.SetAnnotations(a)
}
