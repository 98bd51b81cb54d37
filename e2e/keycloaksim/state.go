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

// realm holds one realm's users, groups and memberships.
type realm struct {
	name    string
	id      string
	users   map[string]*user  // by id
	groups  map[string]*group // by id
	members map[string]map[string]bool
}

type user struct {
	id, username, email, firstName, lastName string
	enabled                                  bool
	password                                 string
	created                                  int64
}

type group struct {
	id, name, parent string
	attrs            map[string][]string
}

func newRealm(name string) *realm {
	return &realm{
		name: name, id: simkit.NewUUID(),
		users: map[string]*user{}, groups: map[string]*group{},
		members: map[string]map[string]bool{},
	}
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
	nu := &user{
		id: u.ID, username: strings.ToLower(u.Username), email: strings.ToLower(u.Email),
		firstName: u.FirstName, lastName: u.LastName, enabled: !u.Disabled,
		password: u.Password, created: created,
	}
	r.users[nu.id] = nu
	return nu, nil
}

// userByName matches case-insensitively: Keycloak stores usernames in
// lower case.
func (r *realm) userByName(name string) *user {
	name = strings.ToLower(name)
	for _, u := range r.users {
		if u.username == name {
			return u
		}
	}
	return nil
}

// userByRef finds a user by id, else by username.
func (r *realm) userByRef(ref string) *user {
	if u := r.users[ref]; u != nil {
		return u
	}
	return r.userByName(ref)
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
		r.join(u.id, ng.id)
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
	if strings.TrimSpace(name) == "" {
		return nil, errorMessage(400, "Group name is missing")
	}
	if parent != "" && r.groups[parent] == nil {
		return nil, errGroupNotFound
	}
	if r.siblingNamed(parent, name, "") != nil {
		return nil, duplicateName(parent, name)
	}
	if id == "" {
		id = simkit.NewUUID()
	} else if r.groups[id] != nil {
		return nil, errorMessage(409, "Group with id "+id+" already exists")
	}
	g := &group{id: id, name: name, parent: parent, attrs: cloneAttrs(attrs)}
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
	for _, g := range r.groups {
		if g.parent == parent && g.name == name && g.id != except {
			return g
		}
	}
	return nil
}

// children returns parent's direct subgroups ("" for top level) by name.
func (r *realm) children(parent string) []*group {
	var out []*group
	for _, g := range r.groups {
		if g.parent == parent {
			out = append(out, g)
		}
	}
	sortGroups(out)
	return out
}

func sortGroups(gs []*group) {
	slices.SortFunc(gs, func(a, b *group) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.id, b.id))
	})
}

// isAncestor reports whether a is g or one of g's ancestors.
func (r *realm) isAncestor(a, g string) bool {
	for g != "" {
		if g == a {
			return true
		}
		g = r.groups[g].parent
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

// deleteGroup removes g, its subtree and their memberships.
func (r *realm) deleteGroup(id string) {
	for _, c := range r.children(id) {
		r.deleteGroup(c.id)
	}
	delete(r.groups, id)
	delete(r.members, id)
}

func (r *realm) join(userID, groupID string) {
	m := r.members[groupID]
	if m == nil {
		m = map[string]bool{}
		r.members[groupID] = m
	}
	m[userID] = true
}

func (r *realm) leave(userID, groupID string) { delete(r.members[groupID], userID) }

// groupMembers returns the direct members of a group by username.
func (r *realm) groupMembers(groupID string) []*user {
	var out []*user
	for id := range r.members[groupID] {
		if u := r.users[id]; u != nil {
			out = append(out, u)
		}
	}
	sortUsers(out)
	return out
}

// userGroups returns the groups a user is a direct member of, by path.
func (r *realm) userGroups(userID string) []*group {
	var out []*group
	for gid, m := range r.members {
		if m[userID] && r.groups[gid] != nil {
			out = append(out, r.groups[gid])
		}
	}
	slices.SortFunc(out, func(a, b *group) int { return strings.Compare(r.path(a), r.path(b)) })
	return out
}

func (r *realm) deleteUser(id string) {
	delete(r.users, id)
	for _, m := range r.members {
		delete(m, id)
	}
}

func sortUsers(us []*user) {
	slices.SortFunc(us, func(a, b *user) int { return strings.Compare(a.username, b.username) })
}

func cloneAttrs(a map[string][]string) map[string][]string {
	out := make(map[string][]string, len(a))
	for k, v := range maps.All(a) {
		out[k] = slices.Clone(v)
	}
	return out
}
