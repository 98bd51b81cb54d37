package managedns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Create makes the CR, or returns the one sitebus made before for this
// resource (Existed) without changing it. A CR of that name that sitebus
// does not manage, or manages for another resource, is refused.
func (b *Backend) Create(ctx context.Context, r backend.Resource) (backend.Created, error) {
	name, err := b.BackendID(r)
	if err != nil {
		return backend.Created{}, err
	}
	quota, err := b.quota.toQuota(r.Limits)
	if err != nil {
		return backend.Created{}, err
	}
	cr, err := b.crs.Create(ctx, b.newCR(name, r, quota), metav1.CreateOptions{FieldManager: b.fieldManager})
	switch {
	case err == nil:
		b.log.Info("created ManagedNamespace", "name", name, "resource", r.UUID, "quota", quota)
		return b.created(cr, false)
	case !apierrors.IsAlreadyExists(err):
		return backend.Created{}, wrapAPI("create", name, err)
	}
	// There already, from an earlier attempt or a racing one: re-read it.
	cr, err = b.get(ctx, "get", name)
	if err != nil {
		return backend.Created{}, err
	}
	if !isManaged(cr) {
		// A create never adopts: the resource is new to Waldur, so an
		// unmarked CR of its name was made for something else.
		return backend.Created{}, b.notManaged(name)
	}
	if cr.GetDeletionTimestamp() != nil {
		// Reporting it as created would hand Waldur a namespace that is
		// about to vanish; once it is gone, a retry creates it anew.
		return backend.Created{}, fmt.Errorf("ManagedNamespace %s/%s is being deleted; retry when it is gone",
			b.settings.CRNamespace, name)
	}
	if other, ok := ownedByOther(cr, r.UUID); ok {
		return backend.Created{}, fault.Errorf(fault.NotManaged,
			"ManagedNamespace %s/%s belongs to resource %s, not %s; refusing to touch it",
			b.settings.CRNamespace, name, other, r.UUID)
	}
	return b.created(cr, true)
}

func (b *Backend) created(cr *unstructured.Unstructured, existed bool) (backend.Created, error) {
	limits, err := b.quota.fromQuota(specQuota(cr))
	if err != nil {
		return backend.Created{}, err
	}
	return backend.Created{BackendID: cr.GetName(), Limits: limits, Metadata: metadata(cr), Existed: existed}, nil
}

// Exists reports whether a CR of that name is there, managed or not.
func (b *Backend) Exists(ctx context.Context, backendID string) (bool, error) {
	_, err := b.get(ctx, "get", backendID)
	return backend.Found(err)
}

// Delete removes the CR (the operator then removes the namespace). The
// delete is conditional on the UID read, so a CR replaced in between by
// one sitebus does not manage is not deleted.
func (b *Backend) Delete(ctx context.Context, backendID string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cr, err := b.getManaged(ctx, backendID)
		if errors.Is(err, backend.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		uid := cr.GetUID()
		err = b.crs.Delete(ctx, backendID, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrapAPI("delete", backendID, err)
		}
		b.log.Info("deleted ManagedNamespace", "name", backendID)
		return nil
	})
}

// SetLimits patches spec.quota when it differs from the limits. While the
// CR is paused or downscaled, the limits replace the saved quota instead:
// the reduced quota stays, and Restore brings the new limits.
func (b *Backend) SetLimits(ctx context.Context, backendID string, limits map[string]float64) (bool, error) {
	quota, err := b.quota.toQuota(limits)
	if err != nil {
		return false, err
	}
	changed := false
	err = b.update(ctx, backendID, func(cr *unstructured.Unstructured) (patch, error) {
		p, err := limitsPatch(cr, quota)
		changed = p != nil
		return p, err
	})
	if err != nil {
		return false, err
	}
	if changed {
		b.log.Info("set ManagedNamespace limits", "name", backendID, "quota", quota)
	}
	return changed, nil
}

// Limits reads spec.quota in Waldur units: the quota in force, reduced
// while paused or downscaled.
func (b *Backend) Limits(ctx context.Context, backendID string) (map[string]float64, error) {
	cr, err := b.get(ctx, "get", backendID)
	if err != nil {
		return nil, err
	}
	return b.quota.fromQuota(specQuota(cr))
}

// Pause sets the zero quota of the Python plugin, saving the quota before.
func (b *Backend) Pause(ctx context.Context, backendID string) error {
	return b.reduce(ctx, backendID, backend.StatusPaused, pausedQuota)
}

// Downscale sets the minimal quota of the Python plugin, saving the quota
// before.
func (b *Backend) Downscale(ctx context.Context, backendID string) error {
	return b.reduce(ctx, backendID, backend.StatusDownscaled, downscaledQuota)
}

func (b *Backend) reduce(ctx context.Context, backendID string, status backend.Status, quota map[string]string) error {
	return b.update(ctx, backendID, func(cr *unstructured.Unstructured) (patch, error) {
		p, err := reducePatch(cr, status, quota)
		if p != nil {
			b.log.Info("reducing ManagedNamespace quota", "name", backendID, "status", status, "quota", quota)
		}
		return p, err
	})
}

// Restore puts back the quota saved by Pause or Downscale; without one it
// does nothing.
func (b *Backend) Restore(ctx context.Context, backendID string) error {
	return b.update(ctx, backendID, func(cr *unstructured.Unstructured) (patch, error) {
		p, err := restorePatch(cr)
		if p != nil {
			b.log.Info("restoring ManagedNamespace quota", "name", backendID)
		}
		return p, err
	})
}

// update reads the managed CR, computes a patch from it and applies it; a
// conflict (the CR changed in between) starts again from the read.
func (b *Backend) update(ctx context.Context, name string, compute func(*unstructured.Unstructured) (patch, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cr, err := b.getManaged(ctx, name)
		if err != nil {
			return err
		}
		p, err := compute(cr)
		if err != nil || p == nil {
			return err
		}
		data, err := json.Marshal(p)
		if err != nil {
			return err
		}
		_, err = b.crs.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: b.fieldManager})
		return wrapAPI("patch", name, err)
	})
}

// get reads a CR; a missing one is backend.ErrNotFound.
func (b *Backend) get(ctx context.Context, op, name string) (*unstructured.Unstructured, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	cr, err := b.crs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, wrapAPI(op, name, err)
	}
	return cr, nil
}

// getManaged reads a CR that a change is about to be made to; one without
// sitebus's mark is adopted when it is the Python agent's for a resource
// of the offering, and refused otherwise (adopt).
func (b *Backend) getManaged(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	cr, err := b.get(ctx, "get", name)
	if err != nil {
		return nil, err
	}
	if !isManaged(cr) {
		return b.adopt(ctx, cr)
	}
	return cr, nil
}

func (b *Backend) notManaged(name string) error {
	return fault.Errorf(fault.NotManaged, "ManagedNamespace %s/%s exists and is not managed by sitebus; refusing to touch it",
		b.settings.CRNamespace, name)
}
