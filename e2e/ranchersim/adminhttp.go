package ranchersim

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Call is one logged request. Bodies are kept (the API key is in the
// Authorization header, which is not logged; the only credentials in
// bodies are the test registry secrets' and the registration tokens of
// node registrations), except of /k8s/ requests, whose bodies stream
// through.
type Call = simkit.Call

// Fault makes matching requests misbehave (see simkit.Fault).
// QueryContains tells apart requests that share a path, e.g.
// "action=importYaml" from GET cluster; a Status without Body answers a
// Rancher error body.
type Fault = simkit.Fault

// newFaults is the call log and fault registry with Rancher's bodies.
func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody: "503 Service Temporarily Unavailable", // Rancher's ingress while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"baseType":"error","type":"error","status":%d,"code":"ServerError","message":"injected fault"}`, status)
		},
		KeepBody: func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/k8s/") },
	})
}

// adminRoutes serve the inspection API under /sim/ for a simulator run as
// a process (make run), where tests cannot call Server's methods. It needs
// no key and bypasses faults and the call log. Listen on loopback only.
//
//	GET    /sim/projects   projects        GET    /sim/calls    call log
//	GET    /sim/bindings   bindings        DELETE /sim/calls    reset it
//	GET    /sim/imports    importYaml      POST   /sim/faults   add a fault
//	POST   /sim/down       {"down":bool}   DELETE /sim/faults   clear faults
//	GET    /sim/inventory  provisioned clusters, nodes, tokens, cluster bindings, secrets
//	GET    /sim/drains     drain actions   POST   /sim/node-faults  add a NodeFault
//	DELETE /sim/node-faults  clear them
//
// POST /sim/system-agent/register (RegisterPath) is not part of it: it
// stands in for a node's agent and goes through faults and the call log.
func (s *Server) adminRoutes(mux *http.ServeMux) {
	get := func(path string, f func() any) {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) { simkit.WriteJSON(w, http.StatusOK, f()) })
	}
	get("/sim/projects", func() any { return s.Projects() })
	get("/sim/bindings", func() any { return s.Bindings("") })
	get("/sim/imports", func() any { return s.Imports() })
	get("/sim/calls", func() any { return s.Calls() })
	get("/sim/inventory", func() any { return s.Inventory() })
	get("/sim/drains", func() any { return s.Drains() })
	bad := func(w http.ResponseWriter, msg string) { writeErr(w, invalidBody(msg)) }
	mux.HandleFunc("POST /sim/node-faults", simkit.JSONBody(bad, func(w http.ResponseWriter, _ *http.Request, f NodeFault) {
		s.AddNodeFault(f)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("DELETE /sim/node-faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearNodeFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	s.AdminRoutes(mux, bad)
}
