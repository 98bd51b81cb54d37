package simkit

import (
	"net/http"
	"time"
)

// AdminFault is Fault as a simulator's HTTP admin API takes it.
type AdminFault struct {
	Method        string `json:"method"`
	PathPrefix    string `json:"path_prefix"`
	QueryContains string `json:"query_contains"`
	Status        int    `json:"status"`
	Body          string `json:"body"`
	DelayMS       int    `json:"delay_ms"`
	Drop          bool   `json:"drop"`
	Count         int    `json:"count"`
}

// Fault is f as a Fault.
func (f AdminFault) Fault() Fault {
	return Fault{Method: f.Method, PathPrefix: f.PathPrefix, QueryContains: f.QueryContains, Status: f.Status,
		Body: f.Body, Delay: time.Duration(f.DelayMS) * time.Millisecond, Drop: f.Drop, Count: f.Count}
}

// Admin is the part of a simulator's /sim/ admin API that every simulator
// serves alike: the call log reset and fault injection. Each simulator
// adds its own inspection routes (and GET /sim/calls, in its own format).
type Admin struct {
	ResetCalls  func()
	AddFault    func(Fault)
	ClearFaults func()
	Down        func(bool)
	// Handlers reads the bodies and answers the errors in the simulated
	// service's format (see BadBody).
	Handlers Handlers
}

// Routes adds to mux:
//
//	DELETE /sim/calls   reset the call log
//	POST   /sim/faults  add a fault (AdminFault)
//	DELETE /sim/faults  clear faults
//	POST   /sim/down    {"down":bool}
func (a Admin) Routes(mux *http.ServeMux) {
	noContent := func(f func()) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			f()
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux.HandleFunc("DELETE /sim/calls", noContent(a.ResetCalls))
	mux.HandleFunc("POST /sim/faults", Handle(a.Handlers, func(_ *http.Request, f AdminFault) (Reply, error) {
		a.AddFault(f.Fault())
		return Reply{Status: http.StatusNoContent}, nil
	}))
	mux.HandleFunc("DELETE /sim/faults", noContent(a.ClearFaults))
	type downIn struct {
		Down bool `json:"down"`
	}
	mux.HandleFunc("POST /sim/down", Handle(a.Handlers, func(_ *http.Request, in downIn) (Reply, error) {
		a.Down(in.Down)
		return Reply{Status: http.StatusNoContent}, nil
	}))
}
