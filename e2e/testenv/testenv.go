// Package testenv holds what every local-process harness (RabbitMQ,
// Kubernetes, NATS, sitebus) needs from the machine: free loopback ports,
// and one rule for a missing dependency — skip with the reason on a
// developer's machine, fail in CI, where a skipped test would prove nothing.
package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// FreePorts reserves n distinct loopback ports for processes a test
// starts. They come from below the kernel's ephemeral range (where no
// bind(0) and no outgoing connection of any process lands) and each is
// reserved across processes with a lock file held until this process
// exits, so that two test binaries running in parallel, which pick ports
// for servers they start seconds or a minute later, never pick the same
// one: before, a port picked with bind(0) was taken in that window by
// another package's process (a sitebus-dev test's NATS port, "address
// already in use", under make test-repeat). A port is never handed out
// twice in one process either, so a process restarted on its ports (a
// crash test) finds them free. Where the ephemeral range leaves no room
// below it, ports come from bind(0) as before.
func FreePorts(n int) ([]int, error) {
	issued.Lock()
	defer issued.Unlock()
	lo, hi := reservedRange()
	if hi-lo < 1000 {
		return ephemeralPorts(n)
	}
	if err := os.MkdirAll(lockDir(), 0o755); err != nil {
		return nil, fmt.Errorf("testenv: port locks: %w", err)
	}
	ports := make([]int, 0, n)
	span := hi - lo + 1
	start := rand.IntN(span)
	for i := 0; i < span && len(ports) < n; i++ {
		port := lo + (start+i)%span
		if issued.ports[port] {
			continue
		}
		lock, ok := lockPort(port)
		if !ok {
			continue // another test process holds it
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			lock.Close() // in use by something that does not take our locks
			continue
		}
		l.Close()
		issued.ports[port] = true
		issued.locks = append(issued.locks, lock) // held for the process's life
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("testenv: only %d of %d loopback ports free in %d-%d", len(ports), n, lo, hi)
	}
	return ports, nil
}

// reservedRange is where FreePorts picks: from 10000 up to just below the
// ephemeral range (net.ipv4.ip_local_port_range, 32768 by default).
func reservedRange() (lo, hi int) {
	ephemeral := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				ephemeral = v
			}
		}
	}
	return 10000, ephemeral - 1
}

func lockDir() string { return filepath.Join(os.TempDir(), "sitebus-testenv-ports") }

// lockPort takes port's lock file; the lock goes with the process (the
// kernel drops a flock when its holder dies), so none is ever stale.
func lockPort(port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(lockDir(), strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// ephemeralPorts picks with bind(0), releasing the ports together.
func ephemeralPorts(n int) ([]int, error) {
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

// issued are the ports FreePorts handed out in this process, and the
// lock files that reserve them against other processes.
var issued = struct {
	sync.Mutex
	ports map[int]bool
	locks []*os.File
}{ports: map[int]bool{}}
