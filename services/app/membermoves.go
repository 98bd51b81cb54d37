package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
)

// MemberReader is what the membership dry run reads of Keycloak (a
// *keycloak.Client); it writes nothing.
type MemberReader interface {
	FindGroup(ctx context.Context, name, parentID string) (*keycloak.Group, error)
	FindUser(ctx context.Context, idOrUsername string, byID bool) (*keycloak.User, error)
	Members(ctx context.Context, groupID string) ([]keycloak.User, error)
}

var _ MemberReader = (*keycloak.Client)(nil)

// MembershipMove is one user's change of access in the first membership
// pass: from one group to another (a role mapped differently than the
// Python agent did), into a group (From empty) or out of one (To empty).
type MembershipMove struct {
	Resource string `json:"resource"`
	User     string `json:"user"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	// Pending: Keycloak has no such user yet; the pass remembers the
	// membership and adds it when the user appears.
	Pending bool `json:"pending,omitempty"`
}

// GroupChange is a group the first membership pass cannot simply fill:
// one it would make (a live resource's missing group) or one it refuses
// (no managed_by mark of sitebus or the Python agent).
type GroupChange struct {
	Resource string `json:"resource"`
	Group    string `json:"group"`
	Action   string `json:"action"` // create, refuse
	Members  int    `json:"members"`
	Reason   string `json:"reason,omitempty"`
}

// MembershipMoves compares the membership pass's plan with the groups'
// members in Keycloak, deciding each group's changes as set-group-members
// does (keycloaksync.MemberChanges), and pairs a user's removal from one
// group of a resource with an addition to another as a move.
func MembershipMoves(ctx context.Context, kc MemberReader, plan []membership.GroupMembers) ([]MembershipMove, []GroupChange, error) {
	type change struct{ from, to []string }
	var (
		moves  []MembershipMove
		groups []GroupChange
	)
	byResource := map[string]map[string]*change{} // resource → user → groups left and joined
	var order []string
	// One lookup per person and pass: a site's staff are in hundreds of
	// teams, and each lookup is a call to Keycloak (1,000 resources with
	// teams of two drawn from ten people: 2,000 lookups become 10).
	type userKey struct {
		ref  string
		byID bool
	}
	known := map[userKey]*keycloak.User{}
	findUser := func(ref string, byID bool) (*keycloak.User, error) {
		k := userKey{ref, byID}
		if u, ok := known[k]; ok {
			return u, nil
		}
		u, err := kc.FindUser(ctx, ref, byID)
		if err == nil {
			known[k] = u
		}
		return u, err
	}
	for _, gm := range plan {
		name := groupPath(gm.Group.Name, gm.Group.Parent)
		g, err := findGroupByName(ctx, kc, gm.Group.Name, gm.Group.Parent)
		if err != nil {
			return nil, nil, fmt.Errorf("find group %s: %w", name, err)
		}
		switch {
		case g == nil:
			groups = append(groups, GroupChange{Resource: gm.Resource, Group: name, Action: "create", Members: len(gm.Members),
				Reason: "a live resource's group is missing; the membership pass makes it again (when the resource's object exists)"})
			continue
		case !g.Managed:
			groups = append(groups, GroupChange{Resource: gm.Resource, Group: name, Action: "refuse",
				Reason: "it has no managed_by mark of sitebus or the Python agent; its members are not set"})
			continue
		}
		var wanted []keycloak.User
		for _, ref := range gm.Members {
			u, err := findUser(ref, gm.ByID)
			if err != nil {
				return nil, nil, fmt.Errorf("find user %s: %w", ref, err)
			}
			if u == nil {
				moves = append(moves, MembershipMove{Resource: gm.Resource, User: ref, To: name, Pending: true})
				continue
			}
			wanted = append(wanted, *u)
		}
		current, err := kc.Members(ctx, g.ID)
		if err != nil {
			return nil, nil, fmt.Errorf("members of group %s: %w", name, err)
		}
		add, remove := keycloaksync.MemberChanges(current, wanted)
		users := byResource[gm.Resource]
		if users == nil {
			users = map[string]*change{}
			byResource[gm.Resource] = users
			order = append(order, gm.Resource)
		}
		at := func(u keycloak.User) *change {
			c := users[u.Username]
			if c == nil {
				c = &change{}
				users[u.Username] = c
			}
			return c
		}
		for _, u := range remove {
			at(u).from = append(at(u).from, name)
		}
		for _, u := range add {
			at(u).to = append(at(u).to, name)
		}
	}
	for _, res := range order {
		users := byResource[res]
		for _, user := range slices.Sorted(maps.Keys(users)) {
			c := users[user]
			if len(c.from) == 1 && len(c.to) == 1 {
				moves = append(moves, MembershipMove{Resource: res, User: user, From: c.from[0], To: c.to[0]})
				continue
			}
			for _, f := range c.from {
				moves = append(moves, MembershipMove{Resource: res, User: user, From: f})
			}
			for _, t := range c.to {
				moves = append(moves, MembershipMove{Resource: res, User: user, To: t})
			}
		}
	}
	return moves, groups, nil
}

// findGroupByName finds a top-level group, or one under the top-level
// group parent, as set-group-members resolves a group by name.
func findGroupByName(ctx context.Context, kc MemberReader, name, parent string) (*keycloak.Group, error) {
	if parent == "" {
		return kc.FindGroup(ctx, name, "")
	}
	p, err := kc.FindGroup(ctx, parent, "")
	if err != nil || p == nil {
		return nil, err
	}
	return kc.FindGroup(ctx, name, p.ID)
}

func groupPath(name, parent string) string {
	if parent == "" {
		return name
	}
	return strings.Join([]string{parent, name}, "/")
}
