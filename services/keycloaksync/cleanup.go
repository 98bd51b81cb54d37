package keycloaksync

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
)

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

// removeLeftovers deletes, in each realm, the groups that sitebus made for
// a ManagedNamespace whose resource is gone. It is conservative: only
// groups marked managed_by sitebus (not the Python agent's, which may still
// run for other offerings) and named ns_<slug>_<role>; a resource counts as
// alive in any state but Terminated, in any offering that uses the realm;
// and a realm is skipped when any of its offerings' resources cannot be
// listed, or none at all are listed (a Waldur answering with nothing is
// more likely misconfigured than empty).
func (s *Service) removeLeftovers(ctx context.Context) {
	for _, r := range s.realms {
		if ctx.Err() != nil {
			return
		}
		s.removeRealmLeftovers(ctx, r)
	}
}

func (s *Service) removeRealmLeftovers(ctx context.Context, r *realm) {
	log := s.log.With("realm", r.client.Realm())
	alive := map[string]bool{}
	listed := 0
	for _, o := range r.offerings {
		if o.Waldur == nil {
			log.Debug("leftover cleanup skipped: an offering of the realm has no Waldur client", "offering", o.Config.Name)
			return
		}
		resources, err := o.Waldur.ListProviderResources(ctx, waldur.ResourceFilter{
			OfferingUUID: o.Config.WaldurOfferingUUID, Fields: []string{"uuid", "slug", "state"},
		})
		if err != nil {
			log.Warn("leftover cleanup skipped: cannot list resources", "offering", o.Config.Name, "err", err)
			return
		}
		listed += len(resources)
		for _, res := range resources {
			if res.State != waldur.ResourceStateTerminated && res.Slug != "" {
				alive[res.Slug] = true
			}
		}
	}
	if listed == 0 {
		log.Info("leftover cleanup skipped: Waldur lists no resources for the realm's offerings")
		return
	}
	groups, err := r.client.ManagedGroups(ctx)
	if err != nil {
		log.Warn("leftover cleanup skipped: cannot list managed groups", "err", err)
		return
	}
	for _, g := range groups {
		slug, ok := nsSlug(g.Name)
		if !ok || alive[slug] || !slices.Contains(g.Attributes["managed_by"], keycloak.ManagedBy) {
			continue
		}
		err := r.client.DeleteGroup(ctx, g.ID)
		if errors.Is(err, keycloak.ErrNotManaged) {
			log.Warn("leftover group kept: it has unmanaged subgroups", "group", g.Path)
			continue
		}
		if err != nil {
			log.Warn("leftover group not removed; next try at the next period", "group", g.Path, "err", err)
			continue
		}
		s.metrics.removed.Inc()
		log.Info("leftover group removed: its resource is gone", "group", g.Path, "slug", slug)
		for _, o := range r.offerings {
			if err := s.forgetGroup(ctx, o.Config.WaldurOfferingUUID, g.ID); err != nil {
				log.Warn("pending memberships of a removed group not dropped", "group", g.Path, "err", err)
			}
		}
	}
}
