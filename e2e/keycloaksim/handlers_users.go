package keycloaksim

import (
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// findUsers applies GET /users filters: search (any of username, email,
// first or last name contains it), or the username/email/firstName/lastName
// fields (equal with exact=true, else contain), case-insensitively, as
// Keycloak compares lower-cased values.
func (rm *realm) findUsers(r *http.Request) []*user {
	q := r.URL.Query()
	exact := boolParam(r, "exact", false)
	has := func(have, want string) bool { return strings.Contains(strings.ToLower(have), strings.ToLower(want)) }
	return simkit.Select(rm.users, func(u *user) string { return u.Username }, func(u *user) bool {
		if q.Has("enabled") && boolParam(r, "enabled", true) == u.Disabled {
			return false
		}
		if s := strings.Trim(q.Get("search"), "*"); q.Has("search") {
			return has(u.Username, s) || has(u.Email, s) || has(u.FirstName, s) || has(u.LastName, s)
		}
		for field, have := range map[string]string{"username": u.Username, "email": u.Email, "firstName": u.FirstName, "lastName": u.LastName} {
			have, want := strings.ToLower(have), strings.ToLower(q.Get(field))
			if q.Has(field) && (exact && have != want || !exact && !strings.Contains(have, want)) {
				return false
			}
		}
		return true
	}, func(u *user) *user { return u })
}

// userList renders one page of users: first (0), max (100, Keycloak's
// default), briefRepresentation (false).
func userList(q req, users []*user) (any, *apiError) {
	users, err := paged(q.Request, users, 100)
	brief := boolParam(q.Request, "briefRepresentation", false)
	return simkit.Map(users, func(u *user) *userRep { return userRepOf(u, brief) }), err
}

// listUsers is GET /users.
func listUsers(q req) (any, *apiError) { return userList(q, q.rm.findUsers(q.Request)) }

// getUser is GET /users/{id}.
func getUser(q req) (any, *apiError) { return userRepOf(q.u, false), nil }

// listUserGroups is GET /users/{id}/groups: the groups the user is a
// direct member of, by path; search, first, max (no limit by default),
// briefRepresentation (true).
func listUserGroups(q req) (any, *apiError) {
	gs := q.rm.userGroups(q.u.ID)
	if search := q.URL.Query().Get("search"); search != "" {
		gs = named(gs, search, false)
	}
	return groupList(q, gs, -1, true, false)
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
