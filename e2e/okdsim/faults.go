package okdsim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simhttp"
)

// Call is one logged request. Bodies are not kept (token requests carry
// secrets); TokenID names the bearer token sent, valid or not.
type Call struct {
	simhttp.Call
	TokenID string
}

// Fault makes matching requests misbehave (see simhttp.Fault); a Status
// without Body answers a Kubernetes Status body.
type Fault = simhttp.Fault

func newFaults() *simhttp.Faults {
	return simhttp.NewFaults(simhttp.FaultOptions{
		DownBody: "503 Service Unavailable", // the router in front of the API server while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected fault","reason":"InternalError","code":%d}`, status)
		},
	})
}

// reached records that a request got past fault injection, which tells the
// call log whether a fault answered it (simhttp keeps that in its own log,
// which has no token id).
type reached struct{ yes bool }

type reachedKey struct{}

func markReached(ctx context.Context) {
	if r, ok := ctx.Value(reachedKey{}).(*reached); ok {
		r.yes = true
	}
}

// logged writes the call log around fault injection and the API.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reached{}
		rec := simhttp.NewRecorder(w)
		// Deferred: a dropped connection ends the handler with a panic.
		defer func() {
			c := Call{TokenID: TokenID(bearer(r)), Call: simhttp.Call{
				Time: start, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
				Status: rec.Status(), Duration: time.Since(start), Faulted: !st.yes,
			}}
			s.mu.Lock()
			s.calls = append(s.calls, c)
			s.mu.Unlock()
		}()
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), reachedKey{}, st)))
	})
}

// AddFault injects f; faults are matched in the order they were added.
func (s *Server) AddFault(f Fault) { s.faults.Add(f) }

// ClearFaults removes every fault (not Down).
func (s *Server) ClearFaults() { s.faults.Clear() }

// Down makes every request answer 503 until Down(false).
func (s *Server) Down(down bool) { s.faults.Down(down) }

// Calls returns a copy of the call log, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount counts logged requests matching method (empty: any) and path
// prefix; with status > 0 only those answered with that status.
func (s *Server) CallCount(method, pathPrefix string, status int) int {
	n := 0
	for _, c := range s.Calls() {
		if (method == "" || strings.EqualFold(method, c.Method)) && strings.HasPrefix(c.Path, pathPrefix) &&
			(status == 0 || c.Status == status) {
			n++
		}
	}
	return n
}

// ResetCalls empties the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
	s.faults.ResetCalls()
}
