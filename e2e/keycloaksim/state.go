package keycloaksim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// realm holds one realm's users and groups.
type realm struct {
	name   string
	id     string
	users  map[string]*user  // by id
	groups map[string]*group // by id
}

// user is a User as Keycloak stores it: username and email in lower case,
// with its creation time.
type user struct {
	User
	created int64
}

type group struct {
	id, name, parent string
	attrs            map[string][]string
	members          map[string]bool // direct members' user ids: true (false is a former member)
}

var errDuplicateUser = errors.New("user exists with same username")

func (r *realm) addUser(u User, created int64) (*user, error) {
	if u.Username == "" {
		return nil, errors.New("user needs a username")
	}
	if r.userByName(u.Username) != nil {
		return nil, fmt.Errorf("%w: %s", errDuplicateUser, u.Username)
	}
	u.ID = cmp.Or(u.ID, simkit.NewUUID())
	if _, ok := r.users[u.ID]; ok {
		return nil, fmt.Errorf("user id %s exists", u.ID)
	}
	u.Username, u.Email = strings.ToLower(u.Username), strings.ToLower(u.Email)
	r.users[u.ID] = &user{User: u, created: created}
	return r.users[u.ID], nil
}

// userByName matches case-insensitively: Keycloak stores usernames in
// lower case.
func (r *realm) userByName(name string) *user {
	name = strings.ToLower(name)
	return simkit.FindBy(r.users, func(u *user) bool { return u.Username == name })
}

// userByRef finds a user by id, else by username.
func (r *realm) userByRef(ref string) *user {
	return cmp.Or(r.users[ref], r.userByName(ref))
}

func (r *realm) seedGroup(g Group, parent string) error {
	ng, cerr := r.createGroup(g.ID, g.Name, parent, g.Attributes)
	if cerr != nil {
		return fmt.Errorf("group %q: %v", g.Name, cerr.Body)
	}
	for _, m := range g.Members {
		u := r.userByRef(m)
		if u == nil {
			return fmt.Errorf("group %q: no user %q", g.Name, m)
		}
		ng.members[u.ID] = true
	}
	for _, c := range g.Children {
		if err := r.seedGroup(c, ng.id); err != nil {
			return err
		}
	}
	return nil
}

// createGroup adds a group under parent ("" for top level), enforcing
// Keycloak's rules: a name is required and unique among siblings.
func (r *realm) createGroup(id, name, parent string, attrs map[string][]string) (*group, *apiError) {
	if e := cmp.Or(simkit.Refuse(strings.TrimSpace(name) == "", errNameMissing),
		simkit.Refuse(parent != "" && r.groups[parent] == nil, errGroupNotFound),
		simkit.Refuse(r.siblingNamed(parent, name, "") != nil, duplicateName(parent, name)),
		simkit.Refuse(id != "" && r.groups[id] != nil, errorMessage(409, "Group with id "+id+" already exists"))); e != nil {
		return nil, e
	}
	id = cmp.Or(id, simkit.NewUUID())
	g := &group{id: id, name: name, parent: parent, attrs: cloneAttrs(attrs), members: map[string]bool{}}
	r.groups[id] = g
	return g, nil
}

func duplicateName(parent, name string) *apiError {
	if parent == "" {
		return errorMessage(409, fmt.Sprintf("Top level group named '%s' already exists.", name))
	}
	return errorMessage(409, fmt.Sprintf("Sibling group named '%s' already exists.", name))
}

// siblingNamed returns the child of parent called name, other than except.
func (r *realm) siblingNamed(parent, name, except string) *group {
	return simkit.FindBy(r.groups, func(g *group) bool { return g.parent == parent && g.name == name && g.id != except })
}

// groupKey orders groups by name, then id.
func groupKey(g *group) string { return g.name + "\x00" + g.id }

// groupsWhere returns the groups keep accepts, ordered by name.
func (r *realm) groupsWhere(keep func(*group) bool) []*group {
	return simkit.Select(r.groups, groupKey, keep, func(g *group) *group { return g })
}

// children returns parent's direct subgroups ("" for top level) by name.
func (r *realm) children(parent string) []*group {
	return r.groupsWhere(func(g *group) bool { return g.parent == parent })
}

// named keeps the groups whose name matches search as Keycloak's group
// searches do: a case-insensitive substring or (exact) the name itself.
func named(gs []*group, search string, exact bool) []*group {
	return slices.DeleteFunc(gs, func(g *group) bool {
		if exact {
			return g.name != search
		}
		return !strings.Contains(strings.ToLower(g.name), strings.ToLower(search))
	})
}

// isAncestor reports whether a is g or one of g's ancestors.
func (r *realm) isAncestor(a, g string) bool {
	for ; g != ""; g = r.groups[g].parent {
		if g == a {
			return true
		}
	}
	return false
}

// path is Keycloak's group path; since Keycloak 23 a "/" inside a name is
// escaped as "~/".
func (r *realm) path(g *group) string {
	var parts []string
	for ; g != nil; g = r.groups[g.parent] {
		parts = append(parts, strings.ReplaceAll(g.name, "/", "~/"))
	}
	slices.Reverse(parts)
	return "/" + strings.Join(parts, "/")
}

// deleteGroup removes g and its subtree, memberships included.
func (r *realm) deleteGroup(id string) {
	for _, c := range r.children(id) {
		r.deleteGroup(c.id)
	}
	delete(r.groups, id)
}

// groupMembers returns the direct members of a group by username.
func (r *realm) groupMembers(g *group) []*user {
	return simkit.Select(r.users, func(u *user) string { return u.Username },
		func(u *user) bool { return g.members[u.ID] }, func(u *user) *user { return u })
}

// userGroups returns the groups a user is a direct member of, by path.
func (r *realm) userGroups(userID string) []*group {
	out := r.groupsWhere(func(g *group) bool { return g.members[userID] })
	slices.SortFunc(out, func(a, b *group) int { return strings.Compare(r.path(a), r.path(b)) })
	return out
}

func cloneAttrs(a map[string][]string) map[string][]string {
	out := make(map[string][]string, len(a))
	for k, v := range maps.All(a) {
		out[k] = slices.Clone(v)
	}
	return out
}
