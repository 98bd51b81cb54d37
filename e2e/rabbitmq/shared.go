package rabbitmq

import (
	"context"
	"testing"

	"github.com/sitebus/sitebus/e2e/testenv"
)

// One broker per test binary: starting a node costs ~15 s.
var shared = testenv.Shared[*Broker]{
	Pkg: "rabbitmq", Noun: "broker", What: "RabbitMQ",
	Start: func() (*Broker, error) { return Start(context.Background(), Options{}) },
	Stop:  (*Broker).Stop,
}

// RunShared runs the tests of a package and stops the shared broker (if a
// test asked for one) afterwards. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }
//
// m is anything with Run() int, so shared instances compose:
// rabbitmq.RunShared(kube.SharedRunner(m)).
func RunShared(m testenv.Runner) int { return shared.Run(m) }

// Shared returns the binary-wide broker, starting it on first use. It skips
// t when RabbitMQ is not installed (fails in CI) and fails t when the broker
// is installed but does not come up. The package must call RunShared from
// TestMain, which stops the broker; otherwise Shared fails the test rather
// than leak a node.
func Shared(t testing.TB) *Broker {
	t.Helper()
	Require(t)
	return shared.Get(t)
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
