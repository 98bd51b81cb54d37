package keycloaksim

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /realms/{realm}/protocol/openid-connect/token", simkit.Handle(simkit.Handlers{}, s.token))
	for pattern, h := range map[string]adminHandler{
		"GET ":                                getRealm, // the realm itself
		"GET /groups":                         listGroups,
		"POST /groups":                        func(q req) (any, *apiError) { return addGroup(q, "") },
		"GET /groups/{id}":                    getGroup,
		"PUT /groups/{id}":                    updateGroup,
		"DELETE /groups/{id}":                 deleteGroup,
		"GET /groups/{id}/children":           listChildren,
		"POST /groups/{id}/children":          func(q req) (any, *apiError) { return addGroup(q, q.g.id) },
		"GET /groups/{id}/members":            listMembers,
		"GET /users":                          listUsers,
		"GET /users/{id}":                     getUser,
		"GET /users/{id}/groups":              listUserGroups,
		"PUT /users/{id}/groups/{groupId}":    func(q req) (any, *apiError) { return member(q, true) },
		"DELETE /users/{id}/groups/{groupId}": func(q req) (any, *apiError) { return member(q, false) },
	} {
		method, path, _ := strings.Cut(pattern, " ")
		mux.Handle(method+" /admin/realms/{realm}"+path, s.admin(h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { simkit.WriteError(w, errNoRoute) })

	// The admin API (GET /sim/calls and simkit's fault routes) sits
	// outside faults and the call log, so a test is never locked out of
	// inspecting the simulator; Keycloak has no /sim/ paths of its own.
	top := http.NewServeMux()
	top.HandleFunc("GET /sim/calls", func(w http.ResponseWriter, _ *http.Request) {
		simkit.WriteJSON(w, http.StatusOK, s.Calls())
	})
	s.AdminRoutes(top, func(w http.ResponseWriter, _ string) { simkit.WriteError(w, errBadJSON) })
	top.Handle("/", s.Middleware(mux))
	return top
}

// admin authenticates the bearer token, then resolves the realm (Keycloak
// checks the token first: an unknown realm with a bad token is a 401).
func (s *Server) admin(h adminHandler) http.Handler {
	return simkit.Handle(simkit.Handlers{}, func(r *http.Request, _ struct{}) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.authorize(r, r.PathValue("realm")); err != nil {
			return nil, err
		}
		rm := s.realms[r.PathValue("realm")]
		if rm == nil {
			return nil, errRealmNotFound
		}
		q := req{Request: r, rm: rm}
		// A route on /groups/{id} or /users/{id} is on that object.
		if strings.Contains(r.Pattern, "/groups/{id}") {
			if q.g = rm.groups[r.PathValue("id")]; q.g == nil {
				return nil, errGroupNotFound
			}
		} else if strings.Contains(r.Pattern, "/users/{id}") {
			if q.u = rm.users[r.PathValue("id")]; q.u == nil {
				return nil, errUserNotFound
			}
		}
		switch out, err := h(q); {
		case err != nil:
			return nil, err
		case out == nil:
			return simkit.Reply{Status: http.StatusNoContent}, nil
		default:
			return out, nil
		}
	})
}

func getRealm(q req) (any, *apiError) {
	return realmRep{ID: q.rm.id, Realm: q.rm.name, Enabled: true, SSLRequired: "external"}, nil
}

// apiError is an error response with the body Keycloak sends for it.
type apiError = simkit.Error

// errorMessage is the {"errorMessage": ...} shape of Keycloak's
// ErrorResponse (validation and conflicts).
func errorMessage(status int, msg string) *apiError {
	return &apiError{Status: status, Body: map[string]string{"errorMessage": msg}}
}

// errorCode is the {"error": ...} shape of JAX-RS exceptions (404s).
func errorCode(status int, msg string) *apiError {
	return &apiError{Status: status, Body: map[string]string{"error": msg}}
}

var (
	errGroupNotFound = errorCode(http.StatusNotFound, "Could not find group by id")
	errUserNotFound  = errorCode(http.StatusNotFound, "User not found")
	errRealmNotFound = errorCode(http.StatusNotFound, "Realm not found.")
	errNoRoute       = errorCode(http.StatusNotFound, "Unable to find matching target resource method")
	errUnauthorized  = simkit.OAuthError(http.StatusUnauthorized, "HttpUnauthorizedException", "HTTP 401 Unauthorized")
	errForbidden     = errorCode(http.StatusForbidden, "HTTP 403 Forbidden")
	errBadJSON       = errorCode(http.StatusBadRequest, "Cannot parse the JSON")
	errNameMissing   = errorMessage(http.StatusBadRequest, "Group name is missing")
)

// req is an authorized admin request on an existing realm, served with
// s.mu held.
type req struct {
	*http.Request
	rm *realm
	g  *group // the {id} of a /groups/{id} route
	u  *user  // the {id} of a /users/{id} route
}

// adminHandler serves one admin endpoint. It returns the body of a 200, or
// nil for a 204, or a simkit.Reply for anything else (a 201).
type adminHandler func(q req) (any, *apiError)

// decode reads a JSON body; Keycloak answers any unreadable one alike.
func decode[T any](r *http.Request) (T, *apiError) {
	var v T
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || json.Unmarshal(data, &v) != nil {
		return v, errBadJSON
	}
	return v, nil
}

// boolParam reads an optional boolean query parameter the way JAX-RS does:
// "true" in any case is true, anything else false.
func boolParam(r *http.Request, name string, def bool) bool {
	v, ok := r.URL.Query()[name]
	if !ok || len(v) == 0 {
		return def
	}
	return strings.EqualFold(v[0], "true")
}

// paged applies Keycloak's first (default 0) and max (default defMax; a
// negative max means no limit) to items. Keycloak answers a malformed
// number with 404 (JAX-RS cannot bind it), which we mimic.
func paged[T any](r *http.Request, items []T, defMax int) ([]T, *apiError) {
	first, limit := 0, defMax
	for name, p := range map[string]*int{"first": &first, "max": &limit} {
		if v := r.URL.Query().Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, errorCode(http.StatusNotFound, "HTTP 404 Not Found")
			}
			*p = n
		}
	}
	items = append([]T{}, items[min(max(first, 0), len(items)):]...)
	if limit >= 0 && limit < len(items) {
		items = items[:limit]
	}
	return items, nil
}
