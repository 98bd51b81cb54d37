// Package natsembed runs a NATS server with JetStream inside the sitebus
// process, for the single-process mode and for tests.
package natsembed

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configures the embedded server.
type Options struct {
	// StoreDir holds the JetStream file store. Required.
	StoreDir string
	// Listen is the client address, "127.0.0.1:4222" by default; port 0 or
	// -1 picks a free port. Loopback by default: the embedded server is a
	// private bus, not a network service.
	Listen string
	// ServerName identifies the server in logs and advisories.
	ServerName string
	// Logger receives the server's own log lines at debug level (nil: silent).
	Logger *slog.Logger

	// ReadyTimeout bounds the wait for the server to accept connections;
	// 15 s by default. Tests raise it: under the race detector on a busy
	// two-core machine, a node of a test cluster has been seen to need
	// longer, and a server that is merely slow is not a failure there.
	ReadyTimeout time.Duration

	// Cluster, when set, makes the server one node of a JetStream cluster
	// (replicated streams in tests; a production cluster runs nats-server).
	// ServerName must then differ between the nodes.
	Cluster *ClusterOptions
}

// ClusterOptions join the embedded server to a cluster.
type ClusterOptions struct {
	// Name of the cluster, the same on every node.
	Name string
	// Listen is this node's route address, host:port.
	Listen string
	// Routes are the route URLs of the nodes (nats-route://host:port); a
	// node's own is ignored, so every node can be given the same list.
	Routes []string
}

// Start starts the server and waits until it accepts connections.
//
// JetStream is flushed to disk before each write is acknowledged
// (sync_interval: always): the STOMP bridge acks a broker frame on the
// strength of that PubAck, so an OS crash must not lose it. This is the
// remedy Jepsen's NATS 2.12.1 analysis points to.
func Start(o Options) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natsembed: StoreDir is required")
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:4222"
	}
	host, portStr, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("natsembed: listen address %q: %w", o.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("natsembed: listen port %q: %w", portStr, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if o.ServerName == "" {
		o.ServerName = "sitebus"
	}
	opts := &server.Options{
		ServerName: o.ServerName,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		SyncAlways: true,
		NoSigs:     true,
		NoLog:      o.Logger == nil,
		// A frame is at most a few KiB; 8 MiB leaves room for replays of
		// large dead letters without inviting abuse.
		MaxPayload: 8 << 20,
	}
	if c := o.Cluster; c != nil {
		if err := clusterOptions(opts, c); err != nil {
			return nil, err
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	if o.Logger != nil {
		s.SetLoggerV2(&slogAdapter{l: o.Logger}, false, false, false)
	}
	go s.Start()
	ready := o.ReadyTimeout
	if ready <= 0 {
		ready = 15 * time.Second
	}
	if !s.ReadyForConnections(ready) {
		s.Shutdown()
		return nil, fmt.Errorf("natsembed: server not ready within %s", ready)
	}
	return s, nil
}

func clusterOptions(opts *server.Options, c *ClusterOptions) error {
	host, portStr, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("natsembed: cluster listen address %q: %w", c.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("natsembed: cluster listen port %q: %w", portStr, err)
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return fmt.Errorf("natsembed: route %q: %w", r, err)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

type slogAdapter struct{ l *slog.Logger }

func (a *slogAdapter) Noticef(f string, v ...any) { a.l.Debug(fmt.Sprintf(f, v...)) }
func (a *slogAdapter) Warnf(f string, v ...any)   { a.l.Warn(fmt.Sprintf(f, v...)) }
func (a *slogAdapter) Fatalf(f string, v ...any)  { a.l.Error(fmt.Sprintf(f, v...)) }
func (a *slogAdapter) Errorf(f string, v ...any)  { a.l.Error(fmt.Sprintf(f, v...)) }
func (a *slogAdapter) Debugf(f string, v ...any)  { a.l.Debug(fmt.Sprintf(f, v...)) }
func (a *slogAdapter) Tracef(f string, v ...any)  {}
