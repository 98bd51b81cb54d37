package waldursim

import (
	"bytes"
	"io"
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

type activeFault struct {
	Fault
	left int
}

// apiMiddleware logs every /api/ call, applies injected faults and then
// authenticates.
func (s *Server) apiMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 10<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := simkit.NewRecorder(w)
		defer func() {
			s.mu.Lock()
			s.calls = append(s.calls, Call{
				Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
				Body: string(body), Status: rec.Status(), UserAgent: r.UserAgent(),
			})
			s.mu.Unlock()
		}()
		if s.cfg.Latency > 0 {
			select {
			case <-time.After(s.cfg.Latency):
			case <-r.Context().Done():
				return
			}
		}
		if f := s.takeFault(r); f != nil {
			if f.DelayMS > 0 {
				select {
				case <-time.After(time.Duration(f.DelayMS) * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			if f.Status != 0 {
				b := f.Body
				if b == "" {
					b = `{"detail": "Injected fault."}`
				}
				rec.Header().Set("Content-Type", "application/json")
				rec.WriteHeader(f.Status)
				_, _ = io.WriteString(rec, b)
				return
			}
		}
		next.ServeHTTP(rec, r)
	})
}

func (s *Server) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.fault {
		if (f.Method == "" || strings.EqualFold(f.Method, r.Method)) && strings.HasPrefix(r.URL.Path, f.PathPrefix) {
			f.left--
			if f.left <= 0 {
				s.fault = append(s.fault[:i], s.fault[i+1:]...)
			}
			cp := f.Fault
			return &cp
		}
	}
	return nil
}

// authenticate resolves "Authorization: Token <t>" or "Bearer <t>" to a
// user, with DRF's messages.
func (s *Server) authenticate(r *http.Request) (*User, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, detail(http.StatusUnauthorized, "Authentication credentials were not provided.")
	}
	scheme, tok, _ := strings.Cut(h, " ")
	if (!strings.EqualFold(scheme, "Token") && !strings.EqualFold(scheme, "Bearer")) || strings.TrimSpace(tok) == "" {
		return nil, detail(http.StatusUnauthorized, "Invalid token header. No credentials provided.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.st.userByToken(strings.TrimSpace(tok))
	if u == nil {
		return nil, detail(http.StatusUnauthorized, "Invalid token.")
	}
	return u, nil
}
