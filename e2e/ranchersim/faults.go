package ranchersim

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simhttp"
)

// Call is one logged request. Bodies are kept (the API key is in the
// Authorization header, which is not logged; the only credentials in
// bodies are the test registry secrets' and the registration tokens of
// node registrations), except of /k8s/ requests, whose bodies stream
// through.
type Call = simhttp.Call

// Fault makes matching requests misbehave (see simhttp.Fault).
// QueryContains tells apart requests that share a path, e.g.
// "action=importYaml" from GET cluster; a Status without Body answers a
// Rancher error body.
type Fault = simhttp.Fault

// newFaults is the call log and fault registry with Rancher's bodies.
func newFaults() *simhttp.Faults {
	return simhttp.NewFaults(simhttp.FaultOptions{
		DownBody: "503 Service Temporarily Unavailable", // Rancher's ingress while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"baseType":"error","type":"error","status":%d,"code":"ServerError","message":"injected fault"}`, status)
		},
		KeepBody: func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/k8s/") },
	})
}

// AddFault injects f; faults are matched in the order they were added.
func (s *Server) AddFault(f Fault) { s.faults.Add(f) }

// ClearFaults removes every fault (not Down).
func (s *Server) ClearFaults() { s.faults.Clear() }

// Down makes every request answer 503 as Rancher behind its ingress does
// while it restarts, until Down(false).
func (s *Server) Down(down bool) { s.faults.Down(down) }

// Calls returns a copy of the call log, oldest first.
func (s *Server) Calls() []Call { return s.faults.Calls() }

// CallCount counts logged requests matching method (empty: any) and path
// prefix; with status > 0 only those answered with that status.
func (s *Server) CallCount(method, pathPrefix string, status int) int {
	return s.faults.CallCount(method, pathPrefix, status)
}

// ResetCalls empties the call log.
func (s *Server) ResetCalls() { s.faults.ResetCalls() }
