package ranchersim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Call is one logged request. Bodies are kept (Rancher requests carry no
// secrets in their bodies; the key is in the Authorization header, which is
// not logged).
type Call struct {
	Time     time.Time
	Method   string
	Path     string
	Query    string // raw, as sent
	Body     string
	Status   int // 0 when the connection was dropped or the client left
	Duration time.Duration
	Faulted  bool // answered (or delayed) by a fault or Down
}

// Fault makes requests matching Method (empty: any), PathPrefix (empty:
// any) and QueryContains (empty: any; e.g. "action=importYaml", which
// shares its path with GET cluster) misbehave: wait Delay (a hang; the
// request ends early only if the client gives up), then answer Status with
// Body (default: a Rancher error body for Status), or drop the connection
// (Drop), or pass through (Status 0, no Drop). Count limits it to the next
// Count matching requests; 0 means until ClearFaults.
type Fault struct {
	Method        string
	PathPrefix    string
	QueryContains string
	Status        int
	Body          string
	Delay         time.Duration
	Drop          bool
	Count         int
}

type activeFault struct {
	Fault
	left int // < 0: unlimited
}

// AddFault injects f; faults are matched in the order they were added.
func (s *Server) AddFault(f Fault) {
	left := f.Count
	if left <= 0 {
		left = -1
	}
	s.mu.Lock()
	s.faults = append(s.faults, &activeFault{f, left})
	s.mu.Unlock()
}

// ClearFaults removes every fault (not Down).
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Down makes every request answer 503 as Rancher behind its ingress does
// while it restarts, until Down(false).
func (s *Server) Down(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// Calls returns a copy of the call log, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount counts logged requests matching method (empty: any) and path
// prefix; with status > 0 only those answered with that status.
func (s *Server) CallCount(method, pathPrefix string, status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
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
}

// takeFault returns the fault for r, if any, counting it down.
func (s *Server) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return &Fault{Status: http.StatusServiceUnavailable, Body: "503 Service Temporarily Unavailable"}
	}
	for i, f := range s.faults {
		if (f.Method == "" || strings.EqualFold(f.Method, r.Method)) && strings.HasPrefix(r.URL.Path, f.PathPrefix) &&
			strings.Contains(r.URL.RawQuery, f.QueryContains) {
			if f.left > 0 {
				f.left--
				if f.left == 0 {
					s.faults = append(s.faults[:i], s.faults[i+1:]...)
				}
			}
			cp := f.Fault
			return &cp
		}
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets the Kubernetes proxy stream watches through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (Drop).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// maxLoggedBody bounds what the call log keeps of a request body.
const maxLoggedBody = 1 << 20

// middleware logs every request and applies Down and faults before
// authentication and routing, as a proxy in front of Rancher would.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var body []byte
		if !strings.HasPrefix(r.URL.Path, "/k8s/") { // proxied bodies stream through
			body, _ = io.ReadAll(io.LimitReader(r.Body, maxLoggedBody))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := &statusRecorder{ResponseWriter: w}
		f := s.takeFault(r)
		defer func() {
			s.mu.Lock()
			s.calls = append(s.calls, Call{
				Time: start, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body),
				Status: rec.status, Duration: time.Since(start), Faulted: f != nil,
			})
			s.mu.Unlock()
		}()
		if f != nil {
			if f.Delay > 0 {
				t := time.NewTimer(f.Delay)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return
				}
			}
			switch {
			case f.Drop:
				dropConn(w)
				return
			case f.Status != 0:
				b := f.Body
				if b == "" {
					b = fmt.Sprintf(`{"baseType":"error","type":"error","status":%d,"code":"ServerError","message":"injected fault"}`, f.Status)
				}
				ct := "application/json"
				if !strings.HasPrefix(b, "{") {
					ct = "text/plain; charset=utf-8"
				}
				rec.Header().Set("Content-Type", ct)
				rec.WriteHeader(f.Status)
				_, _ = io.WriteString(rec, b)
				return
			}
		}
		next.ServeHTTP(rec, r)
	})
}

// dropConn closes the connection without a response.
func dropConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
