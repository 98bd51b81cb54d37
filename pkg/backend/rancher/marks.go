package rancher

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
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
//
// The namespace Create makes in each such project (the one of the
// project's name) is compared too, keyed NamespaceObject(name): the
// pod-security labels, namespace_labels and the waldur/managed annotation
// createNamespace writes. That costs one listing of the cluster's
// namespaces. A namespace of another name, or in a project sitebus does
// not manage, is someone else's and never compared.
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
	nss, err := b.api.allNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]namespace, len(nss))
	for _, ns := range nss {
		byName[ns.Name] = ns
	}
	for _, p := range projects {
		r, ok := byUUID[p.Annotations[AnnotationResourceUUID]]
		if !isManaged(p) || !ok {
			continue
		}
		if d := markDiff(p, r); len(d) > 0 {
			out[p.ID] = d
		}
		if ns, ok := byName[p.Name]; ok && ns.ProjectID == p.ID && ns.State != "removing" {
			if d := b.namespaceMarkDiff(ns); len(d) > 0 {
				out[NamespaceObject(ns.Name)] = d
			}
		}
	}
	return out, nil
}

// namespaceObjectPrefix starts the drift object of a project's namespace;
// a project id (c-xxx:p-yyy) or name never has a '/'.
const namespaceObjectPrefix = "namespaces/"

// NamespaceObject is how MarkDrift names a project's namespace.
func NamespaceObject(name string) string { return namespaceObjectPrefix + name }

// namespaceMarkDiff compares the labels and annotations createNamespace
// writes with the namespace's; others are someone else's.
func (b *Backend) namespaceMarkDiff(ns namespace) []backend.MarkDifference {
	var out []backend.MarkDifference
	for _, m := range []struct {
		field      string
		want, have map[string]string
	}{{"labels", namespaceLabels(b.settings.NamespaceLabels), ns.Labels}, {"annotations", namespaceAnnotations(), ns.Annotations}} {
		for _, k := range slices.Sorted(maps.Keys(m.want)) {
			if have := m.have[k]; have != m.want[k] {
				out = append(out, backend.MarkDifference{Key: m.field + "." + k, Want: m.want[k], Have: have})
			}
		}
	}
	return out
}

// repairNamespaceMarks puts back the labels and annotations
// namespaceMarkDiff compares, leaving the others as they are, on the
// namespace of a project sitebus manages whose resource Waldur lists.
func (b *Backend) repairNamespaceMarks(ctx context.Context, name string) (bool, error) {
	ns, err := b.api.getNamespace(ctx, name)
	if err != nil {
		return false, err
	}
	if ns.ProjectID == "" {
		return false, fault.Errorf(fault.NotManaged, "namespace %s is in no Rancher project; refusing to touch it", name)
	}
	// Not b.managed: a repair never adopts a project.
	p, err := b.resolve(ctx, ns.ProjectID)
	if err != nil {
		return false, err
	}
	if !isManaged(p) || p.Annotations[AnnotationResourceUUID] == "" {
		return false, b.notManaged(p)
	}
	if p.Name != ns.Name {
		return false, fault.Errorf(fault.NotManaged, "namespace %s is not the one sitebus made in project %s (%s); refusing to touch it", name, p.ID, p.Name)
	}
	if len(b.namespaceMarkDiff(ns)) == 0 {
		return false, nil
	}
	labels, ann := maps.Clone(ns.Labels), maps.Clone(ns.Annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	if ann == nil {
		ann = map[string]string{}
	}
	maps.Copy(labels, namespaceLabels(b.settings.NamespaceLabels))
	maps.Copy(ann, namespaceAnnotations())
	if err := b.api.setNamespaceMarks(ctx, name, labels, ann); err != nil {
		return false, err
	}
	b.log.Info("put back Rancher namespace labels and annotations", "project", p.ID, "namespace", name)
	return true, nil
}

// RepairMarks puts the annotations MarkDrift compares back on the
// project, with the call that changes a project's annotations elsewhere
// (norman's PUT of the whole map), leaving the others as they are. A
// project sitebus does not manage is refused.
func (b *Backend) RepairMarks(ctx context.Context, backendID string) (bool, error) {
	if b.resources == nil {
		return false, nil
	}
	if name, ok := strings.CutPrefix(backendID, namespaceObjectPrefix); ok {
		return b.repairNamespaceMarks(ctx, name)
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
