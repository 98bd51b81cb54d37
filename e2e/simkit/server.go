package simkit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Start listens on addr (e.g. 127.0.0.1:8080, or 127.0.0.1:0) and serves in
// the background until Close.
func (b *Base) Start(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	b.httpSrv = &http.Server{Handler: b.handler, ReadHeaderTimeout: 10 * time.Second}
	b.url = "http://" + l.Addr().String()
	go func() {
		if err := b.httpSrv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("serve", "err", err)
		}
	}()
	return nil
}

// ServeTest serves on an httptest server on 127.0.0.1 and has t.Cleanup
// call closeSim: the simulator's Close, which ends in Base's (see
// NewTestServer).
func (b *Base) ServeTest(t testing.TB, closeSim func() error) {
	t.Helper()
	b.ts = httptest.NewServer(b.handler)
	b.url = b.ts.URL
	t.Cleanup(func() { _ = closeSim() })
}

// URL is the base URL (no trailing slash) once Start or ServeTest ran.
func (b *Base) URL() string { return b.url }

// Close stops serving (see Init and InitGraceful for requests still
// running).
func (b *Base) Close() error {
	var err error
	if b.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), b.wait)
		if err = b.httpSrv.Shutdown(ctx); err != nil && b.cut {
			err = b.httpSrv.Close()
		}
		cancel()
	}
	if b.ts != nil {
		if b.cut {
			b.ts.CloseClientConnections()
		}
		b.ts.Close()
	}
	return err
}
