package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

// ensureGroups makes the groups that are missing, marked as this
// offering's (keycloak.OfferingAttribute) and as made by this command's key
// (keycloak.CreatedByAttribute), so that the same command tried again
// reports a group its earlier attempt made as created, and the undo of a
// saga step removes it. When one group fails, the groups this attempt made
// are deleted again before the error returns: a saga does not undo a step
// that failed (package saga), so the step must leave nothing behind.
func (s *Service) ensureGroups(ctx context.Context, req *sitebusv1.EnsureGroupsRequest) (*sitebusv1.EnsureGroupsResponse, error) {
	r, err := s.realmOf(req.GetOfferingUuid())
	if err != nil {
		return nil, err
	}
	for _, g := range req.GetGroups() {
		if g.GetName() == "" {
			return nil, invalidf("ensure-groups: a group without a name")
		}
	}
	key := ""
	if d, ok := bus.DeliveryFromContext(ctx); ok {
		key = d.Header.Get(bus.HeaderCallKey)
	}
	opts := []keycloak.GroupOption{
		keycloak.WithAttribute(keycloak.OfferingAttribute, offeringHex(req.GetOfferingUuid())),
		keycloak.WithAttribute(keycloak.CreatedByAttribute, key),
	}
	resp := &sitebusv1.EnsureGroupsResponse{}
	var made []keycloak.Group // by this attempt, to undo on failure
	undo := func(cause error) error {
		for _, g := range slices.Backward(made) {
			if err := r.client.DeleteGroup(ctx, g.ID); err != nil {
				s.log.Warn("a group made by a failed ensure-groups could not be deleted; the command's next attempt or its undo will",
					"group", g.Path, "err", err)
			}
		}
		return cause
	}
	// A parent named by name is one ensured earlier in this request, else
	// an existing top-level group: a Rancher project's group goes under
	// its cluster's group, which the same request may have just made.
	ensured := map[string]string{}
	for _, spec := range req.GetGroups() {
		parent := spec.GetParentId()
		if parent == "" && spec.GetParentName() != "" {
			id, err := resolveParent(ctx, r.client, ensured, spec.GetParentName())
			if err != nil {
				return nil, undo(err)
			}
			parent = id
		}
		g, created, err := r.client.EnsureGroup(ctx, spec.GetName(), parent, spec.GetDescription(), opts...)
		if err != nil {
			return nil, undo(err)
		}
		if created {
			made = append(made, g)
		}
		if parent == "" {
			ensured[g.Name] = g.ID
		}
		resp.Groups = append(resp.Groups, &sitebusv1.EnsuredGroup{
			Id: g.ID, Name: g.Name, ParentId: g.ParentID, Managed: g.Managed,
			Created: created || key != "" && g.CreatedBy() == key,
		})
	}
	return resp, nil
}

func resolveParent(ctx context.Context, c keycloakAPI, ensured map[string]string, name string) (string, error) {
	if id, ok := ensured[name]; ok {
		return id, nil
	}
	p, err := c.FindGroup(ctx, name, "")
	if err != nil {
		return "", err
	}
	if p == nil {
		return "", bus.Terminal(fmt.Errorf("%w: parent group %s (neither ensured before it in the request nor a top-level group)", keycloak.ErrNotFound, name))
	}
	return p.ID, nil
}

// deleteGroups checks every group before deleting any, so a request that
// names one foreign group deletes nothing.
func (s *Service) deleteGroups(ctx context.Context, req *sitebusv1.DeleteGroupsRequest) (*sitebusv1.DeleteGroupsResponse, error) {
	r, err := s.realmOf(req.GetOfferingUuid())
	if err != nil {
		return nil, err
	}
	resp := &sitebusv1.DeleteGroupsResponse{}
	var (
		found []*keycloak.Group
		keep  []bool // delete only without subgroups
	)
	for _, ref := range req.GetGroups() {
		g, err := findGroup(ctx, r.client, ref)
		if err != nil {
			return nil, err
		}
		if g == nil {
			resp.Missing = append(resp.Missing, ref)
			continue
		}
		if !g.Managed {
			return nil, bus.Terminal(fmt.Errorf("%w: group %s (%s) does not carry sitebus's managed_by mark; nothing was deleted",
				keycloak.ErrNotManaged, g.Path, g.ID))
		}
		found = append(found, g)
		keep = append(keep, ref.GetIfNoSubgroups())
	}
	for i, g := range found {
		if keep[i] {
			has, err := r.client.HasSubGroups(ctx, g.ID)
			if err != nil {
				return nil, err
			}
			if has {
				resp.Kept = append(resp.Kept, &sitebusv1.GroupRef{Id: g.ID, Name: g.Name, ParentId: g.ParentID})
				continue
			}
		}
		if err := r.client.DeleteGroup(ctx, g.ID); err != nil {
			return nil, err
		}
		resp.DeletedIds = append(resp.DeletedIds, g.ID)
		if err := s.forgetGroup(ctx, req.GetOfferingUuid(), g.ID); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// setGroupMembers applies the wanted members as desired state, so a
// command delivered twice or late converges all the same.
func (s *Service) setGroupMembers(ctx context.Context, req *sitebusv1.SetGroupMembersRequest) (*sitebusv1.SetGroupMembersResponse, error) {
	r, g, err := s.managedGroup(ctx, req.GetOfferingUuid(), req.GetGroup(), "set members of", req.GetIfExists())
	if err != nil {
		return nil, err
	}
	if g == nil {
		return &sitebusv1.SetGroupMembersResponse{Missing: true}, nil
	}
	resp := &sitebusv1.SetGroupMembersResponse{GroupId: g.ID}
	var (
		wanted  []keycloak.User
		pending []*sitebusv1.UserRef
	)
	refOf := map[string]*sitebusv1.UserRef{} // user id → the ref that found it
	for _, ref := range req.GetMembers() {
		if ref.GetRef() == "" {
			return nil, invalidf("set-group-members: a member without id or username")
		}
		u, err := r.client.FindUser(ctx, ref.GetRef(), ref.GetById())
		if err != nil {
			return nil, err
		}
		if u == nil {
			pending = append(pending, ref)
			continue
		}
		wanted = append(wanted, *u)
		refOf[u.ID] = ref
	}
	current, err := r.client.Members(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	add, remove := MemberChanges(current, wanted)
	for _, m := range remove {
		if err := r.client.RemoveMember(ctx, g.ID, m.ID); err != nil {
			return nil, err
		}
		resp.Removed = append(resp.Removed, member(m))
	}
	for _, u := range add {
		err := r.client.AddMember(ctx, g.ID, u.ID)
		if errors.Is(err, keycloak.ErrNotFound) {
			pending = append(pending, refOf[u.ID]) // deleted in between
			continue
		}
		if err != nil {
			return nil, err
		}
		resp.Added = append(resp.Added, member(u))
	}
	if err := s.setPending(ctx, req.GetOfferingUuid(), *g, pending); err != nil {
		return nil, err
	}
	resp.Pending = pending
	return resp, nil
}

func (s *Service) addMember(ctx context.Context, req *sitebusv1.AddMemberRequest) (*sitebusv1.AddMemberResponse, error) {
	r, err := s.realmOf(req.GetOfferingUuid())
	if err != nil {
		return nil, err
	}
	ref := req.GetUser()
	if ref.GetRef() == "" {
		return nil, invalidf("add-member: no user")
	}
	g, err := findGroup(ctx, r.client, req.GetGroup())
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, bus.Terminal(fmt.Errorf("%w: group %s", keycloak.ErrNotFound, describe(req.GetGroup())))
	}
	resp := &sitebusv1.AddMemberResponse{GroupId: g.ID}
	u, err := r.client.FindUser(ctx, ref.GetRef(), ref.GetById())
	if err != nil {
		return nil, err
	}
	if u != nil {
		err = r.client.AddMember(ctx, g.ID, u.ID)
		if err == nil {
			resp.UserId = u.ID
			return resp, s.dropPending(ctx, req.GetOfferingUuid(), g.ID, ref.GetRef())
		}
		if !errors.Is(err, keycloak.ErrNotFound) {
			return nil, err
		}
	}
	resp.Pending = true
	return resp, s.putPending(ctx, req.GetOfferingUuid(), *g, ref)
}

func (s *Service) removeMember(ctx context.Context, req *sitebusv1.RemoveMemberRequest) (*sitebusv1.RemoveMemberResponse, error) {
	r, err := s.realmOf(req.GetOfferingUuid())
	if err != nil {
		return nil, err
	}
	ref := req.GetUser()
	if ref.GetRef() == "" {
		return nil, invalidf("remove-member: no user")
	}
	g, err := findGroup(ctx, r.client, req.GetGroup())
	if err != nil || g == nil {
		return &sitebusv1.RemoveMemberResponse{}, err // no group: not a member
	}
	if !g.Managed {
		return nil, bus.Terminal(fmt.Errorf("%w: group %s (%s) is not managed by sitebus: its members are not ours to remove",
			keycloak.ErrNotManaged, g.Path, g.ID))
	}
	resp := &sitebusv1.RemoveMemberResponse{GroupId: g.ID}
	wasPending, err := s.hasPending(ctx, req.GetOfferingUuid(), g.ID, ref.GetRef())
	if err != nil {
		return nil, err
	}
	if err := s.dropPending(ctx, req.GetOfferingUuid(), g.ID, ref.GetRef()); err != nil {
		return nil, err
	}
	resp.Removed = wasPending
	u, err := r.client.FindUser(ctx, ref.GetRef(), ref.GetById())
	if err != nil || u == nil {
		return resp, err
	}
	members, err := r.client.Members(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.ID == u.ID {
			if err := r.client.RemoveMember(ctx, g.ID, u.ID); err != nil {
				return nil, err
			}
			resp.Removed = true
		}
	}
	return resp, nil
}

func (s *Service) listMembers(ctx context.Context, req *sitebusv1.ListMembersRequest) (*sitebusv1.ListMembersResponse, error) {
	r, err := s.realmOf(req.GetOfferingUuid())
	if err != nil {
		return nil, err
	}
	g, err := findGroup(ctx, r.client, req.GetGroup())
	if err != nil {
		return nil, err
	}
	if g == nil && req.GetIfExists() {
		return &sitebusv1.ListMembersResponse{Missing: true}, nil
	}
	if g == nil {
		return nil, bus.Terminal(fmt.Errorf("%w: group %s", keycloak.ErrNotFound, describe(req.GetGroup())))
	}
	members, err := r.client.Members(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	resp := &sitebusv1.ListMembersResponse{GroupId: g.ID}
	for _, m := range members {
		resp.Members = append(resp.Members, member(m))
	}
	entries, err := s.pendingOf(ctx, req.GetOfferingUuid(), g.ID)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		resp.Pending = append(resp.Pending, &sitebusv1.UserRef{Ref: e.Ref, ById: e.ByID})
	}
	return resp, nil
}

// managedGroup resolves a group whose members sitebus owns; a missing
// group is (nil, nil) when missingOK, else a terminal error.
func (s *Service) managedGroup(ctx context.Context, offering string, ref *sitebusv1.GroupRef, what string, missingOK bool) (*realm, *keycloak.Group, error) {
	r, err := s.realmOf(offering)
	if err != nil {
		return nil, nil, err
	}
	g, err := findGroup(ctx, r.client, ref)
	if err != nil {
		return nil, nil, err
	}
	if g == nil && missingOK {
		return r, nil, nil
	}
	if g == nil {
		return nil, nil, bus.Terminal(fmt.Errorf("%s group %s: %w", what, describe(ref), keycloak.ErrNotFound))
	}
	if !g.Managed {
		return nil, nil, bus.Terminal(fmt.Errorf("%s group %s (%s): %w: it does not carry sitebus's managed_by mark",
			what, g.Path, g.ID, keycloak.ErrNotManaged))
	}
	return r, g, nil
}

// findGroup resolves a GroupRef by id, else by name under its parent; nil
// when there is no such group.
func findGroup(ctx context.Context, c keycloakAPI, ref *sitebusv1.GroupRef) (*keycloak.Group, error) {
	switch {
	case ref.GetId() != "":
		return c.GetGroup(ctx, ref.GetId())
	case ref.GetName() != "" && ref.GetParentId() == "" && ref.GetParentName() != "":
		parent, err := c.FindGroup(ctx, ref.GetParentName(), "")
		if err != nil || parent == nil {
			return nil, err // no parent: no such group
		}
		return c.FindGroup(ctx, ref.GetName(), parent.ID)
	case ref.GetName() != "":
		return c.FindGroup(ctx, ref.GetName(), ref.GetParentId())
	}
	return nil, invalidf("a group reference needs an id or a name")
}

func describe(ref *sitebusv1.GroupRef) string {
	if ref.GetId() != "" {
		return ref.GetId()
	}
	if ref.GetParentId() != "" {
		return strings.Join([]string{ref.GetName(), "under", ref.GetParentId()}, " ")
	}
	if ref.GetParentName() != "" {
		return ref.GetParentName() + "/" + ref.GetName()
	}
	return ref.GetName()
}

func member(u keycloak.User) *sitebusv1.Member {
	return &sitebusv1.Member{Id: u.ID, Username: u.Username}
}

// MemberChanges is what setting a group's members to wanted does to its
// current members: the users to add (wanted, not members; each once) and
// to remove (members, not wanted), by Keycloak user id, in the order
// given. set-group-members applies exactly these; sitebus migrate shows
// them.
func MemberChanges(current, wanted []keycloak.User) (add, remove []keycloak.User) {
	want := map[string]bool{}
	for _, u := range wanted {
		want[u.ID] = true
	}
	have := map[string]bool{}
	for _, m := range current {
		have[m.ID] = true
		if !want[m.ID] {
			remove = append(remove, m)
		}
	}
	for _, u := range wanted {
		if have[u.ID] {
			continue
		}
		have[u.ID] = true
		add = append(add, u)
	}
	return add, remove
}
