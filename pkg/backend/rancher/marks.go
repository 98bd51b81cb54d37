package rancher

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/sitebus/sitebus/pkg/backend"
)

var _ backend.MarkDrifter = (*Backend)(nil)

// MarkDrift compares the annotations Create writes on each project
// sitebus manages (waldur/managed, carrying sitebus.io/resource-uuid)
// with the resource's: waldur/organization (the customer's slug) and
// waldur/project_slug (the project's, "unknown" without one), as the
// Python rancher plugin writes them. Annotations beyond those are someone
// else's and not drift. It costs one listing of the cluster's projects
// and one of the offering's Waldur resources. A project that names no
// resource is the Python agent's (adoption, not drift, deals with it),
// and one whose resource Waldur no longer lists is left out; without a
// resource finder (operator tools) nothing is compared.
func (b *Backend) MarkDrift(ctx context.Context) (map[string][]backend.MarkDifference, error) {
	out := map[string][]backend.MarkDifference{}
	if b.resources == nil {
		return out, nil
	}
	projects, err := b.api.listProjects(ctx)
	if err != nil {
		return nil, err
	}
	byUUID, err := b.resourcesByUUID(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		r, ok := byUUID[p.Annotations[AnnotationResourceUUID]]
		if !isManaged(p) || !ok {
			continue
		}
		if d := markDiff(p, r); len(d) > 0 {
			out[p.ID] = d
		}
	}
	return out, nil
}

// RepairMarks puts the annotations MarkDrift compares back on the
// project, with the call that changes a project's annotations elsewhere
// (norman's PUT of the whole map), leaving the others as they are. A
// project sitebus does not manage is refused.
func (b *Backend) RepairMarks(ctx context.Context, backendID string) (bool, error) {
	if b.resources == nil {
		return false, nil
	}
	p, err := b.managed(ctx, backendID)
	if err != nil {
		return false, err
	}
	byUUID, err := b.resourcesByUUID(ctx)
	if err != nil {
		return false, err
	}
	r, ok := byUUID[p.Annotations[AnnotationResourceUUID]]
	if !ok || len(markDiff(p, r)) == 0 {
		return false, nil
	}
	ann := maps.Clone(p.Annotations)
	maps.Copy(ann, wantMarks(r))
	if err := b.api.setProjectAnnotations(ctx, p.ID, ann); err != nil {
		return false, err
	}
	b.log.Info("put back Rancher project annotations", "project", p.ID, "name", p.Name, "resource", r.UUID)
	return true, nil
}

func (b *Backend) resourcesByUUID(ctx context.Context) (map[string]backend.Resource, error) {
	all, err := b.resources.Resources(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]backend.Resource, len(all))
	for _, r := range all {
		out[r.UUID] = r
	}
	return out, nil
}

// wantMarks are the annotations Create (ensureProject) writes that name
// the resource's customer and project.
func wantMarks(r backend.Resource) map[string]string {
	return map[string]string{
		AnnotationOrganization: r.CustomerSlug,
		AnnotationProjectSlug:  cmp.Or(r.ProjectSlug, "unknown"),
	}
}

func markDiff(p project, r backend.Resource) []backend.MarkDifference {
	want := wantMarks(r)
	var out []backend.MarkDifference
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have := p.Annotations[k]; have != want[k] {
			out = append(out, backend.MarkDifference{Key: "annotations." + k, Want: want[k], Have: have})
		}
	}
	return out
}
