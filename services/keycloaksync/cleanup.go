package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// GroupName is a group a live resource uses: Name under the top-level
// group Parent ("" for a top-level group).
type GroupName struct {
	Name, Parent string
	// Subtree says every group under this one is the resource's too
	// (a rancher-cluster's role groups under its cluster group).
	Subtree bool
}

func (g GroupName) path() string {
	if g.Parent == "" {
		return "/" + escapeName(g.Name)
	}
	return "/" + escapeName(g.Parent) + "/" + escapeName(g.Name)
}

// escapeName is how Keycloak writes a "/" of a name into a group's path.
func escapeName(n string) string { return strings.ReplaceAll(n, "/", "~/") }

// nsRoles are the role suffixes of a ManagedNamespace's groups,
// ns_<slug>_<role> (the Python ManagedNamespace plugin's names).
var nsRoles = []string{"admin", "readwrite", "readonly"}

// nsSlug returns the resource slug of a ManagedNamespace group name.
func nsSlug(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "ns_")
	if !ok {
		return "", false
	}
	for _, role := range nsRoles {
		if slug, ok := strings.CutSuffix(rest, "_"+role); ok && slug != "" {
			return slug, true
		}
	}
	return "", false
}

// sitebusName reports whether a group's path is one of the names sitebus
// gives groups: a ManagedNamespace's top-level ns_<slug>_<role>, a
// cluster's top-level c_… (Rancher's c_<cluster id>, rancher-cluster's
// c_<uuid hex>), and under a c_ group a Rancher project's project_… or a
// cluster role group c_<uuid hex>_<role>. The cleanup deletes no other
// group, even one of its offerings: a name it does not know may be one a
// newer sitebus uses for a live resource.
func sitebusName(path string) bool {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch len(parts) {
	case 1:
		_, ns := nsSlug(parts[0])
		return ns || strings.HasPrefix(parts[0], "c_")
	case 2:
		parent, name := parts[0], parts[1]
		return strings.HasPrefix(parent, "c_") && (strings.HasPrefix(name, "project_") || strings.HasPrefix(name, parent+"_"))
	}
	return false
}

// nsNames are a ManagedNamespace resource's groups, the names of an
// offering without Names.
func nsNames(r waldur.Resource) []GroupName {
	out := make([]GroupName, 0, len(nsRoles))
	for _, role := range nsRoles {
		out = append(out, GroupName{Name: "ns_" + r.Slug + "_" + role})
	}
	return out
}

// removeLeftovers runs the leftover cleanup once in each realm.
func (s *Service) removeLeftovers(ctx context.Context) {
	for _, r := range s.realms {
		if ctx.Err() != nil {
			return
		}
		if s.removeRealmLeftovers(ctx, r) {
			s.metrics.cleanups.WithLabelValues("done").Inc()
		} else {
			s.metrics.cleanups.WithLabelValues("skipped").Inc()
		}
	}
}

// removeRealmLeftovers deletes the groups of one realm that this
// deployment made for resources that are gone. Several deployments (and
// the Python agent) may share a realm, so it is conservative:
//
//   - It decides only after listing the resources of every offering of
//     this config that uses the realm; one listing that fails, or no
//     resource listed at all (a Waldur answering with nothing is more
//     likely misconfigured than empty), and nothing is deleted this pass.
//   - It considers only groups whose keycloak.OfferingAttribute names an
//     offering of this config: another deployment's groups are never
//     deleted.
//   - A marked group without the attribute (made by the Python agent or by
//     a sitebus older than the attribute) is never deleted; when a live
//     resource of this config names it, it is adopted (given that
//     resource's offering), and from then on is this deployment's.
//   - A group of ours goes when its name is one sitebus gives
//     (sitebusName), no live resource (any state but Terminated) names
//     it, its offering's platform binds it to nothing
//     (a Rancher child group another project still uses stays), and it has
//     no subgroup left (children go first, in the same pass).
//
// It reports whether the pass got as far as looking at the groups.
func (s *Service) removeRealmLeftovers(ctx context.Context, r *realm) bool {
	_, skipped := s.cleanRealm(ctx, r, true)
	return skipped == nil
}

// GroupCleanup is one change the leftover cleanup makes to a group.
type GroupCleanup struct {
	Realm string `json:"realm"`
	// Group is the group's path.
	Group string `json:"group"`
	// Action is adopt (the group is given Offering) or delete (a group of
	// Offering that no live resource names).
	Action   string `json:"action"`
	Offering string `json:"offering"`
}

// Actions of a GroupCleanup.
const (
	CleanupAdopt  = "adopt"
	CleanupDelete = "delete"
)

// PlanCleanup is the dry run of the leftover cleanup: in every realm, the
// groups it would adopt and delete, decided by the very walk the cleanup
// makes (cleanRealm), without a change to Keycloak. A realm the cleanup
// would skip is an error naming why (nothing would be deleted there).
func (s *Service) PlanCleanup(ctx context.Context) ([]GroupCleanup, error) {
	var (
		out  []GroupCleanup
		errs []error
	)
	for _, r := range s.realms {
		plan, skipped := s.cleanRealm(ctx, r, false)
		if skipped != nil {
			errs = append(errs, fmt.Errorf("realm %s: the cleanup would skip it: %w", r.client.Realm(), skipped))
		}
		out = append(out, plan...)
	}
	return out, errors.Join(errs...)
}

// cleanRealm walks one realm's groups as removeRealmLeftovers says and,
// when apply, makes the changes; either way it returns them. skipped is
// why it did not get as far as the groups. Without apply nothing is
// deleted, so a group whose subgroups are all planned for deletion is
// taken as one without subgroups left (as it will be when the pass, which
// deletes children first, reaches it; a subgroup without the managed_by
// mark, which the pass never deletes, keeps it there).
func (s *Service) cleanRealm(ctx context.Context, r *realm, apply bool) (plan []GroupCleanup, skipped error) {
	log := s.log.With("realm", r.client.Realm())
	named := map[string]string{}   // path → offering of a live resource naming it
	subtree := map[string]string{} // path → offering, for Subtree names
	byHex := map[string]Offering{}
	listed := 0
	for _, o := range r.offerings {
		hex := o.Config.OfferingUUIDHex()
		byHex[hex] = o
		if o.Waldur == nil {
			log.Debug("leftover cleanup skipped: an offering of the realm has no Waldur client", "offering", o.Config.Name)
			return nil, fmt.Errorf("offering %s has no Waldur client", o.Config.Name)
		}
		resources, err := o.Waldur.ListProviderResources(ctx, waldur.ResourceFilter{
			OfferingUUID: o.Config.WaldurOfferingUUID, Fields: []string{"uuid", "slug", "state", "project_slug", "project_uuid"},
		})
		if err != nil {
			log.Warn("leftover cleanup skipped: cannot list resources", "offering", o.Config.Name, "err", err)
			return nil, fmt.Errorf("cannot list the resources of offering %s: %w", o.Config.Name, err)
		}
		listed += len(resources)
		names := o.Names
		if names == nil {
			names = nsNames
		}
		for _, res := range resources {
			if res.State == waldur.ResourceStateTerminated || res.Slug == "" {
				continue
			}
			for _, n := range names(res) {
				named[n.path()] = hex
				if n.Subtree {
					subtree[n.path()] = hex
				}
			}
		}
	}
	if listed == 0 {
		log.Info("leftover cleanup skipped: Waldur lists no resources for the realm's offerings")
		return nil, errors.New("waldur lists no resources for the realm's offerings")
	}
	groups, err := r.client.ManagedGroups(ctx)
	if err != nil {
		log.Warn("leftover cleanup skipped: cannot list managed groups", "err", err)
		return nil, fmt.Errorf("cannot list the managed groups: %w", err)
	}
	liveOwner := func(path string) string {
		if o, ok := named[path]; ok {
			return o
		}
		for p := path; ; {
			i := strings.LastIndexByte(p, '/')
			if i <= 0 {
				return ""
			}
			p = p[:i]
			if o, ok := subtree[p]; ok {
				return o
			}
		}
	}
	planned := map[string]bool{} // ids of the groups planned for deletion
	hasSubGroups := func(g keycloak.Group) (bool, error) {
		has, err := r.client.HasSubGroups(ctx, g.ID)
		if err != nil || !has || apply {
			return has, err
		}
		children := 0
		for _, c := range groups {
			if c.ParentID == g.ID {
				if !planned[c.ID] {
					return true, nil
				}
				children++
			}
		}
		return children == 0, nil
	}
	// Deepest first: a child goes before its parent is looked at.
	for i := len(groups) - 1; i >= 0; i-- {
		if ctx.Err() != nil {
			return plan, nil
		}
		g := groups[i]
		owner := offeringHex(g.Offering())
		live := liveOwner(g.Path)
		if owner == "" {
			if live != "" {
				plan = append(plan, GroupCleanup{Realm: r.client.Realm(), Group: g.Path, Action: CleanupAdopt, Offering: live})
				if apply {
					s.adopt(ctx, r, g, live)
				}
			}
			continue
		}
		o, ours := byHex[owner]
		if !ours || live != "" || !sitebusName(g.Path) {
			continue
		}
		if o.Bindings != nil {
			bound, err := o.Bindings(ctx, g.Name)
			if err != nil {
				log.Warn("leftover group kept: its bindings cannot be listed; next try at the next period", "group", g.Path, "err", err)
				continue
			}
			if len(bound) > 0 {
				continue
			}
		}
		has, err := hasSubGroups(g)
		if err != nil {
			log.Warn("leftover group kept: its subgroups cannot be listed; next try at the next period", "group", g.Path, "err", err)
			continue
		}
		if has {
			continue
		}
		if !apply {
			planned[g.ID] = true
			plan = append(plan, GroupCleanup{Realm: r.client.Realm(), Group: g.Path, Action: CleanupDelete, Offering: owner})
			continue
		}
		err = r.client.DeleteGroup(ctx, g.ID)
		if errors.Is(err, keycloak.ErrNotManaged) {
			log.Warn("leftover group kept: it has unmanaged subgroups", "group", g.Path)
			continue
		}
		if err != nil {
			log.Warn("leftover group not removed; next try at the next period", "group", g.Path, "err", err)
			continue
		}
		plan = append(plan, GroupCleanup{Realm: r.client.Realm(), Group: g.Path, Action: CleanupDelete, Offering: owner})
		s.metrics.removed.Inc()
		log.Info("leftover group removed: no live resource of its offering uses it", "group", g.Path, "offering", o.Config.Name)
		for _, o := range r.offerings {
			if err := s.forgetGroup(ctx, o.Config.WaldurOfferingUUID, g.ID); err != nil {
				log.Warn("pending memberships of a removed group not dropped", "group", g.Path, "err", err)
			}
		}
	}
	return plan, nil
}

// adopt gives a marked group without an offering the offering of the live
// resource that names it, so that this deployment removes it once that
// resource is gone (and no other deployment ever does).
func (s *Service) adopt(ctx context.Context, r *realm, g keycloak.Group, offering string) {
	err := r.client.SetGroupAttributes(ctx, g.ID, map[string][]string{keycloak.OfferingAttribute: {offering}})
	if err != nil {
		s.log.Warn("group not adopted; next try at the next period", "realm", r.client.Realm(), "group", g.Path, "err", err)
		return
	}
	s.metrics.adopted.Inc()
	s.log.Info("group adopted: a live resource of this deployment names it", "realm", r.client.Realm(), "group", g.Path,
		"managed_by", g.Attributes["managed_by"], "offering", offering)
}
