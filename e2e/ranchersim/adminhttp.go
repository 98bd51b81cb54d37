package ranchersim

import (
	"encoding/json"
	"net/http"
	"time"
)

// adminFault is Fault as the HTTP admin API takes it.
type adminFault struct {
	Method        string `json:"method"`
	PathPrefix    string `json:"path_prefix"`
	QueryContains string `json:"query_contains"`
	Status        int    `json:"status"`
	Body          string `json:"body"`
	DelayMS       int    `json:"delay_ms"`
	Drop          bool   `json:"drop"`
	Count         int    `json:"count"`
}

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
	mux.HandleFunc("DELETE /sim/calls", func(w http.ResponseWriter, _ *http.Request) {
		s.ResetCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /sim/faults", func(w http.ResponseWriter, r *http.Request) {
		var f adminFault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			writeErr(w, invalidBody(err.Error()))
			return
		}
		s.AddFault(Fault{Method: f.Method, PathPrefix: f.PathPrefix, QueryContains: f.QueryContains, Status: f.Status,
			Body: f.Body, Delay: time.Duration(f.DelayMS) * time.Millisecond, Drop: f.Drop, Count: f.Count})
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /sim/down", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Down bool `json:"down"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeErr(w, invalidBody(err.Error()))
			return
		}
		s.Down(in.Down)
		w.WriteHeader(http.StatusNoContent)
	})
}
