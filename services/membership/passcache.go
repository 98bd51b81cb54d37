package membership

import (
	"context"
	"slices"
	"sync"

	"github.com/sitebus/sitebus/pkg/waldur"
)

// passCache keeps what one periodic pass read from Waldur: every Rancher
// resource's sync needs the teams of its Waldur project's other resources
// (the shared child group holds their union), and a pass syncs all of
// them, so without it a project of n resources costs n² team reads a
// period. A pass is one snapshot of Waldur; events and saga requests read
// afresh.
type passCache struct {
	mu    sync.Mutex
	teams map[string][]waldur.ProjectUser // resource UUID → team
	lists map[string][]waldur.Resource    // offering|project → resources
}

type passCacheKey struct{}

func withPassCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, passCacheKey{}, &passCache{teams: map[string][]waldur.ProjectUser{}, lists: map[string][]waldur.Resource{}})
}

func passCacheOf(ctx context.Context) *passCache {
	c, _ := ctx.Value(passCacheKey{}).(*passCache)
	return c
}

// readTeam reads a resource's team, once per pass.
func readTeam(ctx context.Context, w Waldur, uuid string) ([]waldur.ProjectUser, error) {
	c := passCacheOf(ctx)
	if c != nil {
		c.mu.Lock()
		t, ok := c.teams[uuid]
		c.mu.Unlock()
		if ok {
			return slices.Clone(t), nil
		}
	}
	t, err := w.GetResourceTeam(ctx, uuid, nil)
	if err == nil && c != nil {
		c.mu.Lock()
		c.teams[uuid] = slices.Clone(t)
		c.mu.Unlock()
	}
	return t, err
}

// projectResources lists an offering's live resources (OK, Erred) of one
// Waldur project, once per pass.
func projectResources(ctx context.Context, o Offering, projectUUID string) ([]waldur.Resource, error) {
	key := o.Config.OfferingUUIDHex() + "|" + projectUUID
	c := passCacheOf(ctx)
	if c != nil {
		c.mu.Lock()
		rs, ok := c.lists[key]
		c.mu.Unlock()
		if ok {
			return rs, nil
		}
	}
	rs, err := o.Waldur.ListProviderResources(ctx, waldur.ResourceFilter{OfferingUUID: o.Config.WaldurOfferingUUID,
		ProjectUUID: projectUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}})
	if err == nil && c != nil {
		c.mu.Lock()
		c.lists[key] = rs
		c.mu.Unlock()
	}
	return rs, err
}
