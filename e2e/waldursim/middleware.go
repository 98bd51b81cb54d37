package waldursim

import (
	"net/http"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Call is one logged /api/ request.
type Call struct {
	Time      time.Time `json:"time"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Query     string    `json:"query"`
	Body      string    `json:"body"`
	Status    int       `json:"status"`
	UserAgent string    `json:"user_agent"`
}

// Fault makes the next Count (default 1) /api/ requests matching Method
// (empty: any) and PathPrefix wait DelayMS and then answer Status with Body
// (Status 0: pass through after the delay).
type Fault struct {
	Method     string `json:"method"`
	PathPrefix string `json:"path_prefix"`
	Status     int    `json:"status"`
	Body       string `json:"body,omitempty"`
	DelayMS    int    `json:"delay_ms"`
	Count      int    `json:"count"`
}

// latency delays every /api/ answer by Config.Latency.
func (s *Server) latency(next http.Handler) http.Handler {
	if s.cfg.Latency <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(s.cfg.Latency)
		defer t.Stop()
		select {
		case <-t.C:
			next.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}

// Calls returns the log of /api/ calls.
func (s *Server) Calls() []Call {
	return simkit.Map(s.Faults.Calls(), func(c simkit.Call) Call {
		return Call{Time: c.Time, Method: c.Method, Path: c.Path, Query: c.Query, Body: c.Body, Status: c.Status, UserAgent: c.Label}
	})
}

// AddFault injects a fault (see Fault).
func (s *Server) AddFault(f Fault) {
	s.Faults.AddFault(simkit.Fault{Method: f.Method, PathPrefix: f.PathPrefix, Status: f.Status, Body: f.Body,
		Delay: time.Duration(f.DelayMS) * time.Millisecond, Count: max(f.Count, 1)})
}

// authenticate resolves "Authorization: Token <t>" or "Bearer <t>" to a
// user, with DRF's messages. Caller holds s.mu.
func (s *Server) authenticate(r *http.Request) (*User, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, detail(http.StatusUnauthorized, "Authentication credentials were not provided.")
	}
	scheme, tok, _ := strings.Cut(h, " ")
	if (!strings.EqualFold(scheme, "Token") && !strings.EqualFold(scheme, "Bearer")) || strings.TrimSpace(tok) == "" {
		return nil, detail(http.StatusUnauthorized, "Invalid token header. No credentials provided.")
	}
	u := s.st.users[strings.TrimSpace(tok)]
	if u == nil {
		return nil, detail(http.StatusUnauthorized, "Invalid token.")
	}
	return u, nil
}
