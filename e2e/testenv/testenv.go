// Package testenv holds what every local-process harness (RabbitMQ,
// Kubernetes, NATS, sitebus) needs from the machine: free loopback ports,
// and one rule for a missing dependency — skip with the reason on a
// developer's machine, fail in CI, where a skipped test would prove nothing.
package testenv

import (
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
)

// InCI reports whether the environment says we run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Require skips t, printing why, when what is unavailable (err != nil) on
// a developer's machine, and fails t in CI.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("%s required in CI (CI=true): %v", what, err)
	}
	t.Skipf("skipping: %s not available: %v", what, err)
}

// FreePorts reserves n distinct loopback ports by listening on :0 and
// releasing them together. A port is never handed out twice in one test
// process: the kernel may give a port just released to the next bind(0),
// so two harnesses (or two ports of one harness) asking one after the
// other could otherwise get the same one, and a process restarted on its
// ports (a crash test) could find them taken by a harness started since.
// Against other processes on the machine the window is the time between
// this release and the harness's own listen.
func FreePorts(n int) ([]int, error) {
	issued.Lock()
	defer issued.Unlock()
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("testenv: no fresh loopback port after %d tries", tries)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l) // held until all are chosen: no duplicates among them
		port := l.Addr().(*net.TCPAddr).Port
		if issued.ports[port] {
			continue
		}
		issued.ports[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// issued are the ports FreePorts handed out in this process.
var issued = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}
