package keycloaksim

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// groupBody is what create and update accept.
type groupBody struct {
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Attributes map[string][]string `json:"attributes"`
}

// groupList renders gs as one page of a group list: first (0), max
// (defMax) and briefRepresentation (defBrief); withCount adds each
// group's subGroupCount.
func groupList(q req, gs []*group, defMax int, defBrief, withCount bool) (any, *apiError) {
	gs, err := paged(q.Request, gs, defMax)
	brief := boolParam(q.Request, "briefRepresentation", defBrief)
	return simkit.Map(gs, func(g *group) *groupRep { return q.rm.groupRepOf(g, brief, withCount) }), err
}

// listGroups is GET /groups as Keycloak ≥ 23 serves it: without search or
// q, one page of top-level groups, each with subGroupCount and no inlined
// subGroups; with search (name contains, or equals with exact=true) or q
// (attribute key:value pairs), the matching groups at any depth, paged,
// each shown inside its ancestors (populateHierarchy's default).
func listGroups(q req) (any, *apiError) {
	var matched []*group
	switch v := q.URL.Query(); {
	case v.Has("q"):
		want := parseQuery(v.Get("q"))
		matched = q.rm.groupsWhere(func(g *group) bool {
			for k, v := range want {
				if !slices.Contains(g.attrs[k], v) {
					return false
				}
			}
			return len(want) > 0
		})
	case v.Has("search"):
		all := q.rm.groupsWhere(func(*group) bool { return true })
		matched = named(all, strings.TrimSpace(v.Get("search")), boolParam(q.Request, "exact", false))
	default:
		return groupList(q, q.rm.children(""), -1, true, true)
	}
	matched, err := paged(q.Request, matched, -1)
	return q.rm.hierarchy(matched, boolParam(q.Request, "briefRepresentation", true)), err
}

// parseQuery reads q's "key:value key2:value2", where a key or value
// with spaces is quoted ("site a":"b c"), as Keycloak's SearchQueryUtils
// reads it (less its backslash escapes).
func parseQuery(q string) map[string]string {
	out := map[string]string{}
	for _, m := range queryPair.FindAllStringSubmatch(q, -1) {
		out[strings.Trim(m[1], `"`)] = strings.Trim(m[2], `"`)
	}
	return out
}

var queryPair = regexp.MustCompile(`("[^"]*"|[^\s":]+):("[^"]*"|[^\s"]+)`)

// hierarchy nests each matched group inside its ancestors, as Keycloak's
// GroupUtils.populateGroupHierarchyFromSubGroups does: the result is the
// top-level ancestors, sorted by name, whose subGroups hold only the paths
// to the matches.
func (rm *realm) hierarchy(matched []*group, brief bool) []*groupRep {
	reps := map[string]*groupRep{}
	rep := func(g *group) *groupRep {
		if reps[g.id] == nil {
			reps[g.id] = rm.groupRepOf(g, brief, true)
		}
		return reps[g.id]
	}
	roots := map[string]*group{}
	for _, g := range matched {
		cur := rep(g)
		for g.parent != "" {
			p := rm.groups[g.parent]
			prep := rep(p)
			if !slices.ContainsFunc(prep.SubGroups, func(r *groupRep) bool { return r.ID == cur.ID }) {
				prep.SubGroups = append(prep.SubGroups, cur)
			}
			g, cur = p, prep
		}
		roots[g.id] = g
	}
	return simkit.Map(simkit.SortedBy(roots, groupKey), func(g *group) *groupRep { return reps[g.id] })
}

// addGroup is POST /groups (parent "") and POST /groups/{id}/children:
// 201 with a Location header for a new group (and, for a child, its
// representation); a body with the id of an existing group moves it under
// parent (204).
func addGroup(q req, parent string) (any, *apiError) {
	b, err := decode[groupBody](q.Request)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(b.Name) == "" {
		return nil, errNameMissing
	}
	if b.ID != "" {
		g := q.rm.groups[b.ID]
		if g == nil {
			return nil, errGroupNotFound
		}
		return nil, q.rm.place(g, b, parent)
	}
	g, err := q.rm.createGroup("", b.Name, parent, b.Attributes)
	if err != nil {
		return nil, err
	}
	rep := simkit.Reply{Status: http.StatusCreated,
		Header: http.Header{"Location": {simkit.BaseURL(q.Request) + "/admin/realms/" + q.rm.name + "/groups/" + g.id}}}
	if parent != "" {
		rep.Body = q.rm.groupRepOf(g, false, false)
	}
	return rep, nil
}

// updateGroup is PUT /groups/{id}: renames (unique among siblings) and
// replaces the attributes when the body has them. keycloak-sync marks the
// groups it adopts this way.
func updateGroup(q req) (any, *apiError) {
	b, err := decode[groupBody](q.Request)
	if err != nil {
		return nil, err
	}
	return nil, q.rm.place(q.g, b, q.g.parent)
}

// place renames g to b's name, unique among its new siblings, under
// parent (refusing a cycle), and replaces its attributes when b has them.
func (rm *realm) place(g *group, b groupBody, parent string) *apiError {
	if parent != "" && rm.isAncestor(g.id, parent) {
		return errorMessage(http.StatusBadRequest, "Cannot move group into itself or one of its subgroups")
	}
	if rm.siblingNamed(parent, b.Name, g.id) != nil {
		return duplicateName(parent, b.Name)
	}
	g.parent, g.name = parent, b.Name
	if b.Attributes != nil {
		g.attrs = cloneAttrs(b.Attributes)
	}
	return nil
}

// getGroup is GET /groups/{id}: the full representation with subGroupCount
// and, since Keycloak 23, no inlined subGroups.
func getGroup(q req) (any, *apiError) { return q.rm.groupRepOf(q.g, false, true), nil }

// deleteGroup is DELETE /groups/{id}; the subtree and memberships go too.
func deleteGroup(q req) (any, *apiError) {
	q.rm.deleteGroup(q.g.id)
	return nil, nil
}

// listChildren is GET /groups/{id}/children: first (0), max (10, as in
// Keycloak), briefRepresentation (false), and the search/exact filter of
// Keycloak ≥ 25.
func listChildren(q req) (any, *apiError) {
	kids := q.rm.children(q.g.id)
	if v := q.URL.Query(); v.Has("search") {
		kids = named(kids, v.Get("search"), boolParam(q.Request, "exact", false))
	}
	return groupList(q, kids, 10, false, true)
}

// listMembers is GET /groups/{id}/members: direct members by username,
// first (0), max (100, Keycloak's default page).
func listMembers(q req) (any, *apiError) { return userList(q, q.rm.groupMembers(q.g)) }

// findUsers applies GET /users's username filter (equal with exact=true,
// else contained, case-insensitively as Keycloak compares lower-cased
// values); no username lists every user. Keycloak's
// other user filters are not modelled and are refused, so a client that
// sends one fails here instead of being handed every user.
func (rm *realm) findUsers(r *http.Request) ([]*user, *apiError) {
	q := r.URL.Query()
	for name := range q {
		if !slices.Contains(userParams, name) {
			return nil, errorCode(http.StatusNotImplemented, "keycloaksim does not model the users filter "+strconv.Quote(name))
		}
	}
	exact, want := boolParam(r, "exact", false), strings.ToLower(q.Get("username"))
	return simkit.Select(rm.users, func(u *user) string { return u.Username }, func(u *user) bool {
		have := strings.ToLower(u.Username)
		return !q.Has("username") || exact && have == want || !exact && strings.Contains(have, want)
	}, func(u *user) *user { return u }), nil
}

// userParams are the GET /users parameters findUsers and userList read.
var userParams = []string{"username", "exact", "first", "max", "briefRepresentation"}

// userList renders one page of users: first (0), max (100, Keycloak's
// default), briefRepresentation (false).
func userList(q req, users []*user) (any, *apiError) {
	users, err := paged(q.Request, users, 100)
	brief := boolParam(q.Request, "briefRepresentation", false)
	return simkit.Map(users, func(u *user) *userRep { return userRepOf(u, brief) }), err
}

// listUsers is GET /users.
func listUsers(q req) (any, *apiError) {
	users, err := q.rm.findUsers(q.Request)
	if err != nil {
		return nil, err
	}
	return userList(q, users)
}

// getUser is GET /users/{id}.
func getUser(q req) (any, *apiError) { return userRepOf(q.u, false), nil }

// listUserGroups is GET /users/{id}/groups: the groups the user is a
// direct member of, by path; first, max (no limit by default),
// briefRepresentation (true).
func listUserGroups(q req) (any, *apiError) {
	return groupList(q, q.rm.userGroups(q.u.ID), -1, true, false)
}

// member is PUT (in) and DELETE /users/{id}/groups/{groupId}: joining
// twice is fine, and so is leaving a group one is not in.
func member(q req, in bool) (any, *apiError) {
	g := q.rm.groups[q.PathValue("groupId")]
	if g == nil {
		return nil, errorCode(http.StatusNotFound, "Group not found")
	}
	g.members[q.u.ID] = in
	return nil, nil
}

// groupRep is Keycloak's GroupRepresentation. Empty optional fields are
// left out, as Keycloak's JSON mapper does (NON_NULL).
type groupRep struct {
	ID            string               `json:"id"`
	Name          string               `json:"name"`
	Path          string               `json:"path"`
	ParentID      string               `json:"parentId,omitempty"`
	SubGroupCount *int                 `json:"subGroupCount,omitempty"`
	SubGroups     []*groupRep          `json:"subGroups"`
	Attributes    *map[string][]string `json:"attributes,omitempty"`
	RealmRoles    *[]string            `json:"realmRoles,omitempty"`
	ClientRoles   *map[string][]string `json:"clientRoles,omitempty"`
	Access        map[string]bool      `json:"access,omitempty"`
}

var groupAccess = map[string]bool{
	"view": true, "viewMembers": true, "manageMembers": true, "manage": true, "manageMembership": true,
}

// groupRepOf renders g; brief leaves out attributes and roles, as
// briefRepresentation=true does. Since Keycloak 23 subGroups is never
// inlined here (it is always []), and subGroupCount says how many there are.
func (r *realm) groupRepOf(g *group, brief, withCount bool) *groupRep {
	rep := &groupRep{
		ID: g.id, Name: g.name, Path: r.path(g), ParentID: g.parent,
		SubGroups: []*groupRep{}, Access: groupAccess,
	}
	if withCount {
		n := len(r.children(g.id))
		rep.SubGroupCount = &n
	}
	if !brief {
		attrs := cloneAttrs(g.attrs)
		roles := []string{}
		clientRoles := map[string][]string{}
		rep.Attributes, rep.RealmRoles, rep.ClientRoles = &attrs, &roles, &clientRoles
	}
	return rep
}

// userRep is Keycloak's UserRepresentation.
type userRep struct {
	ID                         string          `json:"id"`
	Username                   string          `json:"username"`
	FirstName                  string          `json:"firstName,omitempty"`
	LastName                   string          `json:"lastName,omitempty"`
	Email                      string          `json:"email,omitempty"`
	EmailVerified              bool            `json:"emailVerified"`
	CreatedTimestamp           int64           `json:"createdTimestamp"`
	Enabled                    bool            `json:"enabled"`
	Totp                       bool            `json:"totp"`
	DisableableCredentialTypes []string        `json:"disableableCredentialTypes"`
	RequiredActions            []string        `json:"requiredActions"`
	NotBefore                  int             `json:"notBefore"`
	Access                     map[string]bool `json:"access,omitempty"`
}

var userAccess = map[string]bool{
	"manageGroupMembership": true, "view": true, "mapRoles": true, "impersonate": true, "manage": true,
}

func userRepOf(u *user, brief bool) *userRep {
	rep := &userRep{
		ID: u.ID, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName,
		Email: u.Email, EmailVerified: u.Email != "", CreatedTimestamp: u.created,
		Enabled: !u.Disabled, DisableableCredentialTypes: []string{}, RequiredActions: []string{},
	}
	if !brief {
		rep.Access = userAccess
	}
	return rep
}

// realmRep is the part of RealmRepresentation clients look at.
type realmRep struct {
	ID          string `json:"id"`
	Realm       string `json:"realm"`
	DisplayName string `json:"displayName,omitempty"`
	Enabled     bool   `json:"enabled"`
	SSLRequired string `json:"sslRequired"`
}
