// Package bustest gives tests a real JetStream: an embedded NATS server
// with its file store in a temporary directory, connections and a bus on
// it, all closed by t.Cleanup.
package bustest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/natsembed"
)

// Server starts an embedded JetStream server on a free loopback port.
// ReadyTimeout is how long a test server may take to accept connections:
// the unit tests run five times over under the race detector, several
// packages at once on two cores (make test-repeat), where a cluster node
// has taken longer than natsembed's default 15 s.
const ReadyTimeout = 2 * time.Minute

func Server(t testing.TB) *server.Server {
	t.Helper()
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", ReadyTimeout: ReadyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Connect opens a connection of its own to s, so a test can cut one
// component off the bus (a crash) while others keep working.
func Connect(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// New returns a bus with sitebus's streams on a fresh server. Without a
// logger in cfg, the bus is quiet unless the test runs with -v.
func New(t testing.TB, cfg bus.Config) *bus.Bus {
	t.Helper()
	return On(t, Server(t), cfg)
}

// On returns a bus with sitebus's streams on server s.
func On(t testing.TB, s *server.Server, cfg bus.Config) *bus.Bus {
	t.Helper()
	return OnConn(t, Connect(t, s), cfg)
}

// OnConn returns a bus with sitebus's streams on connection nc (e.g. one
// to a Cluster).
func OnConn(t testing.TB, nc *nats.Conn, cfg bus.Config) *bus.Bus {
	t.Helper()
	if cfg.Logger == nil && !testing.Verbose() {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b, err := bus.New(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}
