package bustest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sitebus/sitebus/pkg/natsembed"
)

// Cluster is a JetStream cluster of embedded servers on loopback, each
// with its own store in a temporary directory, for replicated streams.
type Cluster struct {
	Servers []*server.Server
	t       testing.TB
}

// StartCluster starts n clustered servers, waits until JetStream has a
// meta leader that sees all of them, and shuts them down in t.Cleanup.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	// Routes must be known before the nodes start, so the route ports are
	// taken from the OS up front (client ports are picked by the servers).
	routePorts, held := freePorts(t, n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = "nats-route://127.0.0.1:" + strconv.Itoa(routePorts[i])
	}
	c := &Cluster{t: t}
	for i := range n {
		// Each port stays held until its own node binds it, so no other
		// process can take it while the nodes before it start.
		_ = held[i].Close()
		s, err := natsembed.Start(natsembed.Options{
			StoreDir:     t.TempDir(),
			Listen:       "127.0.0.1:-1",
			ServerName:   fmt.Sprintf("n%d", i+1),
			ReadyTimeout: ReadyTimeout,
			Cluster: &natsembed.ClusterOptions{
				Name:   "sitebus-test",
				Listen: "127.0.0.1:" + strconv.Itoa(routePorts[i]),
				Routes: routes,
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		c.Servers = append(c.Servers, s)
	}
	c.WaitJetStream(n, 30*time.Second)
	return c
}

// WaitJetStream waits until the JetStream meta leader sees want servers
// online: only then can streams with want replicas be placed.
func (c *Cluster) WaitJetStream(want int, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range c.Running() {
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) >= want {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("JetStream cluster: no meta leader seeing %d servers within %s", want, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Running lists the servers not shut down.
func (c *Cluster) Running() []*server.Server {
	var out []*server.Server
	for _, s := range c.Servers {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// URL lists every node's client URL, comma-separated, for nats.Connect:
// a client fails over to another node when its own goes away.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// Connect opens a connection to the cluster that reconnects forever (to
// whichever node is up), closed by t.Cleanup.
func (c *Cluster) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	return c.connect(t, c.URL())
}

// ConnectTo is Connect to node i first, so a test can stop the node its
// client is on; the connection fails over to the others.
func (c *Cluster) ConnectTo(t testing.TB, i int) *nats.Conn {
	t.Helper()
	urls := []string{c.Servers[i].ClientURL()}
	for j, s := range c.Servers {
		if j != i {
			urls = append(urls, s.ClientURL())
		}
	}
	return c.connect(t, strings.Join(urls, ","), nats.DontRandomize())
}

func (c *Cluster) connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Stop shuts node i down, as a crash would look to its peers and clients.
func (c *Cluster) Stop(i int) {
	c.Servers[i].Shutdown()
	c.Servers[i].WaitForShutdown()
}

// freePorts are n distinct free loopback ports, each with the listener
// that holds it: the caller closes each one just before its node binds the
// port, so the kernel cannot hand it to another process meanwhile.
func freePorts(t testing.TB, n int) ([]int, []net.Listener) {
	t.Helper()
	var (
		ports []int
		held  []net.Listener
	)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		held = append(held, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, held
}
