// Package testenv holds what every local-process harness (RabbitMQ,
// Kubernetes, NATS, sitebus) needs from the machine: free loopback ports,
// and one rule for a missing dependency — skip with the reason on a
// developer's machine, fail in CI, where a skipped test would prove nothing.
package testenv

import (
	"net"
	"os"
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
// releasing them together; the window for a clash is tiny on a test machine.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
