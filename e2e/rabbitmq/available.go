package rabbitmq

import (
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

// InCI reports whether we run in CI, where a missing dependency fails.
func InCI() bool { return testenv.InCI() }

// Require skips t (printing the reason) when no broker can be started
// locally, and fails it in CI.
func Require(t testing.TB) {
	t.Helper()
	testenv.Require(t, "RabbitMQ", Available())
}
