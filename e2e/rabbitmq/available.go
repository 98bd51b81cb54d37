package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"testing"

	"github.com/sitebus/sitebus/e2e/testenv"
)

const (
	serverScript = "/usr/lib/rabbitmq/bin/rabbitmq-server"
	ctlScript    = "/usr/lib/rabbitmq/bin/rabbitmqctl"
	systemUser   = "rabbitmq"
)

// Available reports why a scratch broker cannot be started here, or nil.
// The Debian scripts insist on running as user rabbitmq, so we need root to
// switch to it.
func Available() error {
	for _, p := range []string{serverScript, ctlScript} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("rabbitmq-server is not installed (%s missing; apt-get install rabbitmq-server)", p)
		}
	}
	if _, err := exec.LookPath("epmd"); err != nil {
		return errors.New("epmd (erlang-base) not found in PATH")
	}
	if _, err := user.Lookup(systemUser); err != nil {
		return fmt.Errorf("system user %q missing: %w", systemUser, err)
	}
	if os.Geteuid() != 0 {
		return errors.New("must run as root to start rabbitmq-server as user rabbitmq")
	}
	return nil
}

// Require skips t (printing the reason) when no broker can be started
// locally, and fails it in CI.
func Require(t testing.TB) {
	t.Helper()
	testenv.Require(t, "RabbitMQ", Available())
}

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
