package rancher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// AnnotationResourceUUID records the Waldur resource a project was made
// for, so a project of a reused slug is not handed to another resource.
// Python's projects lack it; they are adopted as they are.
const AnnotationResourceUUID = "sitebus.io/resource-uuid"

func notFoundf(format string, args ...any) error {
	return &APIError{kind: fault.NotFound, msg: fmt.Sprintf(format, args...)}
}

// resolve finds the project a backend id names: a project id, or a
// project name (see BackendID). Of several projects with one name (Rancher
// allows it), the one sitebus manages is taken; two managed ones are
// refused rather than guessed between.
func (b *Backend) resolve(ctx context.Context, id string) (project, error) {
	if err := b.checkID(id); err != nil {
		return project{}, err
	}
	if isProjectID(id) {
		p, err := b.api.getProject(ctx, id)
		if errors.Is(err, backend.ErrNotFound) {
			return project{}, notFoundf("Rancher project %s not found", id)
		}
		return p, err
	}
	projects, err := b.api.listProjects(ctx)
	if err != nil {
		return project{}, err
	}
	return b.byName(projects, id)
}

// byName chooses among projects the one named name, as resolve does.
func (b *Backend) byName(projects []project, name string) (project, error) {
	var named, managed []project
	for _, p := range projects {
		if p.Name == name {
			named = append(named, p)
			if isManaged(p) {
				managed = append(managed, p)
			}
		}
	}
	switch {
	case len(managed) == 1:
		return managed[0], nil
	case len(managed) > 1:
		return project{}, fault.Errorf(fault.Invalid, "%d Rancher projects named %s in cluster %s are marked %s; refusing to guess which is the resource's",
			len(managed), name, b.settings.ClusterID, AnnotationManaged)
	case len(named) > 0:
		return named[0], nil
	}
	return project{}, notFoundf("Rancher project %s not found in cluster %s", name, b.settings.ClusterID)
}

// managed resolves id to a project sitebus may change; one the Python
// agent made (naming no resource) is adopted first, or refused (adopt).
func (b *Backend) managed(ctx context.Context, id string) (project, error) {
	p, err := b.resolve(ctx, id)
	if err != nil {
		return project{}, err
	}
	if !isManaged(p) {
		return project{}, b.notManaged(p)
	}
	if p.Annotations[AnnotationResourceUUID] == "" {
		return b.adopt(ctx, p)
	}
	return p, nil
}

// Create makes the project, its namespace and the namespace's quota, or
// finishes what an earlier attempt began: an existing managed project of
// the name is reused (Python does the same), a missing namespace or quota
// is added. A project of that name without the waldur/managed annotation,
// or naming no resource (the Python agent's: a create never adopts), or
// naming another resource, is refused and left untouched. Existed is set
// when all of it was there already (nothing is changed then).
func (b *Backend) Create(ctx context.Context, r backend.Resource) (backend.Created, error) {
	name, err := b.BackendID(r)
	if err != nil {
		return backend.Created{}, err
	}
	hard, err := b.quota.toHard(r.Limits)
	if err != nil {
		return backend.Created{}, err
	}
	manifest := ""
	if len(hard) > 0 {
		if manifest, err = QuotaYAML(name, hard); err != nil {
			return backend.Created{}, fault.Errorf(fault.Invalid, "Resource %s: %v", r.UUID, err)
		}
	}
	p, projectExisted, err := b.ensureProject(ctx, name, r)
	if err != nil {
		return backend.Created{}, err
	}
	nsExisted, err := b.ensureNamespace(ctx, p, name)
	if err != nil {
		return backend.Created{}, err
	}
	current, quotaExisted, err := b.quotaOf(ctx, name)
	if err != nil {
		return backend.Created{}, err
	}
	if !quotaExisted && manifest != "" {
		if err := b.api.importYAML(ctx, name, manifest); err != nil {
			return backend.Created{}, err
		}
		b.log.Info("set Rancher namespace quota", "project", p.ID, "namespace", name, "hard", hard)
	}
	existed := projectExisted && nsExisted && (quotaExisted || manifest == "")
	limits := maps.Clone(r.Limits)
	if existed {
		// What is in force, which a later update may have changed.
		if limits, err = b.quota.fromHard(current); err != nil {
			return backend.Created{}, err
		}
	}
	md, err := b.metadata(ctx, p)
	if err != nil {
		return backend.Created{}, err
	}
	return backend.Created{BackendID: p.ID, Limits: limits, Metadata: md, Existed: existed}, nil
}

// ensureProject finds the managed project of the name or creates it.
func (b *Backend) ensureProject(ctx context.Context, name string, r backend.Resource) (project, bool, error) {
	p, err := b.resolve(ctx, name)
	switch {
	case err == nil:
		if !isManaged(p) {
			return project{}, false, b.notManaged(p)
		}
		other := p.Annotations[AnnotationResourceUUID]
		if other == "" {
			// A create never adopts: the resource is new to Waldur, so a
			// project of its name that names no resource (the Python
			// agent's) was made for something else.
			return project{}, false, fault.Errorf(fault.NotManaged, "Rancher project %s (%s) exists and names no resource (the Python agent's?); "+
				"a create never adopts it, refusing to touch it", name, p.ID)
		}
		if other != r.UUID {
			return project{}, false, fault.Errorf(fault.NotManaged, "Rancher project %s (%s) belongs to resource %s, not %s; refusing to touch it",
				name, p.ID, other, r.UUID)
		}
		if p.State == "removing" {
			// Reporting it would hand Waldur a project about to vanish;
			// once it is gone, a retry creates it anew.
			return project{}, false, fmt.Errorf("rancher: project %s (%s) is being removed; retry when it is gone", name, p.ID)
		}
		return p, true, nil
	case !errors.Is(err, backend.ErrNotFound):
		return project{}, false, err
	}
	slug := r.ProjectSlug
	if slug == "" {
		slug = "unknown"
	}
	p, err = b.api.createProject(ctx, name, ProjectDescription(r), map[string]string{
		AnnotationOrganization: r.CustomerSlug,
		AnnotationManaged:      "true",
		AnnotationProjectSlug:  slug,
		AnnotationResourceUUID: r.UUID,
	})
	if errors.Is(err, ErrConflict) {
		// Made meanwhile (a site that keeps project names unique): adopt
		// it on the next attempt, after the checks above.
		return project{}, false, fmt.Errorf("rancher: project %s appeared while being created; retry: %w", name, err)
	}
	if err != nil {
		return project{}, false, err
	}
	b.log.Info("created Rancher project", "project", p.ID, "name", name, "resource", r.UUID)
	return p, false, nil
}

// ensureNamespace makes the project's namespace unless it is there; one of
// that name outside the project is refused.
func (b *Backend) ensureNamespace(ctx context.Context, p project, name string) (bool, error) {
	ns, err := b.api.getNamespace(ctx, name)
	if errors.Is(err, backend.ErrNotFound) {
		ns, err = b.api.createNamespace(ctx, p.ID, name, b.settings.NamespaceLabels)
		if errors.Is(err, ErrConflict) {
			ns, err = b.api.getNamespace(ctx, name)
		} else if err == nil {
			b.log.Info("created Rancher namespace", "project", p.ID, "namespace", name)
			return false, nil
		}
	}
	if err != nil {
		return false, err
	}
	if ns.ProjectID != p.ID {
		return false, fault.Errorf(fault.NotManaged, "namespace %s exists outside Rancher project %s (in %q); refusing to touch it",
			name, p.ID, ns.ProjectID)
	}
	if ns.State == "removing" {
		return false, fmt.Errorf("namespace %s is being removed; retry when it is gone", name)
	}
	return true, nil
}

// quotaOf reads the hard map of the namespace's custom-resource-quota.
func (b *Backend) quotaOf(ctx context.Context, ns string) (map[string]string, bool, error) {
	items, err := b.api.quotas(ctx, ns)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, q := range items {
		if q.Metadata.Name == QuotaName {
			return q.Spec.Hard, true, nil
		}
	}
	return nil, false, nil
}

// namespaceOf is the project's namespace: the one of the project's name,
// else the first (Python sets limits on the first).
func (b *Backend) namespaceOf(ctx context.Context, p project) (string, error) {
	nss, err := b.api.listNamespaces(ctx, p.ID)
	if err != nil {
		return "", err
	}
	for _, ns := range nss {
		if ns.Name == p.Name && ns.ProjectID == p.ID {
			return ns.Name, nil
		}
	}
	for _, ns := range nss {
		if ns.ProjectID == p.ID {
			return ns.Name, nil
		}
	}
	return "", nil
}

// Exists reports whether the project is there, managed or not.
func (b *Backend) Exists(ctx context.Context, backendID string) (bool, error) {
	_, err := b.resolve(ctx, backendID)
	return backend.Found(err)
}

// Delete removes a managed project; Rancher then removes its namespaces.
// An absent project is not an error.
func (b *Backend) Delete(ctx context.Context, backendID string) error {
	p, err := b.managed(ctx, backendID)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := b.api.deleteProject(ctx, p.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	b.log.Info("deleted Rancher project", "project", p.ID, "name", p.Name)
	return nil
}

// Limits reads the quota in force (reduced while paused or downscaled),
// in Waldur units; a project without namespace or quota has none.
func (b *Backend) Limits(ctx context.Context, backendID string) (map[string]float64, error) {
	p, err := b.resolve(ctx, backendID)
	if err != nil {
		return nil, err
	}
	ns, err := b.namespaceOf(ctx, p)
	if err != nil || ns == "" {
		return map[string]float64{}, err
	}
	hard, _, err := b.quotaOf(ctx, ns)
	if err != nil {
		return nil, err
	}
	return b.quota.fromHard(hard)
}

// SetLimits imports the quota of the limits into the project's namespace
// (making the namespace if it is missing), as Python does: the quota
// holds exactly the limits given. Unchanged quantities are not imported
// again. While paused or downscaled, the limits replace the saved ones
// instead: the reduced quota stays, and Restore brings the new limits.
func (b *Backend) SetLimits(ctx context.Context, backendID string, limits map[string]float64) (bool, error) {
	hard, err := b.quota.toHard(limits)
	if err != nil {
		return false, err
	}
	p, err := b.managed(ctx, backendID)
	if err != nil {
		return false, err
	}
	if statusOf(p) != backend.StatusActive {
		saved, err := savedLimits(p)
		if err != nil {
			return false, err
		}
		if kubeapi.SameHard(saved, hard) {
			return false, nil
		}
		ann := maps.Clone(p.Annotations)
		ann[AnnotationSavedLimits] = encodeHard(hard)
		if err := b.api.setProjectAnnotations(ctx, p.ID, ann); err != nil {
			return false, err
		}
		b.log.Info("saved Rancher limits for restore", "project", p.ID, "status", statusOf(p), "hard", hard)
		return true, nil
	}
	ns, current, err := b.projectQuota(ctx, p)
	if err != nil {
		return false, err
	}
	if kubeapi.SameHard(current, hard) {
		return false, nil
	}
	if err := b.apply(ctx, p, ns, hard); err != nil {
		return false, err
	}
	return true, nil
}

// projectQuota is the project's namespace (made if missing) and its quota.
func (b *Backend) projectQuota(ctx context.Context, p project) (string, map[string]string, error) {
	ns, err := b.namespaceOf(ctx, p)
	if err != nil {
		return "", nil, err
	}
	if ns == "" {
		if _, err := b.ensureNamespace(ctx, p, p.Name); err != nil {
			return "", nil, err
		}
		ns = p.Name
	}
	hard, _, err := b.quotaOf(ctx, ns)
	return ns, hard, err
}

func (b *Backend) apply(ctx context.Context, p project, ns string, hard map[string]string) error {
	if len(hard) == 0 {
		return nil
	}
	manifest, err := QuotaYAML(ns, hard)
	if err != nil {
		return fault.Errorf(fault.Invalid, "Rancher project %s: %v", p.ID, err)
	}
	if err := b.api.importYAML(ctx, ns, manifest); err != nil {
		return err
	}
	b.log.Info("set Rancher namespace quota", "project", p.ID, "namespace", ns, "hard", hard)
	return nil
}

// Values of the status operations, per component type, as the
// ManagedNamespace backend sets them (the k8s-ut-namespace plugin's zero
// and minimal quotas); GPU quotas are left as they are.
var (
	pausedValues     = map[string]float64{"cpu": 0, "ram": 0, "storage": 0}
	downscaledValues = map[string]float64{"cpu": 1, "ram": 1, "storage": 1}
)

// Pause sets a zero CPU, memory and storage quota, saving the quota before.
func (b *Backend) Pause(ctx context.Context, backendID string) error {
	return b.reduce(ctx, backendID, backend.StatusPaused, pausedValues)
}

// Downscale sets a minimal quota (1 core, 1 GiB), saving the quota before.
func (b *Backend) Downscale(ctx context.Context, backendID string) error {
	return b.reduce(ctx, backendID, backend.StatusDownscaled, downscaledValues)
}

// reduce marks the project (saving the quota in force when it is not
// reduced already, so a second Pause does not save the zero quota) and
// then imports the reduced quota. Marking first makes a retry after a
// crash in between finish the job with the right saved quota.
func (b *Backend) reduce(ctx context.Context, backendID string, status backend.Status, values map[string]float64) error {
	p, err := b.managed(ctx, backendID)
	if err != nil {
		return err
	}
	ns, current, err := b.projectQuota(ctx, p)
	if err != nil {
		return err
	}
	if statusOf(p) != status {
		ann := maps.Clone(p.Annotations)
		if ann == nil {
			ann = map[string]string{}
		}
		if statusOf(p) == backend.StatusActive {
			ann[AnnotationSavedLimits] = encodeHard(current)
		}
		ann[AnnotationStatus] = string(status)
		if err := b.api.setProjectAnnotations(ctx, p.ID, ann); err != nil {
			return err
		}
	}
	reduced := maps.Clone(current)
	for h := range current {
		k, ok := b.quota.reverse[h]
		if !ok {
			continue
		}
		if v, ok := values[b.quota.typeOf(k)]; ok {
			if reduced[h], err = FormatQuotaValue(h, v); err != nil {
				return err
			}
		}
	}
	if kubeapi.SameHard(current, reduced) {
		return nil
	}
	b.log.Info("reducing Rancher quota", "project", p.ID, "status", status)
	return b.apply(ctx, p, ns, reduced)
}

// Restore imports the quota saved by Pause or Downscale and then clears
// the marks; an active project is left as it is.
func (b *Backend) Restore(ctx context.Context, backendID string) error {
	p, err := b.managed(ctx, backendID)
	if err != nil {
		return err
	}
	if statusOf(p) == backend.StatusActive {
		return nil
	}
	saved, err := savedLimits(p)
	if err != nil {
		return err
	}
	ns, current, err := b.projectQuota(ctx, p)
	if err != nil {
		return err
	}
	if !kubeapi.SameHard(current, saved) {
		if err := b.apply(ctx, p, ns, saved); err != nil {
			return err
		}
	}
	ann := maps.Clone(p.Annotations)
	delete(ann, AnnotationStatus)
	delete(ann, AnnotationSavedLimits)
	if err := b.api.setProjectAnnotations(ctx, p.ID, ann); err != nil {
		return err
	}
	b.log.Info("restored Rancher quota", "project", p.ID)
	return nil
}

// The saved quota is the hard map itself (as the API server wrote it),
// not limits in Waldur units: "1001m" read as 1.001 cores would be
// written back as 1000m.
func encodeHard(hard map[string]string) string {
	if hard == nil {
		hard = map[string]string{}
	}
	data, _ := json.Marshal(hard) // a map of strings always encodes
	return string(data)
}

func savedLimits(p project) (map[string]string, error) {
	raw := p.Annotations[AnnotationSavedLimits]
	if raw == "" {
		return map[string]string{}, nil
	}
	var hard map[string]string
	if err := json.Unmarshal([]byte(raw), &hard); err != nil {
		return nil, fault.Errorf(fault.Invalid, "Rancher project %s: annotation %s is not a quota: %v", p.ID, AnnotationSavedLimits, err)
	}
	return hard, nil
}
