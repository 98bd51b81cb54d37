// Package keycloakfake is one Keycloak realm in memory, answering the
// methods of *keycloak.Client as that client does against a real Keycloak,
// for the unit tests of the services that call it.
//
// The rules it keeps are Keycloak's, as the client surfaces them: group
// names are unique among siblings (a create of a taken name is Keycloak's
// 409, which the client answers by returning the existing group, so
// EnsureGroup does too); a missing group or user is a 404 (an error of kind
// keycloak.ErrNotFound), except where the client turns it into nil
// (FindGroup, GetGroup, FindUser) or success (DeleteGroup of a missing
// group, RemoveMember); deleting a group deletes its subtree and its
// memberships, and the client refuses (keycloak.ErrNotManaged) a group or
// subgroup without sitebus's or the Python agent's managed_by mark. Every
// error is of the fault kind the client gives the same answer
// (keycloak.StatusError).
package keycloakfake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sitebus/sitebus/pkg/keycloak"
)

// Realm is one realm in memory. It is safe for concurrent use.
type Realm struct {
	mu      sync.Mutex
	name    string
	seq     int
	groups  map[string]*keycloak.Group // by id
	users   map[string]keycloak.User   // by id
	members map[string]map[string]bool // group id → user ids
	// fail makes every call of a method fail with the error, until
	// cleared; failOnce fails only the next call.
	fail, failOnce map[string]error
	calls          []string
}

// New makes an empty realm called name.
func New(name string) *Realm {
	return &Realm{name: name, groups: map[string]*keycloak.Group{}, users: map[string]keycloak.User{},
		members: map[string]map[string]bool{}, fail: map[string]error{}, failOnce: map[string]error{}}
}

// Error is what the client returns for an HTTP status of an admin call
// (404, 409, 503, ...): keycloak.StatusError.
func Error(op string, status int) error { return keycloak.StatusError(op, status, "") }

// call records a call and returns the failure set for method, if any.
func (r *Realm) call(method string, args ...string) error {
	r.calls = append(r.calls, method+" "+strings.Join(args, " "))
	if err := r.failOnce[method]; err != nil {
		delete(r.failOnce, method)
		return err
	}
	if len(args) > 0 {
		if err := r.fail[method+" "+args[0]]; err != nil {
			return err
		}
	}
	return r.fail[method]
}

// SetFail makes every call of method (FindGroup, DeleteGroup, ...) fail
// with err until SetFail(method, nil).
func (r *Realm) SetFail(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.fail, method)
		return
	}
	r.fail[method] = err
}

// FailFor makes every call of method whose first argument is arg (a group
// name for FindGroup and EnsureGroup, an id for the others) fail with err
// until FailFor(method, arg, nil).
func (r *Realm) FailFor(method, arg string, err error) { r.SetFail(method+" "+arg, err) }

// FailOnce makes the next call of method fail with err.
func (r *Realm) FailOnce(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failOnce[method] = err
}

// Calls are the calls made, as "Method arg arg", in order.
func (r *Realm) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// AddGroup puts a group there as someone made it: managedBy is its
// managed_by mark ("" for a foreign group). It returns the group's id.
func (r *Realm) AddGroup(name, parentID, managedBy string) string {
	attrs := map[string][]string{}
	if managedBy != "" {
		attrs["managed_by"] = []string{managedBy}
	}
	return r.AddGroupWithAttributes(name, parentID, attrs)
}

// AddGroupWithAttributes puts a group with exactly attrs there.
func (r *Realm) AddGroupWithAttributes(name, parentID string, attrs map[string][]string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.create(name, parentID, attrs).ID
}

func (r *Realm) create(name, parentID string, attrs map[string][]string) *keycloak.Group {
	r.seq++
	id := fmt.Sprintf("g%d", r.seq)
	path := "/" + strings.ReplaceAll(name, "/", "~/")
	if p := r.groups[parentID]; p != nil {
		path = p.Path + path
	}
	g := &keycloak.Group{ID: id, Name: name, Path: path, ParentID: parentID}
	setAttributes(g, attrs)
	r.groups[id] = g
	return g
}

func setAttributes(g *keycloak.Group, attrs map[string][]string) {
	g.Attributes = attrs
	g.Description = ""
	if d := attrs["description"]; len(d) > 0 {
		g.Description = d[0]
	}
	g.Managed = keycloak.IsManaged(attrs)
}

// RemoveGroup deletes a group and its subtree as an administrator would by
// hand, whatever its marks.
func (r *Realm) RemoveGroup(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(id)
}

func (r *Realm) drop(id string) {
	for _, k := range r.children(id) {
		r.drop(k.ID)
	}
	delete(r.groups, id)
	delete(r.members, id)
}

// AddUser adds a user to the realm.
func (r *Realm) AddUser(id, username string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users[id] = keycloak.User{ID: id, Username: username, Enabled: true}
}

// SetMembers makes the group's members exactly userIDs.
func (r *Realm) SetMembers(groupID string, userIDs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.members[groupID] = map[string]bool{}
	for _, u := range userIDs {
		r.members[groupID][u] = true
	}
}

// MemberIDs are a group's members, sorted.
func (r *Realm) MemberIDs(groupID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Keys(r.members[groupID]))
	slices.Sort(out)
	return out
}

// ByPath finds a group by its path ("/c_x/project_y_member"), nil when
// there is none.
func (r *Realm) ByPath(path string) *keycloak.Group {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.groups {
		if g.Path == path {
			return clone(g)
		}
	}
	return nil
}

// Paths lists every group's path, sorted.
func (r *Realm) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, g := range r.groups {
		out = append(out, g.Path)
	}
	slices.Sort(out)
	return out
}

func (r *Realm) children(id string) []*keycloak.Group {
	var out []*keycloak.Group
	for _, g := range r.groups {
		if g.ParentID == id {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *keycloak.Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func clone(g *keycloak.Group) *keycloak.Group {
	c := *g
	c.Attributes = maps.Clone(g.Attributes)
	return &c
}

// Realm is the realm's name.
func (r *Realm) Realm() string { return r.name }

// FindGroup returns the group called exactly name among parentID's
// children (the top level for ""), or nil.
func (r *Realm) FindGroup(_ context.Context, name, parentID string) (*keycloak.Group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("FindGroup", name, parentID); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("keycloak: find group: %w: empty name", keycloak.ErrInvalid)
	}
	if parentID != "" && r.groups[parentID] == nil {
		return nil, Error("list children of group "+parentID, 404)
	}
	return r.findLocked(name, parentID), nil
}

func (r *Realm) findLocked(name, parentID string) *keycloak.Group {
	for _, g := range r.children(parentID) {
		if g.Name == name {
			return clone(g)
		}
	}
	return nil
}

// EnsureGroup returns the group called name under parentID, creating it
// with keycloak.NewGroupAttributes when missing.
func (r *Realm) EnsureGroup(ctx context.Context, name, parentID, description string, opts ...keycloak.GroupOption) (keycloak.Group, bool, error) {
	g, err := r.FindGroup(ctx, name, parentID)
	if err != nil || g != nil {
		return deref(g), false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("EnsureGroup", name, parentID); err != nil {
		return keycloak.Group{}, false, err
	}
	if parentID != "" && r.groups[parentID] == nil {
		return keycloak.Group{}, false, Error("create group "+name, 404)
	}
	// Made between the lookup and the create: Keycloak's 409, which the
	// client answers with the group that is there.
	if g := r.findLocked(name, parentID); g != nil {
		return *g, false, nil
	}
	return *clone(r.create(name, parentID, keycloak.NewGroupAttributes(description, opts...))), true, nil
}

func deref(g *keycloak.Group) keycloak.Group {
	if g == nil {
		return keycloak.Group{}
	}
	return *g
}

// GetGroup reads a group by id; nil when there is none.
func (r *Realm) GetGroup(_ context.Context, id string) (*keycloak.Group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("GetGroup", id); err != nil {
		return nil, err
	}
	if g := r.groups[id]; g != nil {
		return clone(g), nil
	}
	return nil, nil
}

// SetGroupAttributes sets the attributes named in attrs, keeping the others.
func (r *Realm) SetGroupAttributes(_ context.Context, id string, attrs map[string][]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("SetGroupAttributes", id); err != nil {
		return err
	}
	g := r.groups[id]
	if g == nil {
		return Error("update group "+id, 404)
	}
	merged := maps.Clone(g.Attributes)
	if merged == nil {
		merged = map[string][]string{}
	}
	maps.Copy(merged, attrs)
	setAttributes(g, merged)
	return nil
}

// DeleteGroup deletes a managed group with its subtree; a group with an
// unmanaged group in its subtree is refused, a missing one is fine.
func (r *Realm) DeleteGroup(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("DeleteGroup", id); err != nil {
		return err
	}
	g := r.groups[id]
	if g == nil {
		return nil
	}
	var check func(g *keycloak.Group) error
	check = func(g *keycloak.Group) error {
		if !g.Managed {
			return keycloak.NotManagedError("delete group "+g.Name, "group "+g.Path+" is not ours to delete")
		}
		for _, k := range r.children(g.ID) {
			if err := check(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(g); err != nil {
		return err
	}
	r.drop(id)
	return nil
}

// HasSubGroups reports whether the group has a subgroup.
func (r *Realm) HasSubGroups(_ context.Context, id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("HasSubGroups", id); err != nil {
		return false, err
	}
	if r.groups[id] == nil {
		return false, Error("list children of group "+id, 404)
	}
	return len(r.children(id)) > 0, nil
}

// ManagedGroups lists every managed group, at any depth, by path.
func (r *Realm) ManagedGroups(context.Context) ([]keycloak.Group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("ManagedGroups"); err != nil {
		return nil, err
	}
	var out []keycloak.Group
	for _, g := range r.groups {
		if g.Managed {
			out = append(out, *clone(g))
		}
	}
	slices.SortFunc(out, func(a, b keycloak.Group) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// FindUser looks a user up by id or by exact username; nil when there is
// none. A lookup by id that finds nothing tries the username, as the
// client does.
func (r *Realm) FindUser(_ context.Context, ref string, byID bool) (*keycloak.User, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("FindUser", ref); err != nil {
		return nil, err
	}
	if byID {
		if u, ok := r.users[ref]; ok {
			return &u, nil
		}
	}
	for _, u := range r.users {
		if u.Username == ref {
			return &u, nil
		}
	}
	return nil, nil
}

// AddMember adds a user to a group; a missing user or group is a 404.
func (r *Realm) AddMember(_ context.Context, groupID, userID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("AddMember", groupID, userID); err != nil {
		return err
	}
	if r.groups[groupID] == nil {
		return Error("add member", 404)
	}
	if _, ok := r.users[userID]; !ok {
		return Error("add member", 404)
	}
	if r.members[groupID] == nil {
		r.members[groupID] = map[string]bool{}
	}
	r.members[groupID][userID] = true
	return nil
}

// RemoveMember removes a user from a group; not a member is fine.
func (r *Realm) RemoveMember(_ context.Context, groupID, userID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("RemoveMember", groupID, userID); err != nil {
		return err
	}
	delete(r.members[groupID], userID)
	return nil
}

// Members lists a group's members by id; a missing group is a 404.
func (r *Realm) Members(_ context.Context, groupID string) ([]keycloak.User, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("Members", groupID); err != nil {
		return nil, err
	}
	if r.groups[groupID] == nil {
		return nil, Error("list members of group "+groupID, 404)
	}
	var out []keycloak.User
	for id := range r.members[groupID] {
		out = append(out, r.users[id])
	}
	slices.SortFunc(out, func(a, b keycloak.User) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
