package ranchersim

import (
	"net/http"

	"github.com/sitebus/sitebus/e2e/simhttp"
)

// adminRoutes serve the inspection API under /sim/ for a simulator run as
// a process (make run), where tests cannot call Server's methods. It needs
// no key and bypasses faults and the call log. Listen on loopback only.
//
//	GET    /sim/projects   projects        GET    /sim/calls    call log
//	GET    /sim/bindings   bindings        DELETE /sim/calls    reset it
//	GET    /sim/imports    importYaml      POST   /sim/faults   add a fault
//	POST   /sim/down       {"down":bool}   DELETE /sim/faults   clear faults
func (s *Server) adminRoutes(mux *http.ServeMux) {
	get := func(path string, f func() any) {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, f()) })
	}
	get("/sim/projects", func() any { return s.Projects() })
	get("/sim/bindings", func() any { return s.Bindings("") })
	get("/sim/imports", func() any { return s.Imports() })
	get("/sim/calls", func() any { return s.Calls() })
	simhttp.Admin{ResetCalls: s.ResetCalls, AddFault: s.AddFault, ClearFaults: s.ClearFaults, Down: s.Down,
		BadRequest: func(w http.ResponseWriter, msg string) { writeErr(w, invalidBody(msg)) }}.Routes(mux)
}
