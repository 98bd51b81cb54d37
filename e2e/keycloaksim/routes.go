package keycloaksim

import (
	"net/http"
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
