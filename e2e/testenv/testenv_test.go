package testenv

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreReservedBelowTheEphemeralRange(t *testing.T) {
	lo, hi := reservedRange()
	if hi-lo < 1000 {
		t.Skipf("this machine's ephemeral range leaves %d-%d: FreePorts falls back to bind(0)", lo, hi)
	}
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p > hi {
			t.Errorf("port %d outside %d-%d", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
		// Another test process asking now is refused the port: its lock
		// is held (flock conflicts across open files, as across processes).
		if f, ok := lockPort(p); ok {
			f.Close()
			t.Errorf("port %d: lock not held, another process could pick it", p)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d not free for the test's server: %v", p, err)
			continue
		}
		l.Close()
	}
	more, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		if seen[p] {
			t.Errorf("port %d handed out again in the same process", p)
		}
	}
}
