package simkit

import (
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// Base is the facade every simulator embeds: the handler, serving it
// (Start, URL, Close, NewTestServer), and the call log and injected faults
// of Faults (AddFault, Down, Calls, …), which the handler applies through
// Faults.Middleware.
type Base struct {
	// Faults is the call log and fault registry.
	*Faults
	handler http.Handler
	srv     Server
}

// Init sets what b serves. Requests still running at Close (e.g. held by
// a hanging fault) are cut after two seconds.
func (b *Base) Init(h http.Handler, log *slog.Logger) {
	b.handler = h
	b.srv = Server{Handler: h, Log: log, ShutdownTimeout: 2 * time.Second, Cut: true}
}

// InitGraceful is Init for a simulator whose Close waits up to wait for
// the requests in flight instead of cutting them.
func (b *Base) InitGraceful(h http.Handler, log *slog.Logger, wait time.Duration) {
	b.handler = h
	b.srv = Server{Handler: h, Log: log, ShutdownTimeout: wait}
}

// Handler serves the simulator's API and its /sim/ admin API at the root.
func (b *Base) Handler() http.Handler { return b.handler }

// Start listens on addr (e.g. 127.0.0.1:8080, or 127.0.0.1:0) and serves in
// the background until Close.
func (b *Base) Start(addr string) error { return b.srv.Start(addr) }

// URL is the base URL (no trailing slash) once Start or NewTestServer ran.
func (b *Base) URL() string { return b.srv.URL() }

// Close stops serving. Requests held by a hanging fault are cut.
func (b *Base) Close() error { return b.srv.Close() }

// ServeTest serves on an httptest server on 127.0.0.1 and has t.Cleanup
// call closeSim, the simulator's Close (see NewTestServer).
func (b *Base) ServeTest(t testing.TB, closeSim func() error) { b.srv.ServeTest(t, closeSim) }

// AdminRoutes adds the fault and call-log routes of Admin for b to mux;
// badRequest answers an unreadable body in the service's error format.
func (b *Base) AdminRoutes(mux *http.ServeMux, badRequest func(w http.ResponseWriter, msg string)) {
	Admin{ResetCalls: b.ResetCalls, AddFault: b.AddFault, ClearFaults: b.ClearFaults, Down: b.Down,
		BadRequest: badRequest}.Routes(mux)
}

// testServer is a simulator NewTestServer can start: Base's ServeTest and
// the simulator's own Close.
type testServer interface {
	ServeTest(t testing.TB, closeSim func() error)
	Close() error
}

// NewTestServer builds a simulator with newSim(opts) and serves it on an
// httptest server on 127.0.0.1, closed by t.Cleanup; an error of newSim
// fails t.
func NewTestServer[S testServer, O any](t testing.TB, newSim func(O) (S, error), opts O) S {
	t.Helper()
	s, err := newSim(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.ServeTest(t, s.Close)
	return s
}
