package rancher

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// groupNameRe: a group name goes into the binding lookup's query string
// unencoded (as Python sends it), so only characters that need no
// encoding; ChildGroupName of a Waldur slug and a role id is one.
var groupNameRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func checkGroup(group string) error {
	if !groupNameRe.MatchString(group) {
		return fault.Errorf(fault.Invalid, "Keycloak group name %q cannot name a Rancher group principal", group)
	}
	return nil
}

// BindGroup binds the Keycloak group to the managed project with
// default_role (principal keycloakoidc_group://<name>), unless a binding
// is there already; created says whether this call made it. A binding
// made meanwhile (Rancher ≥ 2.14 answers 409 to a duplicate) counts as
// there. A project sitebus does not manage is refused: binding a group to
// it would grant access to someone else's workloads.
func (b *Backend) BindGroup(ctx context.Context, projectID, group string) (created bool, err error) {
	if err := checkGroup(group); err != nil {
		return false, err
	}
	p, err := b.managed(ctx, projectID)
	if err != nil {
		return false, err
	}
	role, principal := b.settings.DefaultRole, GroupPrincipalID(group)
	if bound, err := b.bound(ctx, p, group); err != nil || bound {
		return false, err
	}
	pb, err := b.api.createBinding(ctx, role, p.ID, principal)
	if errors.Is(err, ErrConflict) {
		found, err := b.api.findBindings(ctx, role, p.ID, principal)
		if err == nil && len(found) == 0 {
			return false, errConflictGone(p.ID, group)
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	b.log.Info("bound Keycloak group to Rancher project", "project", p.ID, "group", group, "role", role, "binding", pb.ID)
	return true, nil
}

// bound tells whether the group is bound to the project with
// default_role: the lookup BindGroup makes before binding.
func (b *Backend) bound(ctx context.Context, p project, group string) (bool, error) {
	found, err := b.api.findBindings(ctx, b.settings.DefaultRole, p.ID, GroupPrincipalID(group))
	return len(found) > 0, err
}

// PlanGroupBinding is BindGroup's dry run, for the drift pass: whether
// BindGroup would make the binding (missing), changing nothing. A project
// sitebus does not manage is refused (ErrNotManaged) as BindGroup refuses
// it; one that names no resource (the Python agent's, which BindGroup
// would adopt first) is compared as it is.
func (b *Backend) PlanGroupBinding(ctx context.Context, projectID, group string) (missing bool, err error) {
	if err := checkGroup(group); err != nil {
		return false, err
	}
	p, err := b.resolve(ctx, projectID)
	if err != nil {
		return false, err
	}
	if !isManaged(p) {
		return false, b.notManaged(p)
	}
	bound, err := b.bound(ctx, p, group)
	return !bound, err
}

func errConflictGone(projectID, group string) error {
	return &APIError{kind: ErrConflict, msg: "Rancher refused the binding of " + group + " to " + projectID +
		" as a duplicate but lists none; retry"}
}

// UnbindGroup deletes the group's bindings with default_role on the
// project; none, or no project, is not an error. A project sitebus does
// not manage is refused.
func (b *Backend) UnbindGroup(ctx context.Context, projectID, group string) error {
	if err := checkGroup(group); err != nil {
		return err
	}
	p, err := b.managed(ctx, projectID)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	found, err := b.api.findBindings(ctx, b.settings.DefaultRole, p.ID, GroupPrincipalID(group))
	if err != nil {
		return err
	}
	for _, pb := range found {
		if err := b.api.deleteBinding(ctx, pb.ID); err != nil {
			return err
		}
		b.log.Info("unbound Keycloak group from Rancher project", "project", p.ID, "group", group, "binding", pb.ID)
	}
	return nil
}

// GroupBindings lists the projects of this cluster the group is bound to
// with default_role. A Waldur project's child group serves every resource
// of that project, so it may go only when no project uses it any more.
func (b *Backend) GroupBindings(ctx context.Context, group string) ([]string, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	role, principal := b.settings.DefaultRole, GroupPrincipalID(group)
	all, err := b.api.findBindings(ctx, role, "", principal)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pb := range all {
		// Another cluster's binding does not count.
		if strings.HasPrefix(pb.ProjectID, b.settings.ClusterID+":") {
			out = append(out, pb.ProjectID)
		}
	}
	return out, nil
}
