package managedns

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// adopt is what every change (SetLimits, Pause, Downscale, Restore,
// SetUsers, Delete) does with a CR without sitebus's mark: it marks the CR
// as sitebus's when it is the Python agent's for a Waldur resource of the
// offering (decideAdoption), and refuses it otherwise. Without a resource
// finder (operator tools) it refuses every unmarked CR.
func (b *Backend) adopt(ctx context.Context, cr *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	name := cr.GetName()
	if b.resources == nil {
		return nil, b.notManaged(name)
	}
	d, err := b.decide(ctx, cr)
	if err != nil {
		return nil, err
	}
	if !d.Adopt {
		b.adoptions.WithLabelValues(Type, backend.AdoptionRefused).Inc()
		return nil, fault.Errorf(fault.NotManaged,
			"ManagedNamespace %s/%s exists and is not managed by sitebus, and it is not the Python agent's for a resource of this offering (%s); refusing to touch it",
			b.settings.CRNamespace, name, d.Reason)
	}
	// The mark and the resource in one patch, conditional on the version
	// read: a CR changed meanwhile is read and judged again.
	data, err := json.Marshal(patch{"metadata": map[string]any{
		"resourceVersion": cr.GetResourceVersion(),
		"labels":          map[string]any{LabelManagedBy: ManagedByValue},
		"annotations":     map[string]any{AnnotationResourceUUID: d.Resource.UUID},
	}})
	if err != nil {
		return nil, err
	}
	out, err := b.crs.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: b.fieldManager})
	if err != nil {
		return nil, wrapAPI("adopt", name, err)
	}
	b.adoptions.WithLabelValues(Type, backend.AdoptionAdopted).Inc()
	b.log.Info("adopted the Python agent's ManagedNamespace", "name", name, "resource", d.Resource.UUID, "proof", d.Proof)
	return out, nil
}

var _ backend.Adopter = (*Backend)(nil)

// decide finds the resources that name cr and decides (decideAdoption).
func (b *Backend) decide(ctx context.Context, cr *unstructured.Unstructured) (backend.Adoption, error) {
	claimants, err := backend.Claimants(ctx, b.resources, cr.GetName(), b.BackendID)
	if err != nil {
		return backend.Adoption{}, err
	}
	return decideAdoption(cr, claimants), nil
}

// PlanAdoption tells what the first change for backendID would do with
// its CR (backend.Adopter), without changing it.
func (b *Backend) PlanAdoption(ctx context.Context, backendID string) (backend.PlannedAdoption, error) {
	cr, err := b.get(ctx, "get", backendID)
	return backend.PlanObject(backendID, err, func() bool { return isManaged(cr) }, b.resources != nil,
		func() (backend.Adoption, error) { return b.decide(ctx, cr) })
}

// Adopt adopts the CR of backendID as the first change for it would
// (backend.Adopter): a CR of sitebus's is left as it is, a refused one
// errs ErrNotManaged.
func (b *Backend) Adopt(ctx context.Context, backendID string) error {
	_, err := b.getManaged(ctx, backendID)
	return err
}

// decideAdoption tells whether an unmarked CR is the Python agent's for
// the one Waldur resource that names it (claimants). The plugin writes
// spec.name = the CR's name and, when it knows them, spec.owner.orgID and
// spec.owner.projectID = the resource's customer and project UUIDs
// (dashed, as Python's str(uuid) prints them); a CR that says otherwise,
// or that another tool marked as its own, is not the resource's.
func decideAdoption(cr *unstructured.Unstructured, claimants []backend.Resource) backend.Adoption {
	name := cr.GetName()
	if by, ok := cr.GetLabels()[LabelManagedBy]; ok && by != ManagedByValue {
		return backend.Refuse("it is marked %s=%s", LabelManagedBy, by)
	}
	r, refusal, ok := backend.OneClaimant(claimants)
	if !ok {
		return refusal
	}
	if other := cr.GetAnnotations()[AnnotationResourceUUID]; other != "" && normalizeUUID(other) != normalizeUUID(r.UUID) {
		return backend.Refuse("its %s is resource %s, not %s", AnnotationResourceUUID, other, r.UUID)
	}
	if n, found, _ := unstructured.NestedFieldNoCopy(cr.Object, "spec", "name"); found && n != name {
		return backend.Refuse("its spec.name is %v, not %s", n, name)
	}
	proof := fmt.Sprintf("resource %s names it", r.UUID)
	owner, _, _ := unstructured.NestedFieldNoCopy(cr.Object, "spec", "owner")
	switch o := owner.(type) {
	case nil:
		return backend.Adoption{Adopt: true, Resource: r, Proof: proof + "; it has no spec.owner"}
	case map[string]any:
		for _, f := range []struct{ field, what, want string }{
			{"orgID", "customer", r.CustomerUUID},
			{"projectID", "project", r.ProjectUUID},
		} {
			v, present := o[f.field]
			if !present {
				continue
			}
			s, isString := v.(string)
			if !isString || f.want == "" || normalizeUUID(s) != normalizeUUID(f.want) {
				return backend.Refuse("its spec.owner.%s is %v, but the resource's %s is %q", f.field, v, f.what, f.want)
			}
			proof += fmt.Sprintf("; spec.owner.%s is its %s", f.field, f.what)
		}
		return backend.Adoption{Adopt: true, Resource: r, Proof: proof}
	}
	return backend.Refuse("its spec.owner is %v, not an object", owner)
}
