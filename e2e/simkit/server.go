package simkit

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Server serves a simulator's handler on an address of its own (Start) or
// on an httptest server (ServeTest), until Close.
type Server struct {
	// Handler is what is served.
	Handler http.Handler
	// Log reports serve errors; nil: slog.Default().
	Log *slog.Logger
	// ShutdownTimeout bounds Close's graceful shutdown.
	ShutdownTimeout time.Duration
	// Cut makes Close cut requests still running (e.g. held by a hanging
	// fault) instead of leaving them: at once on an httptest server, after
	// ShutdownTimeout otherwise.
	Cut bool

	httpSrv *http.Server
	ts      *httptest.Server
	url     string
}

// Start listens on addr (e.g. 127.0.0.1:8080, or 127.0.0.1:0) and serves in
// the background until Close.
func (s *Server) Start(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.httpSrv = &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + l.Addr().String()
	go func() {
		if err := s.httpSrv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log := s.Log
			if log == nil {
				log = slog.Default()
			}
			log.Error("serve", "err", err)
		}
	}()
	return nil
}

// ServeTest serves on an httptest server on 127.0.0.1 and has t.Cleanup
// call closeSim: the simulator's Close, which ends in this Close.
func (s *Server) ServeTest(t testing.TB, closeSim func() error) {
	t.Helper()
	s.ts = httptest.NewServer(s.Handler)
	s.url = s.ts.URL
	t.Cleanup(func() { _ = closeSim() })
}

// URL is the base URL (no trailing slash) once Start or ServeTest ran.
func (s *Server) URL() string { return s.url }

// Close stops serving.
func (s *Server) Close() error {
	var err error
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.ShutdownTimeout)
		if err = s.httpSrv.Shutdown(ctx); err != nil && s.Cut {
			err = s.httpSrv.Close()
		}
		cancel()
	}
	if s.ts != nil {
		if s.Cut {
			s.ts.CloseClientConnections()
		}
		s.ts.Close()
	}
	return err
}
