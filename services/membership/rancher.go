package membership

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/sagas"
)

// Commands this file sends to the services that own what they change.
const (
	svcKeycloak     = "keycloak-sync"
	svcOrder        = "order"
	cmdEnsureGroups = "ensure-groups"
	cmdSetMembers   = "set-group-members"
	cmdDeleteGroups = "delete-groups"
)

// syncProjectGroups makes the child group of a Rancher project hold the
// resource's whole team (OIDC grants access by group; roles do not split
// it). A team with members gets the groups and the binding made first, as
// the Python agent's add_user recreates them. A sync that removed the last
// member has the binding removed and, when no other project is bound to
// the child group, the child and then an empty parent deleted (the Python
// agent's cleanup of empty groups). Each step is a command to the service
// that owns it: bindings to order, groups to keycloak-sync.
//
// created (the team step of rancher-project-create) skips what that saga's
// earlier steps did in this run: the project lookup and the binding. The
// groups are ensured all the same: between the saga's groups and binding
// steps another resource of the same Waldur project may have lost its last
// member and, finding no project bound to the child group yet, deleted the
// groups. The binding cannot go that way (it is this project's, and
// unbinding is per project), and an event-driven sync of this resource in
// between binds again whenever the team it applies has members.
func (s *Service) syncProjectGroups(ctx context.Context, o Offering, res *waldur.Resource, team []waldur.ProjectUser, key string, created bool, out *sitebusv1.SyncResourceResponse) error {
	groups := o.ProjectGroups(res.ProjectSlug)
	child := groups[len(groups)-1]
	offering := o.Config.OfferingUUIDHex()
	var refs []*sitebusv1.UserRef
	for _, m := range Desired(team, nil, "", res.RestrictMemberAccess) {
		refs = append(refs, &sitebusv1.UserRef{Ref: m.Ref, ById: o.UsersByID})
	}
	slices.SortFunc(refs, func(a, b *sitebusv1.UserRef) int { return strings.Compare(a.Ref, b.Ref) })
	projectID := res.BackendID
	if projectID == "" {
		// During the create saga Waldur has no backend id yet; the
		// project's name finds it.
		id, err := o.Backend.BackendID(backend.Resource{UUID: res.UUID, Slug: res.Slug, CustomerSlug: res.CustomerSlug, ProjectSlug: res.ProjectSlug})
		if err != nil {
			return bus.Terminal(err)
		}
		projectID = id
	}
	// A resource without a project (another offering's id, a project gone)
	// has nothing to grant access to; the child group, shared by every
	// resource of the Waldur project, must not be changed on its account.
	if !created {
		exists, err := o.Backend.Exists(ctx, projectID)
		if err != nil {
			return fmt.Errorf("look up %s %s: %w", o.Backend.Type(), projectID, err)
		}
		if !exists {
			return nil
		}
	}
	if len(refs) > 0 {
		ensure := &sitebusv1.EnsureGroupsRequest{OfferingUuid: offering}
		for _, g := range groups {
			ensure.Groups = append(ensure.Groups, &sitebusv1.GroupSpec{Name: g.Name, Description: g.Description, ParentName: g.Parent})
		}
		if err := s.bus.Call(ctx, svcKeycloak, cmdEnsureGroups, ensure, &sitebusv1.EnsureGroupsResponse{}, bus.WithKey(key+":groups")); err != nil {
			return fmt.Errorf("ensure groups of %s: %w", child.Name, err)
		}
		if !created {
			bind := &sitebusv1.BindGroupRequest{OfferingUuid: offering, BackendId: projectID, Group: child.Name}
			if err := s.bus.Call(ctx, svcOrder, sagas.CmdBindGroup, bind, &sitebusv1.BindGroupResponse{}, bus.WithKey(key+":bind")); err != nil {
				return fmt.Errorf("bind group %s to %s: %w", child.Name, projectID, err)
			}
		}
	}
	set := &sitebusv1.SetGroupMembersRequest{OfferingUuid: offering, Group: &sitebusv1.GroupRef{Name: child.Name, ParentName: child.Parent},
		Members: refs, IfExists: len(refs) == 0}
	var resp sitebusv1.SetGroupMembersResponse
	if err := s.bus.Call(ctx, svcKeycloak, cmdSetMembers, set, &resp, bus.WithKey(key+":child")); err != nil {
		return fmt.Errorf("set members of group %s: %w", child.Name, err)
	}
	out.Added += int32(len(resp.Added))
	out.Removed += int32(len(resp.Removed))
	out.Pending += int32(len(resp.Pending))
	// Only after a removal: an empty team at create time keeps what the
	// saga made, as in the Python agent.
	if len(refs) > 0 || len(resp.Removed) == 0 {
		return nil
	}
	var unbound sitebusv1.UnbindGroupResponse
	unbind := &sitebusv1.UnbindGroupRequest{OfferingUuid: offering, BackendId: projectID, Group: child.Name}
	if err := s.bus.Call(ctx, svcOrder, sagas.CmdUnbindGroup, unbind, &unbound, bus.WithKey(key+":unbind")); err != nil {
		return fmt.Errorf("unbind group %s from %s: %w", child.Name, projectID, err)
	}
	if unbound.StillBound > 0 {
		s.log.Info("group emptied but still bound to other projects; kept", "group", child.Name, "projects", unbound.StillBound)
		return nil
	}
	var deleted sitebusv1.DeleteGroupsResponse
	if err := s.bus.Call(ctx, svcKeycloak, cmdDeleteGroups, sagas.ProjectGroupsCleanup(offering, groups), &deleted, bus.WithKey(key+":cleanup")); err != nil {
		return fmt.Errorf("delete emptied group %s: %w", child.Name, err)
	}
	s.log.Info("last member left: binding and emptied groups removed", "resource", res.UUID, "group", child.Name, "deleted", len(deleted.DeletedIds), "kept", len(deleted.Kept))
	return nil
}
