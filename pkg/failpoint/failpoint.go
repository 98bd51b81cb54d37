// Package failpoint lets end-to-end tests stop or crash sitebus at a named
// point (for example between publishing an event and acking its frame), so
// that crash recovery is proven by tests rather than argued in comments.
//
// Failpoints are off unless the SITEBUS_FAILPOINTS environment variable is
// set when the process starts; then each Inject costs one map lookup. The
// variable holds `name=action` pairs separated by `;`:
//
//	pause  block until the context ends (the test then SIGKILLs the process)
//	crash  kill the process at once with SIGKILL
//	error  make Inject return an error
package failpoint

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
)

// EnvVar is the environment variable read at start-up.
const EnvVar = "SITEBUS_FAILPOINTS"

var active = parse(os.Getenv(EnvVar))

func parse(spec string) map[string]string {
	if spec == "" {
		return nil
	}
	m := map[string]string{}
	for _, part := range strings.Split(spec, ";") {
		name, action, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && name != "" {
			m[name] = action
		}
	}
	return m
}

// Inject runs the action configured for name, if any.
func Inject(ctx context.Context, name string) error {
	if active == nil {
		return nil
	}
	action, ok := active[name]
	if !ok {
		return nil
	}
	slog.Warn("failpoint reached", "failpoint", name, "action", action)
	switch action {
	case "pause":
		<-ctx.Done()
		return ctx.Err()
	case "crash":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "error":
		return fmt.Errorf("failpoint %s", name)
	}
	return nil
}

// Set replaces the active failpoints; for in-process tests.
func Set(spec string) { active = parse(spec) }
