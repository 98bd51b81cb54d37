package keycloak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/Nerzal/gocloak/v13"
)

// Marks in a group's managed_by attribute.
const (
	// ManagedBy marks the groups sitebus creates.
	ManagedBy = "sitebus"
	// LegacyManagedBy marks the groups the Python waldur-site-agent
	// created; sitebus manages them too, so a site can switch.
	LegacyManagedBy = "waldur-site-agent"
)

// Attributes sitebus writes on the groups it makes, next to managed_by.
const (
	// OfferingAttribute holds the UUID (32 hex digits) of the Waldur
	// offering a group was made for. Deployments that share a realm tell
	// their groups apart by it: one deletes only groups of offerings in
	// its own config.
	OfferingAttribute = "sitebus_offering_uuid"
	// CreatedByAttribute holds the key of the command that made the group,
	// so that the same command, tried again after a failure, knows the
	// group is its own and its undo removes it.
	CreatedByAttribute = "sitebus_created_by"
)

// GroupOption adds to the attributes of a group EnsureGroup creates.
type GroupOption func(attrs map[string][]string)

// WithAttribute sets attribute key to values on a group EnsureGroup
// creates (a group that exists keeps its attributes). Empty values are
// left out.
func WithAttribute(key string, values ...string) GroupOption {
	return func(attrs map[string][]string) {
		var vs []string
		for _, v := range values {
			if v != "" {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			attrs[key] = vs
		}
	}
}

// NewGroupAttributes are the attributes EnsureGroup gives a group it
// creates: description, managed_by sitebus, and opts.
func NewGroupAttributes(description string, opts ...GroupOption) map[string][]string {
	desc := []string{}
	if description != "" {
		desc = []string{description}
	}
	attrs := map[string][]string{"description": desc, "managed_by": {ManagedBy}}
	for _, o := range opts {
		o(attrs)
	}
	return attrs
}

// pageSize is what we ask for per page: Keycloak's children endpoint gives
// only 10 unless told otherwise.
const pageSize = 100

// Group is a Keycloak group.
type Group struct {
	ID, Name, Path, ParentID string
	Description              string
	// Managed is true when managed_by carries ManagedBy or
	// LegacyManagedBy: sitebus may delete the group and own its members.
	Managed    bool
	Attributes map[string][]string
}

// Offering is the offering UUID the group was made for (OfferingAttribute),
// "" when it carries none: made by the Python agent, by a sitebus older
// than the attribute, or by hand.
func (g Group) Offering() string {
	if v := g.Attributes[OfferingAttribute]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// CreatedBy is the key of the command that made the group, "" if unknown.
func (g Group) CreatedBy() string {
	if v := g.Attributes[CreatedByAttribute]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// IsManaged reports whether attrs carry sitebus's or the Python agent's
// managed_by mark.
func IsManaged(attrs map[string][]string) bool {
	return slices.Contains(attrs["managed_by"], ManagedBy) || slices.Contains(attrs["managed_by"], LegacyManagedBy)
}

// groupJSON is Keycloak's GroupRepresentation with the fields gocloak's
// Group lacks (parentId, subGroupCount).
type groupJSON struct {
	ID            string              `json:"id"`
	Name          string              `json:"name"`
	Path          string              `json:"path"`
	ParentID      string              `json:"parentId"`
	SubGroupCount *int                `json:"subGroupCount"`
	Attributes    map[string][]string `json:"attributes"`
}

func newGroup(id, name, path, parent string, attrs map[string][]string) Group {
	g := Group{ID: id, Name: name, Path: path, ParentID: parent, Attributes: attrs}
	if d := attrs["description"]; len(d) > 0 {
		g.Description = d[0]
	}
	g.Managed = IsManaged(attrs)
	return g
}

func fromGocloak(g *gocloak.Group, parent string) Group {
	var attrs map[string][]string
	if g.Attributes != nil {
		attrs = *g.Attributes
	}
	return newGroup(gocloak.PString(g.ID), gocloak.PString(g.Name), gocloak.PString(g.Path), parent, attrs)
}

func (j groupJSON) group() Group { return newGroup(j.ID, j.Name, j.Path, j.ParentID, j.Attributes) }

// FindGroup returns the group called exactly name among the top-level
// groups (parentID "") or the children of parentID, or nil. It uses the
// search and children endpoints, which work on Keycloak ≥ 23 (the plain
// group list no longer inlines subGroups there), and compares names itself,
// since a database collation may make Keycloak's exact search ignore case.
func (c *Client) FindGroup(ctx context.Context, name, parentID string) (*Group, error) {
	if name == "" {
		return nil, fmt.Errorf("keycloak: find group: %w: empty name", ErrInvalid)
	}
	if parentID == "" {
		return c.findTopLevel(ctx, name)
	}
	return c.findChild(ctx, name, parentID)
}

// findTopLevel searches by exact name: Keycloak answers with the matches
// nested in their ancestors, so the top-level entries named name are the
// one we want.
func (c *Client) findTopLevel(ctx context.Context, name string) (*Group, error) {
	var found *Group
	err := c.do(ctx, "find group "+name, func(ctx context.Context, tok string) error {
		found = nil
		gs, err := c.gc.GetGroups(ctx, tok, c.cfg.Realm, gocloak.GetGroupsParams{
			Search: gocloak.StringP(name), Exact: gocloak.BoolP(true), BriefRepresentation: gocloak.BoolP(false),
		})
		for _, g := range gs {
			if gocloak.PString(g.Name) == name {
				grp := fromGocloak(g, "")
				found = &grp
				break
			}
		}
		return err
	})
	return found, err
}

// findChild pages through parentID's children. Keycloak ≥ 25 filters them
// by search/exact; older versions ignore those and send all of them.
func (c *Client) findChild(ctx context.Context, name, parentID string) (*Group, error) {
	var found *Group
	err := c.eachChild(ctx, parentID, name, func(g groupJSON) bool {
		if g.Name == name {
			grp := g.group()
			if grp.ParentID == "" {
				grp.ParentID = parentID
			}
			found = &grp
			return false
		}
		return true
	})
	return found, err
}

// eachChild calls fn for each child of parentID (filtered by search when
// the server supports it) until fn returns false.
func (c *Client) eachChild(ctx context.Context, parentID, search string, fn func(groupJSON) bool) error {
	for first := 0; ; first += pageSize {
		var page []groupJSON
		err := c.do(ctx, "list children of group "+parentID, func(ctx context.Context, tok string) error {
			page = nil
			q := map[string]string{"first": strconv.Itoa(first), "max": strconv.Itoa(pageSize), "briefRepresentation": "false"}
			if search != "" {
				q["search"], q["exact"] = search, "true"
			}
			return c.get(ctx, tok, c.adminURL("groups", parentID, "children"), q, &page)
		})
		if err != nil {
			return err
		}
		for _, g := range page {
			if !fn(g) {
				return nil
			}
		}
		if len(page) < pageSize {
			return nil
		}
	}
}

// EnsureGroup returns the group called name under parentID ("" for top
// level), creating it when missing with attributes description,
// managed_by: ["sitebus"] and those of opts (NewGroupAttributes). created is
// true only when this call made it.
// An existing group is returned as it is, whoever made it: check Managed
// before changing it. A name taken between the lookup and the create (409)
// is looked up again.
func (c *Client) EnsureGroup(ctx context.Context, name, parentID, description string, opts ...GroupOption) (Group, bool, error) {
	g, err := c.FindGroup(ctx, name, parentID)
	if err != nil || g != nil {
		return deref(g), false, err
	}
	attrs := NewGroupAttributes(description, opts...)
	body := gocloak.Group{Name: gocloak.StringP(name), Attributes: &attrs}
	var id string
	err = c.do(ctx, "create group "+name, func(ctx context.Context, tok string) error {
		var err error
		if parentID == "" {
			id, err = c.gc.CreateGroup(ctx, tok, c.cfg.Realm, body)
		} else {
			id, err = c.gc.CreateChildGroup(ctx, tok, c.cfg.Realm, esc(parentID), body)
		}
		return err
	})
	if errors.Is(err, ErrConflict) {
		c.log.Info("keycloak group created concurrently, using it", "group", name)
		g, err = c.FindGroup(ctx, name, parentID)
		if err == nil && g == nil {
			err = &Error{Op: "create group " + name, Status: 409, Msg: "name taken, yet no such group", kind: ErrUnavailable}
		}
		return deref(g), false, err
	}
	if err != nil {
		return Group{}, false, err
	}
	if id == "" {
		return Group{}, false, &Error{Op: "create group " + name, Status: 201, Msg: "no group id in the Location header", kind: ErrRejected}
	}
	c.log.Info("keycloak group created", "group", name, "id", id, "parent", parentID)
	if parentID != "" {
		// The path depends on the parent's; ask rather than guess.
		got, err := c.group(ctx, id)
		if err != nil || got == nil {
			return newGroup(id, name, "", parentID, attrs), true, err
		}
		return got.group(), true, nil
	}
	return newGroup(id, name, "/"+strings.ReplaceAll(name, "/", "~/"), "", attrs), true, nil
}

func deref(g *Group) Group {
	if g == nil {
		return Group{}
	}
	return *g
}

// group reads one group, nil when it does not exist.
func (c *Client) group(ctx context.Context, id string) (*groupJSON, error) {
	var g groupJSON
	err := c.do(ctx, "get group "+id, func(ctx context.Context, tok string) error {
		return c.get(ctx, tok, c.adminURL("groups", id), nil, &g)
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &g, nil
}

// GetGroup reads a group by id; nil when it does not exist.
func (c *Client) GetGroup(ctx context.Context, id string) (*Group, error) {
	g, err := c.group(ctx, id)
	if g == nil || err != nil {
		return nil, err
	}
	grp := g.group()
	return &grp, nil
}

// DeleteGroup deletes a group that sitebus (or the Python agent) manages,
// with its subgroups; Keycloak deletes the subtree, so every subgroup must
// be managed too. A group that is not (ErrNotManaged, terminal) is left
// alone; a missing group is fine.
func (c *Client) DeleteGroup(ctx context.Context, id string) error {
	g, err := c.group(ctx, id)
	if err != nil || g == nil {
		return err
	}
	if err := c.checkManaged(ctx, *g); err != nil {
		return err
	}
	err = c.do(ctx, "delete group "+g.Name, func(ctx context.Context, tok string) error {
		return c.gc.DeleteGroup(ctx, tok, c.cfg.Realm, esc(id))
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err == nil {
		c.log.Info("keycloak group deleted", "group", g.Name, "id", id)
	}
	return err
}

// checkManaged refuses g unless g and all its descendants are managed.
func (c *Client) checkManaged(ctx context.Context, g groupJSON) error {
	if gr := g.group(); !gr.Managed {
		return &Error{
			Op:   "delete group " + g.Name,
			Msg:  fmt.Sprintf("group %s (%s) has managed_by %q, not %q or %q: not ours to delete", g.Path, g.ID, g.Attributes["managed_by"], ManagedBy, LegacyManagedBy),
			kind: ErrNotManaged,
		}
	}
	if g.SubGroupCount != nil && *g.SubGroupCount == 0 {
		return nil
	}
	var kids []groupJSON
	if err := c.eachChild(ctx, g.ID, "", func(k groupJSON) bool { kids = append(kids, k); return true }); err != nil {
		return err
	}
	for _, k := range kids {
		if err := c.checkManaged(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// SetGroupAttributes sets the attributes named in attrs on a group, keeping
// its others (Keycloak's update replaces the whole map, so the group is read
// first). A missing group is ErrNotFound.
func (c *Client) SetGroupAttributes(ctx context.Context, id string, attrs map[string][]string) error {
	g, err := c.group(ctx, id)
	if err != nil {
		return err
	}
	if g == nil {
		return &Error{Op: "update group " + id, Status: 404, Msg: "no such group", kind: ErrNotFound}
	}
	merged := maps.Clone(g.Attributes)
	if merged == nil {
		merged = map[string][]string{}
	}
	maps.Copy(merged, attrs)
	body := gocloak.Group{ID: gocloak.StringP(g.ID), Name: gocloak.StringP(g.Name), Attributes: &merged}
	return c.do(ctx, "update group "+g.Name, func(ctx context.Context, tok string) error {
		return c.gc.UpdateGroup(ctx, tok, c.cfg.Realm, body)
	})
}

// ManagedGroups lists every group, at any depth, marked as managed by
// sitebus or the Python agent (for removing leftovers).
func (c *Client) ManagedGroups(ctx context.Context) ([]Group, error) {
	var out []Group
	seen := map[string]bool{}
	for _, mark := range []string{ManagedBy, LegacyManagedBy} {
		var roots []*gocloak.Group
		err := c.do(ctx, "list groups managed by "+mark, func(ctx context.Context, tok string) error {
			var err error
			roots, err = c.gc.GetGroups(ctx, tok, c.cfg.Realm, gocloak.GetGroupsParams{
				Q: gocloak.StringP("managed_by:" + mark), BriefRepresentation: gocloak.BoolP(false),
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		var walk func(gs []gocloak.Group, parent string)
		walk = func(gs []gocloak.Group, parent string) {
			for i := range gs {
				g := fromGocloak(&gs[i], parent)
				if g.Managed && !seen[g.ID] {
					seen[g.ID] = true
					out = append(out, g)
				}
				if gs[i].SubGroups != nil {
					walk(*gs[i].SubGroups, g.ID)
				}
			}
		}
		for _, r := range roots {
			walk([]gocloak.Group{*r}, "")
		}
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// HasSubGroups reports whether the group has any subgroup (one page of
// one child is enough to tell).
func (c *Client) HasSubGroups(ctx context.Context, id string) (bool, error) {
	found := false
	err := c.eachChild(ctx, id, "", func(groupJSON) bool { found = true; return false })
	return found, err
}
