package keycloaksim

import (
	"time"

	"github.com/sitebus/sitebus/e2e/simhttp"
)

// Call is one logged request. Bodies are not kept: token requests carry
// passwords.
type Call struct {
	Time     time.Time
	Method   string
	Path     string
	Query    string
	Status   int // 0 when the connection was dropped or the client left
	Duration time.Duration
	Faulted  bool // answered (or delayed) by a fault or Down
}

// Fault makes requests matching Method (empty: any) and PathPrefix (empty:
// any) misbehave: wait Delay (a hang; the request ends early only if the
// client gives up), then answer Status with Body, or drop the connection
// (Drop), or pass through (Status 0, no Drop). Count limits it to the next
// Count matching requests; 0 means until ClearFaults. Go's transport
// silently resends an idempotent request once when a reused connection is
// dropped before any response, so a Drop with Count 1 may go unnoticed.
type Fault struct {
	Method     string
	PathPrefix string
	Status     int
	Body       string
	Delay      time.Duration
	Drop       bool
	Count      int
}

// newFaults is the call log and fault registry with Keycloak's bodies; it
// keeps no request bodies.
func newFaults() *simhttp.Faults {
	return simhttp.NewFaults(simhttp.FaultOptions{
		DownBody:  "Service Unavailable",
		ErrorBody: func(int) string { return `{"error":"unknown_error"}` },
	})
}

// AddFault injects f; faults are matched in the order they were added.
func (s *Server) AddFault(f Fault) {
	s.faults.Add(simhttp.Fault{Method: f.Method, PathPrefix: f.PathPrefix, Status: f.Status, Body: f.Body,
		Delay: f.Delay, Drop: f.Drop, Count: f.Count})
}

// ClearFaults removes every fault (not Down).
func (s *Server) ClearFaults() { s.faults.Clear() }

// Down makes every request (token endpoint included) answer 503, as
// Keycloak behind a proxy does while it restarts, until Down(false). For a
// connection-level failure use AddFault(Fault{Drop: true}).
func (s *Server) Down(down bool) { s.faults.Down(down) }

// Calls returns a copy of the call log.
func (s *Server) Calls() []Call {
	var out []Call
	for _, c := range s.faults.Calls() {
		out = append(out, Call{Time: c.Time, Method: c.Method, Path: c.Path, Query: c.Query, Status: c.Status,
			Duration: c.Duration, Faulted: c.Faulted})
	}
	return out
}

// CallCount counts logged requests matching method (empty: any) and path
// prefix; with status > 0 only those answered with that status.
func (s *Server) CallCount(method, pathPrefix string, status int) int {
	return s.faults.CallCount(method, pathPrefix, status)
}

// ResetCalls empties the call log.
func (s *Server) ResetCalls() { s.faults.ResetCalls() }
