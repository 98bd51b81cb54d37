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
	match := func(have, want string) bool {
		have, want = strings.ToLower(have), strings.ToLower(want)
		if exact {
			return have == want
		}
		return strings.Contains(have, want)
	}
	var out []*user
	for _, u := range rm.users {
		ok := true
		if q.Has("search") {
			s := strings.ToLower(strings.Trim(q.Get("search"), "*"))
			ok = strings.Contains(u.username, s) || strings.Contains(u.email, s) ||
				strings.Contains(strings.ToLower(u.firstName), s) || strings.Contains(strings.ToLower(u.lastName), s)
		} else {
			for field, have := range map[string]string{"username": u.username, "email": u.email, "firstName": u.firstName, "lastName": u.lastName} {
				if q.Has(field) && !match(have, q.Get(field)) {
					ok = false
				}
			}
		}
		if q.Has("enabled") && boolParam(r, "enabled", true) != u.enabled {
			ok = false
		}
		if ok {
			out = append(out, u)
		}
	}
	sortUsers(out)
	return out
}

// listUsers is GET /users: first (0), max (100, Keycloak's default),
// briefRepresentation (false).
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	first, max, err := pageParams(r, 100)
	if err != nil {
		return err
	}
	brief := boolParam(r, "briefRepresentation", false)
	users := page(rm.findUsers(r), first, max)
	out := make([]*userRep, 0, len(users))
	for _, u := range users {
		out = append(out, userRepOf(u, brief))
	}
	simkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

// countUsers is GET /users/count: a bare number.
func (s *Server) countUsers(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	simkit.WriteJSON(w, http.StatusOK, len(rm.findUsers(r)))
	return nil
}

// getUser is GET /users/{id}.
func (s *Server) getUser(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	u := rm.users[r.PathValue("id")]
	if u == nil {
		return errUserNotFound
	}
	simkit.WriteJSON(w, http.StatusOK, userRepOf(u, false))
	return nil
}

// listUserGroups is GET /users/{id}/groups: the groups the user is a
// direct member of, by path; search, first, max (no limit by default),
// briefRepresentation (true).
func (s *Server) listUserGroups(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	u := rm.users[r.PathValue("id")]
	if u == nil {
		return errUserNotFound
	}
	first, max, err := pageParams(r, -1)
	if err != nil {
		return err
	}
	gs := rm.userGroups(u.id)
	if search := r.URL.Query().Get("search"); search != "" {
		gs = named(gs, search, false)
	}
	gs = page(gs, first, max)
	simkit.WriteJSON(w, http.StatusOK, rm.groupReps(gs, boolParam(r, "briefRepresentation", true), false))
	return nil
}

// joinGroup is PUT /users/{id}/groups/{groupId}; joining twice is fine.
func (s *Server) joinGroup(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	u, g, err := rm.membershipPair(r)
	if err != nil {
		return err
	}
	rm.join(u.id, g.id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// leaveGroup is DELETE /users/{id}/groups/{groupId}; leaving a group one
// is not in is fine.
func (s *Server) leaveGroup(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	u, g, err := rm.membershipPair(r)
	if err != nil {
		return err
	}
	rm.leave(u.id, g.id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// membershipPair resolves the user first, then the group, with Keycloak's
// two different 404 messages.
func (rm *realm) membershipPair(r *http.Request) (*user, *group, *apiError) {
	u := rm.users[r.PathValue("id")]
	if u == nil {
		return nil, nil, errUserNotFound
	}
	g := rm.groups[r.PathValue("groupId")]
	if g == nil {
		return nil, nil, errorCode(http.StatusNotFound, "Group not found")
	}
	return u, g, nil
}
