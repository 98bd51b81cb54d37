package membership

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// GroupBinder is a backend that grants access by binding an
// identity-provider group to its objects (Rancher's
// projectRoleTemplateBindings). Membership binds through its own backend:
// the order service serves the same verbs to sagas, and asking it here
// would have the two services call each other.
type GroupBinder interface {
	BindGroup(ctx context.Context, backendID, group string) (created bool, err error)
	UnbindGroup(ctx context.Context, backendID, group string) error
	// GroupBindings lists the objects the group is bound to.
	GroupBindings(ctx context.Context, group string) ([]string, error)
}

func groupBinder(o Offering) (GroupBinder, error) {
	b, ok := o.Backend.(GroupBinder)
	if !ok {
		return nil, bus.Terminal(fmt.Errorf("backend %s of offering %s binds no groups", o.Backend.Type(), o.Config.Name))
	}
	return b, nil
}

// syncProjectGroups makes the child group of a Rancher project hold the
// whole teams of the live resources of its Waldur project on that cluster
// (OIDC grants access by group; roles do not split it): the group is
// named by the Waldur project and bound to every one of their projects, as
// in the Python Rancher plugin, so it holds their union (projectMembers).
// The group is read first: this resource's missing members are added
// alone, and the other resources' teams are read only when the group
// could lose a member, so a sync costs a fixed number of Waldur calls
// however many resources the project has. A team with members gets the
// groups and the binding made first, as the Python agent's add_user
// recreates them. A sync that removed the last
// member has the binding removed and, when no other project is bound to
// the child group, the child and then an empty parent deleted (the Python
// agent's cleanup of empty groups). Each step is a command to the service
// that owns it: groups to keycloak-sync; bindings through the offering's
// backend (GroupBinder).
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
	desired := Desired(team, nil, "", res.RestrictMemberAccess)
	current, missing, err := s.childMembers(ctx, o, child, key)
	if err != nil {
		return err
	}
	// Adding this resource's members never breaks the union, so the
	// siblings' teams are read only when the group could lose a member: one
	// of its members is not among this resource's (another resource may
	// still want them), or this resource wants nobody (an emptied group is
	// unbound and deleted, which only the whole union may decide). A group
	// that is missing is made with the whole union too.
	members, union := desired, len(desired) == 0 || missing
	for ref := range current {
		if !wants(desired, ref, o.UsersByID) {
			union = true
			break
		}
	}
	if union {
		if members, err = s.projectMembers(ctx, o, res, desired); err != nil {
			return err
		}
	}
	var refs []*sitebusv1.UserRef
	for _, m := range members {
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
		if _, err := contract.EnsureGroups.Call(ctx, s.calls, ensure, bus.WithKey(key+":groups")); err != nil {
			return fmt.Errorf("ensure groups of %s: %w", child.Name, err)
		}
		if !created {
			binder, err := groupBinder(o)
			if err != nil {
				return err
			}
			if _, err := binder.BindGroup(ctx, projectID, child.Name); err != nil {
				return fmt.Errorf("bind group %s to %s: %w", child.Name, projectID, err)
			}
		}
	}
	if !union {
		// Only additions: each is its own add-member, so two resources of
		// the project synced at once cannot take out each other's new
		// members, as setting the whole group from a stale read would.
		return s.addChildMembers(ctx, o, child, refs, current, key, out)
	}
	set := &sitebusv1.SetGroupMembersRequest{OfferingUuid: offering, Group: &sitebusv1.GroupRef{Name: child.Name, ParentName: child.Parent},
		Members: refs, IfExists: len(refs) == 0}
	resp, err := contract.SetGroupMembers.Call(ctx, s.calls, set, bus.WithKey(key+":child"))
	if err != nil {
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
	binder, err := groupBinder(o)
	if err != nil {
		return err
	}
	if err := binder.UnbindGroup(ctx, projectID, child.Name); err != nil {
		return fmt.Errorf("unbind group %s from %s: %w", child.Name, projectID, err)
	}
	left, err := binder.GroupBindings(ctx, child.Name)
	if err != nil {
		return fmt.Errorf("list bindings of group %s: %w", child.Name, err)
	}
	if len(left) > 0 {
		s.log.Info("group emptied but still bound to other projects; kept", "group", child.Name, "projects", len(left))
		return nil
	}
	deleted, err := contract.DeleteGroups.Call(ctx, s.calls, contract.ProjectGroupsCleanup(offering, groups), bus.WithKey(key+":cleanup"))
	if err != nil {
		return fmt.Errorf("delete emptied group %s: %w", child.Name, err)
	}
	s.log.Info("last member left: binding and emptied groups removed", "resource", res.UUID, "group", child.Name, "deleted", len(deleted.DeletedIds), "kept", len(deleted.Kept))
	return nil
}

// childMembers reads the refs the child group holds now, members and
// pending (users Keycloak does not know yet), as membership names them
// (the Keycloak user id with keycloak_use_user_id, else the username); a
// missing group holds nobody.
func (s *Service) childMembers(ctx context.Context, o Offering, child contract.GroupSpec, key string) (refs map[string]bool, missing bool, err error) {
	req := &sitebusv1.ListMembersRequest{OfferingUuid: o.Config.OfferingUUIDHex(), Group: &sitebusv1.GroupRef{Name: child.Name, ParentName: child.Parent}, IfExists: true}
	resp, err := contract.ListMembers.Call(ctx, s.calls, req, bus.WithKey(key+":members"))
	if err != nil {
		return nil, false, fmt.Errorf("list members of group %s: %w", child.Name, err)
	}
	out := map[string]bool{}
	for _, m := range resp.Members {
		if o.UsersByID {
			out[m.Id] = true
		} else {
			out[m.Username] = true
		}
	}
	for _, p := range resp.Pending {
		out[p.Ref] = true
	}
	return out, resp.Missing, nil
}

// wants says whether ref, as the group holds it, is one of members.
// Keycloak keeps usernames in lower case, whatever case Waldur's offering
// username has.
func wants(members map[string]Member, ref string, byID bool) bool {
	if _, ok := members[ref]; ok || byID {
		return ok
	}
	for r := range members {
		if strings.EqualFold(r, ref) {
			return true
		}
	}
	return false
}

// addChildMembers adds the refs the child group does not hold yet, one
// add-member each.
func (s *Service) addChildMembers(ctx context.Context, o Offering, child contract.GroupSpec, refs []*sitebusv1.UserRef, current map[string]bool, key string, out *sitebusv1.SyncResourceResponse) error {
	held := map[string]Member{}
	for ref := range current {
		held[ref] = Member{Ref: ref}
	}
	for _, ref := range refs {
		if wants(held, ref.Ref, o.UsersByID) {
			continue
		}
		req := &sitebusv1.AddMemberRequest{OfferingUuid: o.Config.OfferingUUIDHex(), Group: &sitebusv1.GroupRef{Name: child.Name, ParentName: child.Parent}, User: ref}
		resp, err := contract.AddMember.Call(ctx, s.calls, req, bus.WithKey(key+":add:"+ref.Ref))
		if err != nil {
			return fmt.Errorf("add %s to group %s: %w", ref.Ref, child.Name, err)
		}
		if resp.Pending {
			out.Pending++
		} else {
			out.Added++
		}
	}
	return nil
}

// projectMembers is the union of the desired members of the live
// resources (OK or Erred) of res's Waldur project whose child group is
// res's, in every offering of this service on the same cluster, with res
// as Waldur has it now (it may still be Creating). A resource with
// restrict_member_access adds nobody, but its siblings' users keep their
// access: setting the shared group to one resource's team would take them
// out and put them back every other sync.
func (s *Service) projectMembers(ctx context.Context, o Offering, res *waldur.Resource, desired map[string]Member) (map[string]Member, error) {
	members := maps.Clone(desired)
	if res.ProjectUUID == "" {
		return members, nil
	}
	groups := o.ProjectGroups(res.ProjectSlug)
	child := groups[len(groups)-1]
	hexes := slices.Sorted(maps.Keys(s.offerings))
	for _, hex := range hexes {
		so := s.offerings[hex]
		if so.ProjectGroups == nil {
			continue
		}
		if g := so.ProjectGroups(res.ProjectSlug); g[len(g)-1] != child {
			continue // another cluster's group
		}
		siblings, err := projectResources(ctx, so, res.ProjectUUID)
		if err != nil {
			return nil, fmt.Errorf("list the resources of project %s: %w", res.ProjectUUID, err)
		}
		for _, sib := range siblings {
			if sib.UUID == res.UUID || sib.RestrictMemberAccess || sib.ProjectUUID != res.ProjectUUID {
				continue
			}
			t, err := readTeam(ctx, so.Waldur, sib.UUID)
			if err != nil {
				return nil, fmt.Errorf("get team of resource %s: %w", sib.UUID, err)
			}
			for ref, m := range Desired(t, nil, "", false) {
				if _, ok := members[ref]; !ok {
					members[ref] = m
				}
			}
		}
	}
	return members, nil
}
