package rancher

import (
	"cmp"
	"context"
	"errors"
	"maps"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// adopt is what every change (SetLimits, Pause, Downscale, Restore, the
// group bindings, Delete) does with a project the Python agent made: it
// carries the waldur/managed mark both agents write, but names no
// resource (AnnotationResourceUUID). It records the project as the
// resource's (the annotation, a log line and sitebus_adoptions_total)
// when it is the Python agent's for a Waldur resource of the offering
// (decideAdoption), and refuses it otherwise. Without a resource finder
// (operator tools) the project is taken as it is, as before adoption had
// proof.
func (b *Backend) adopt(ctx context.Context, p project) (project, error) {
	if b.resources == nil {
		return p, nil
	}
	d, err := b.decide(ctx, p)
	if err != nil {
		return project{}, err
	}
	if !d.Adopt {
		b.adoptions.WithLabelValues(Type, backend.AdoptionRefused).Inc()
		return project{}, fault.Errorf(fault.NotManaged,
			"Rancher project %s (%s) names no resource, and it is not the Python agent's for a resource of this offering (%s); refusing to touch it",
			p.Name, p.ID, d.Reason)
	}
	ann := maps.Clone(p.Annotations)
	ann[AnnotationResourceUUID] = d.Resource.UUID
	if err := b.api.setProjectAnnotations(ctx, p.ID, ann); err != nil {
		return project{}, err
	}
	p.Annotations = ann
	b.adoptions.WithLabelValues(Type, backend.AdoptionAdopted).Inc()
	b.log.Info("adopted the Python agent's Rancher project", "project", p.ID, "name", p.Name, "resource", d.Resource.UUID, "proof", d.Proof)
	return p, nil
}

var _ backend.Adopter = (*Backend)(nil)

// decide finds the resources that name p and decides (decideAdoption).
func (b *Backend) decide(ctx context.Context, p project) (backend.Adoption, error) {
	// Waldur holds the project id (Python's backend_id, and sitebus's);
	// a resource without one names the project by the name it computes.
	claimants, err := backend.Claimants(ctx, b.resources, p.ID, func(r backend.Resource) (string, error) {
		name, err := b.BackendID(r)
		if err != nil || name != p.Name {
			return "", err
		}
		return p.ID, nil
	})
	if err != nil {
		return backend.Adoption{}, err
	}
	return decideAdoption(p, claimants), nil
}

// PlanAdoption tells what the first change for backendID (a project id or
// name) would do with its project (backend.Adopter), without changing it.
func (b *Backend) PlanAdoption(ctx context.Context, backendID string) (backend.PlannedAdoption, error) {
	p, err := b.resolve(ctx, backendID)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return backend.PlannedAdoption{Object: backendID, Action: backend.PlanAbsent}, nil
	case err != nil:
		return backend.PlannedAdoption{}, err
	}
	object := p.Name + " (" + p.ID + ")"
	switch {
	case !isManaged(p):
		return backend.PlannedAdoption{Object: object, Action: backend.PlanRefuse,
			Reason: "it has no " + AnnotationManaged + ": \"true\" annotation"}, nil
	case p.Annotations[AnnotationResourceUUID] != "":
		return backend.PlannedAdoption{Object: object, Action: backend.PlanManaged}, nil
	case b.resources == nil:
		// Without proof a project is taken as it is (adopt).
		return backend.PlannedAdoption{Object: object, Action: backend.PlanManaged}, nil
	}
	d, err := b.decide(ctx, p)
	if err != nil {
		return backend.PlannedAdoption{}, err
	}
	return backend.Planned(object, d), nil
}

// Adopt adopts the project of backendID as the first change for it would
// (backend.Adopter): a project naming its resource is left as it is, a
// refused one errs ErrNotManaged.
func (b *Backend) Adopt(ctx context.Context, backendID string) error {
	_, err := b.managed(ctx, backendID)
	return err
}

// decideAdoption tells whether a project marked waldur/managed that names
// no resource is the Python agent's for the one Waldur resource that
// names it (claimants): the plugin writes waldur/organization = the
// customer's slug and waldur/project_slug = the project's slug ("unknown"
// without one).
func decideAdoption(p project, claimants []backend.Resource) backend.Adoption {
	if !isManaged(p) {
		return backend.Refuse("it has no %s: \"true\" annotation", AnnotationManaged)
	}
	r, refusal, ok := backend.OneClaimant(claimants)
	if !ok {
		return refusal
	}
	if other := p.Annotations[AnnotationResourceUUID]; other != "" && other != r.UUID {
		return backend.Refuse("its %s is resource %s, not %s", AnnotationResourceUUID, other, r.UUID)
	}
	if org, ok := p.Annotations[AnnotationOrganization]; ok && org != r.CustomerSlug {
		return backend.Refuse("its %s is %q, but the resource's customer is %q", AnnotationOrganization, org, r.CustomerSlug)
	}
	want := cmp.Or(r.ProjectSlug, "unknown")
	if slug, ok := p.Annotations[AnnotationProjectSlug]; ok && slug != want {
		return backend.Refuse("its %s is %q, but the resource's project is %q", AnnotationProjectSlug, slug, want)
	}
	return backend.Adoption{Adopt: true, Resource: r,
		Proof: "resource " + r.UUID + " names it; " + AnnotationManaged + " is \"true\" and its organization and project slug are the resource's"}
}
