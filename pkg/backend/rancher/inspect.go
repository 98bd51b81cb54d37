package rancher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Metadata is what the Python plugin posts to set_backend_metadata:
// {name, organization, description, quotas, users}, where quotas are the
// project's own resourceQuota limits (which neither agent sets) and users
// the user ids of the project's role bindings.
func (b *Backend) Metadata(ctx context.Context, backendID string) (map[string]any, error) {
	p, err := b.resolve(ctx, backendID)
	if err != nil {
		return nil, err
	}
	return b.metadata(ctx, p)
}

func (b *Backend) metadata(ctx context.Context, p project) (map[string]any, error) {
	bindings, err := b.api.projectBindings(ctx, p.ID)
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return nil, err
	}
	users := []any{}
	seen := map[string]bool{}
	for _, pb := range bindings {
		if pb.UserID != "" && !seen[pb.UserID] {
			seen[pb.UserID] = true
			users = append(users, pb.UserID)
		}
	}
	return map[string]any{
		"name":         p.Name,
		"organization": p.Annotations[AnnotationOrganization],
		"description":  p.Description,
		"quotas":       projectQuotas(p),
		"users":        users,
	}, nil
}

// projectQuotas reads resourceQuota.limit as Python's get_project_quotas:
// limitsCpu "2000m" is 2 cores, limitsMemory "2048Mi" is 2 (GiB).
func projectQuotas(p project) map[string]any {
	out := map[string]any{}
	if p.ResourceQuota == nil {
		return out
	}
	if s, ok := p.ResourceQuota.Limit["limitsCpu"].(string); ok {
		if n, milli := strings.CutSuffix(s, "m"); milli {
			if v, err := strconv.Atoi(n); err == nil {
				out["cpu"] = float64(v) / 1000
			}
		} else if v, err := strconv.Atoi(s); err == nil {
			out["cpu"] = float64(v)
		}
	}
	if s, ok := p.ResourceQuota.Limit["limitsMemory"].(string); ok {
		switch {
		case strings.HasSuffix(s, "Mi"):
			if v, err := strconv.Atoi(strings.TrimSuffix(s, "Mi")); err == nil {
				out["memory"] = float64(v) / 1024
			}
		case strings.HasSuffix(s, "Gi"):
			if v, err := strconv.Atoi(strings.TrimSuffix(s, "Gi")); err == nil {
				out["memory"] = float64(v)
			}
		default:
			if v, err := strconv.Atoi(s); err == nil {
				out["memory"] = float64(v)
			}
		}
	}
	return out
}

// pick finds a backend id in a project list as resolve does (by id, or
// by name with byName's choice); an ambiguous name is not found.
func (b *Backend) pick(projects []project, id string) (project, bool) {
	for _, p := range projects {
		if p.ID == id {
			return p, true
		}
	}
	p, err := b.byName(projects, id)
	return p, err == nil
}

// List returns the managed projects of the cluster whose names have the
// prefix (as Python lists them), by project id.
func (b *Backend) List(ctx context.Context) ([]backend.Object, error) {
	projects, err := b.api.listProjects(ctx)
	if err != nil {
		return nil, err
	}
	var out []backend.Object
	for _, p := range projects {
		if isManaged(p) && strings.HasPrefix(p.Name, b.settings.ProjectPrefix) && p.ClusterID == b.settings.ClusterID {
			out = append(out, backend.Object{BackendID: p.ID, Status: statusOf(p)})
		}
	}
	slices.SortFunc(out, func(a, b backend.Object) int { return strings.Compare(a.BackendID, b.BackendID) })
	return out, nil
}

// Ping reads the cluster, as Python does: it must answer with its id.
func (b *Backend) Ping(ctx context.Context) error {
	c, err := b.api.getCluster(ctx)
	if err != nil {
		return err
	}
	if id, _ := c["id"].(string); id != b.settings.ClusterID {
		return fmt.Errorf("Rancher answered for cluster %q, not %q", id, b.settings.ClusterID) //nolint:staticcheck // names the platform
	}
	return nil
}

// Diagnostics describes the settings in force, the cluster and how many
// projects sitebus manages there. It fails only when Rancher does not
// answer; the secret key is not in it.
func (b *Backend) Diagnostics(ctx context.Context) (map[string]any, error) {
	s := b.settings
	d := map[string]any{
		"backend_type":     Type,
		"backend_url":      s.BackendURL,
		"access_key":       s.Username,
		"verify_cert":      s.VerifyCert,
		"cluster_id":       s.ClusterID,
		"project_prefix":   s.ProjectPrefix,
		"default_role":     s.DefaultRole,
		"keycloak_enabled": s.KeycloakEnabled,
		"namespace_labels": s.NamespaceLabels,
		"quota_mapping":    b.quota.forward,
	}
	c, err := b.api.getCluster(ctx)
	if err != nil {
		return d, err
	}
	d["cluster_name"], d["cluster_state"] = c["name"], c["state"]
	if objs, err := b.List(ctx); err != nil {
		d["list_error"] = err.Error()
	} else {
		d["managed_projects"] = len(objs)
	}
	return d, nil
}
