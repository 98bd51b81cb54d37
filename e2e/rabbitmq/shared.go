package rabbitmq

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
)

// One broker per test binary: starting a node costs ~15 s.
var shared struct {
	mu     sync.Mutex
	active bool
	b      *Broker
	err    error
	tried  bool
}

// RunShared runs the tests of a package and stops the shared broker (if a
// test asked for one) afterwards. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }
//
// m is anything with Run() int, so shared instances compose:
// rabbitmq.RunShared(kube.Shared(m)).
func RunShared(m interface{ Run() int }) int {
	shared.mu.Lock()
	shared.active = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b != nil {
		if err := shared.b.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "rabbitmq: stop shared broker: %v\n", err)
		}
		shared.b = nil
	}
	return code
}

// Shared returns the binary-wide broker, starting it on first use. It skips
// t when RabbitMQ is not installed (fails in CI) and fails t when the broker
// is installed but does not come up. The package must call RunShared from
// TestMain, which stops the broker; otherwise Shared fails the test rather
// than leak a node.
func Shared(t testing.TB) *Broker {
	t.Helper()
	if err := Available(); err != nil {
		unavailable(t, err)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.active {
		t.Fatal("rabbitmq.Shared needs rabbitmq.RunShared in TestMain (it stops the broker)")
	}
	if !shared.tried {
		shared.tried = true
		shared.b, shared.err = Start(context.Background(), Options{})
	}
	if shared.err != nil {
		t.Fatalf("start shared RabbitMQ: %v", shared.err)
	}
	return shared.b
}

// StartForTest starts a dedicated broker stopped by t.Cleanup, for tests
// that must not share (e.g. ones that stop the node).
func StartForTest(t testing.TB, opts Options) *Broker {
	t.Helper()
	Require(t)
	b, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start RabbitMQ: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("stop RabbitMQ: %v", err)
		}
	})
	return b
}
