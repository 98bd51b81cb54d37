package simkit

import (
	"cmp"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	// log reports serve errors (default slog.Default()).
	log *slog.Logger
	// wait bounds Close's graceful shutdown; cut makes Close cut requests
	// still running (e.g. held by a hanging fault) instead of leaving
	// them: at once on an httptest server, after wait otherwise.
	wait time.Duration
	cut  bool

	httpSrv *http.Server
	ts      *httptest.Server
	url     string
}

// Init sets what b serves. Requests still running at Close (e.g. held by
// a hanging fault) are cut after two seconds.
func (b *Base) Init(h http.Handler, log *slog.Logger) {
	b.handler, b.log, b.wait, b.cut = h, cmp.Or(log, slog.Default()), 2*time.Second, true
}

// InitGraceful is Init for a simulator whose Close waits up to wait for
// the requests in flight instead of cutting them.
func (b *Base) InitGraceful(h http.Handler, log *slog.Logger, wait time.Duration) {
	b.handler, b.log, b.wait = h, cmp.Or(log, slog.Default()), wait
}

// Handler serves the simulator's API and its /sim/ admin API at the root.
func (b *Base) Handler() http.Handler { return b.handler }

// AdminRoutes adds the fault and call-log routes of Admin for b to mux;
// badRequest answers an unreadable body in the service's error format.
func (b *Base) AdminRoutes(mux *http.ServeMux, badRequest func(w http.ResponseWriter, msg string)) {
	Admin{ResetCalls: b.ResetCalls, AddFault: b.AddFault, ClearFaults: b.ClearFaults, Down: b.Down,
		Handlers: BadBody(badRequest)}.Routes(mux)
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

// Defaults fills in a simulator's clock (time.Now) and logger
// (slog.Default()) when its options leave them unset, and returns the
// logger tagged with the simulator's name.
func Defaults(name string, now *func() time.Time, log **slog.Logger) *slog.Logger {
	if *now == nil {
		*now = time.Now
	}
	*log = cmp.Or(*log, slog.Default())
	return (*log).With("component", name)
}
