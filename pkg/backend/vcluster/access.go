package vcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/events"
)

// AccessRancher is what member sync asks Rancher (*rancher.ClusterClient).
type AccessRancher interface {
	ProjectRoleBindings(ctx context.Context, projectID string) ([]rancher.RoleBinding, error)
	ClusterRoleBindings(ctx context.Context, ref rancher.ClusterRef) ([]rancher.RoleBinding, error)
	CreateClusterRoleBinding(ctx context.Context, ref rancher.ClusterRef, b rancher.RoleBinding) (bool, error)
	DeleteClusterRoleBinding(ctx context.Context, ref rancher.ClusterRef, bindingID string) error
}

var _ AccessRancher = (*rancher.ClusterClient)(nil)

// Access keeps the role template bindings of an imported virtual cluster
// equal to its member source, as desired state: every binding the source
// wants is made (marked as sitebus's for the resource), and every binding
// with sitebus's marks for the resource that the source no longer wants
// is removed. Bindings without those marks (Rancher's creator binding,
// anyone's by hand) are never touched, even for a principal sitebus binds
// too.
type Access struct {
	Settings Settings
	Rancher  AccessRancher
	Log      *slog.Logger
	// Project reads the Rancher project a host namespace is in
	// ((*Backend).NamespaceProject), for the rancher_project source; nil
	// takes rancher_project_id.
	Project func(ctx context.Context, ns string) (string, error)
}

// RoleGroups are the resource's Keycloak groups of the waldur_team source,
// with the cluster role each grants: c_<uuid hex>_<role> under
// c_<uuid hex>, the rancher-cluster offering's names.
func (s *Settings) RoleGroups(resourceUUID string) (parent string, groups map[string]string) {
	h := events.HexUUID(resourceUUID)
	groups = map[string]string{}
	for _, role := range s.ClusterRoles() {
		groups[role] = ranchercluster.KeycloakRoleGroup(h, role)
	}
	return ranchercluster.KeycloakParentGroup(h), groups
}

// Desired are the cluster bindings the member source wants for the
// resource: one per role group (waldur_team), or one per user or group
// of the Rancher project whose role maps to a cluster role
// (rancher_project).
func (a *Access) Desired(ctx context.Context, resourceUUID, ns string) ([]rancher.RoleBinding, error) {
	var out []rancher.RoleBinding
	switch a.Settings.MemberSource {
	case MemberSourceRancherProject:
		project := a.Settings.ProjectID()
		if a.Project != nil {
			p, err := a.Project(ctx, ns)
			if err != nil {
				return nil, fmt.Errorf("the Rancher project of namespace %s: %w", ns, err)
			}
			project = p
		}
		if project == "" {
			return nil, nil // in no project: no project members to bind
		}
		prtbs, err := a.Rancher.ProjectRoleBindings(ctx, project)
		if err != nil {
			return nil, fmt.Errorf("list the bindings of Rancher project %s: %w", project, err)
		}
		for _, pb := range prtbs {
			role := a.Settings.RoleMapping[pb.RoleTemplateID]
			if role == "" {
				continue // excluded, or a role role_mapping does not name
			}
			b := rancher.RoleBinding{RoleTemplateID: role, UserID: pb.UserID, UserPrincipalID: pb.UserPrincipalID, GroupPrincipalID: pb.GroupPrincipalID}
			if !slices.ContainsFunc(out, func(o rancher.RoleBinding) bool { return o.RoleTemplateID == role && o.SameSubject(b) }) {
				out = append(out, b)
			}
		}
	default:
		_, groups := a.Settings.RoleGroups(resourceUUID)
		for _, role := range a.Settings.ClusterRoles() {
			out = append(out, rancher.RoleBinding{RoleTemplateID: role, GroupPrincipalID: rancher.GroupPrincipalID(groups[role])})
		}
	}
	return out, nil
}

// Sync applies the member source to the virtual cluster in host
// namespace ns: added and removed count the bindings made and deleted. A
// virtual cluster not imported (import_to_rancher off, Loft's skip-import,
// or not yet) has nothing to bind: no error.
func (a *Access) Sync(ctx context.Context, resourceUUID, ns string) (added, removed int, err error) {
	ref := rancher.ClusterRef{Name: ClusterName(ns), ResourceUUID: resourceUUID}
	current, err := a.Rancher.ClusterRoleBindings(ctx, ref)
	if errors.Is(err, backend.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("list the bindings of Rancher cluster %s: %w", ref, err)
	}
	desired, err := a.Desired(ctx, resourceUUID, ns)
	if err != nil {
		return 0, 0, err
	}
	var errs []error
	for _, d := range desired {
		if slices.ContainsFunc(current, func(c rancher.RoleBinding) bool { return c.RoleTemplateID == d.RoleTemplateID && c.SameSubject(d) }) {
			continue
		}
		made, err := a.Rancher.CreateClusterRoleBinding(ctx, ref, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("bind %s as %s: %w", d.Subject(), d.RoleTemplateID, err))
			continue
		}
		if made {
			added++
		}
	}
	for _, c := range current {
		if !c.OwnedBy(resourceUUID) || slices.ContainsFunc(desired, func(d rancher.RoleBinding) bool { return c.RoleTemplateID == d.RoleTemplateID && c.SameSubject(d) }) {
			continue
		}
		if err := a.Rancher.DeleteClusterRoleBinding(ctx, ref, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("unbind %s as %s: %w", c.Subject(), c.RoleTemplateID, err))
			continue
		}
		removed++
	}
	if added+removed > 0 && a.Log != nil {
		a.Log.Info("virtual cluster bindings synced", "cluster", ref.Name, "source", a.Settings.MemberSource, "added", added, "removed", removed,
			"roles", strings.Join(a.Settings.ClusterRoles(), ","))
	}
	return added, removed, errors.Join(errs...)
}
