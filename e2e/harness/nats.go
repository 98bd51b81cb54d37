package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// NATSServer is a standalone nats-server process with JetStream, on a
// fixed loopback port and store, so it can be stopped and started again as
// the same server (to test an outage).
type NATSServer struct {
	Port  int
	Store string
	bin   string
	conf  string
	proc  *Process
	t     testing.TB
}

// StartNATS starts a nats-server for the test.
func StartNATS(t testing.TB) *NATSServer {
	t.Helper()
	bin, err := NATSServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := &NATSServer{Port: FreePort(t), Store: filepath.Join(dir, "js"), bin: bin, conf: filepath.Join(dir, "nats.conf"), t: t}
	// sync_interval: always, as sitebus's embedded server does: a PubAck
	// means the event is on disk.
	conf := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream {\n  store_dir: %q\n  sync_interval: always\n}\n", n.Port, n.Store)
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(func() { n.Stop() })
	return n
}

// URL is the client URL.
func (n *NATSServer) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.Port) }

// Start (re)starts the server and waits for its port.
func (n *NATSServer) Start() {
	n.t.Helper()
	p, err := StartProcess("nats-server", n.bin, []string{"-c", n.conf}, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	n.proc = p
	p.cleanup(n.t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) || p.Exited() {
			n.t.Fatalf("nats-server did not start: %v\n%s", err, p.Tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server (an outage, as far as its clients can tell).
func (n *NATSServer) Stop() {
	if n.proc != nil {
		_ = n.proc.Stop(10 * time.Second)
	}
}
