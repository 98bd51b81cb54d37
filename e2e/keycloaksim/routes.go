package keycloaksim

import (
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// adminHandler serves one admin endpoint for an authorized request on an
// existing realm; it runs with s.mu held.
type adminHandler func(w http.ResponseWriter, r *http.Request, rm *realm) *apiError

// onGroup serves an admin endpoint on the group {id}, answering Keycloak's
// "Could not find group by id" when there is none.
func onGroup(h func(w http.ResponseWriter, r *http.Request, rm *realm, g *group) *apiError) adminHandler {
	return func(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
		g := rm.groups[r.PathValue("id")]
		if g == nil {
			return errGroupNotFound
		}
		return h(w, r, rm, g)
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	admin := func(pattern string, h adminHandler) { mux.Handle(pattern, s.admin(h)) }
	const realmPath = "/admin/realms/{realm}"

	mux.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token", s.token)

	admin("GET "+realmPath, s.getRealm)

	admin("GET "+realmPath+"/groups", s.listGroups)
	admin("POST "+realmPath+"/groups", s.createTopGroup)
	admin("GET "+realmPath+"/groups/count", s.countGroups)
	admin("GET "+realmPath+"/groups/{id}", onGroup(s.getGroup))
	admin("PUT "+realmPath+"/groups/{id}", onGroup(s.updateGroup))
	admin("DELETE "+realmPath+"/groups/{id}", onGroup(s.deleteGroup))
	admin("GET "+realmPath+"/groups/{id}/children", onGroup(s.listChildren))
	admin("POST "+realmPath+"/groups/{id}/children", onGroup(s.createChild))
	admin("GET "+realmPath+"/groups/{id}/members", onGroup(s.listMembers))
	admin("GET "+realmPath+"/group-by-path/{path...}", s.groupByPath)

	admin("GET "+realmPath+"/users", s.listUsers)
	admin("GET "+realmPath+"/users/count", s.countUsers)
	admin("GET "+realmPath+"/users/{id}", s.getUser)
	admin("GET "+realmPath+"/users/{id}/groups", s.listUserGroups)
	admin("PUT "+realmPath+"/users/{id}/groups/{groupId}", s.joinGroup)
	admin("DELETE "+realmPath+"/users/{id}/groups/{groupId}", s.leaveGroup)

	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { writeErr(w, errNoRoute) })

	// The admin API (GET /sim/calls and simkit's fault routes) sits
	// outside faults and the call log, so a test is never locked out of
	// inspecting the simulator; Keycloak has no /sim/ paths of its own.
	top := http.NewServeMux()
	top.HandleFunc("GET /sim/calls", func(w http.ResponseWriter, _ *http.Request) {
		simkit.WriteJSON(w, http.StatusOK, s.Calls())
	})
	s.AdminRoutes(top, func(w http.ResponseWriter, _ string) { writeErr(w, errBadJSON) })
	top.Handle("/", s.Faults.Middleware(mux))
	return top
}

// admin authenticates the bearer token, then resolves the realm (Keycloak
// checks the token first: an unknown realm with a bad token is a 401).
func (s *Server) admin(h adminHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.authorize(r, r.PathValue("realm")); err != nil {
			writeErr(w, err)
			return
		}
		rm := s.realms[r.PathValue("realm")]
		if rm == nil {
			writeErr(w, errRealmNotFound)
			return
		}
		if err := h(w, r, rm); err != nil {
			writeErr(w, err)
		}
	})
}

func (s *Server) getRealm(w http.ResponseWriter, _ *http.Request, rm *realm) *apiError {
	simkit.WriteJSON(w, http.StatusOK, realmRep{ID: rm.id, Realm: rm.name, Enabled: true, SSLRequired: "external"})
	return nil
}
