// Package harness starts the real processes the end-to-end tests run
// against: a nats-server, and sitebus itself, built from this checkout.
package harness

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/e2e/testenv"
)

// NATSServerVersion is the nats-server module version the tests run; it is
// the one go.mod pins, so the standalone server matches the embedded one.
const NATSServerVersion = "v2.15.2"

// CacheDir is where built binaries are kept between runs (outside the repo,
// keyed by version), overridable with SITEBUS_CACHE.
func CacheDir() string {
	if d := os.Getenv("SITEBUS_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "sitebus-cache")
	}
	return filepath.Join(home, ".cache", "sitebus")
}

// RepoRoot finds the checkout root (the directory with go.work).
func RepoRoot() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.work not found above %s", file)
		}
		dir = parent
	}
}

var (
	sitebusOnce sync.Once
	sitebusBin  string
	sitebusErr  error
	natsOnce    sync.Once
	natsBin     string
	natsErr     error
)

// SitebusBinary builds ./services/cmd/sitebus once per test binary, to one
// path per checkout in the cache. Every e2e package is a test binary of its
// own and calls this, so the build goes straight to that path: go build
// leaves an output whose build ID is current alone (no 140 MB relink per
// package), and otherwise links in its work directory and renames the
// result into place, so a package still running the previous build keeps
// its file. The work directory is put beside the output (GOTMPDIR) so that
// the rename is never a copy across file systems.
func SitebusBinary() (string, error) {
	sitebusOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			sitebusErr = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		sitebusBin = filepath.Join(CacheDir(), "bin", fmt.Sprintf("sitebus-e2e-%x", sum[:6]))
		sitebusErr = goBuild(root, sitebusBin, "-ldflags=-X main.version=e2e", "./services/cmd/sitebus")
	})
	return sitebusBin, sitebusErr
}

// NATSServerBinary builds nats-server from the pinned module into the cache
// when it is not there yet.
func NATSServerBinary() (string, error) {
	natsOnce.Do(func() {
		natsBin = filepath.Join(CacheDir(), "bin", "nats-server-"+NATSServerVersion)
		if _, err := os.Stat(natsBin); err == nil {
			return
		}
		root, err := RepoRoot()
		if err != nil {
			natsErr = err
			return
		}
		natsErr = goBuild(filepath.Join(root, "e2e"), natsBin, "github.com/nats-io/nats-server/v2")
	})
	return natsBin, natsErr
}

func goBuild(dir, out string, args ...string) error {
	work := filepath.Join(filepath.Dir(out), "tmp")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", append([]string{"build", "-o", out}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTMPDIR="+work)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", args, err, stderr.String())
	}
	return nil
}

// FreePort returns a loopback port that was free a moment ago and that no
// other caller in this process was given (testenv.FreePorts).
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := testenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// SitebusBinaryOrBuild is the sitebus binary a development command's
// -sitebus flag names (made absolute; it must exist), or, when the flag is
// empty, one built from this checkout (SitebusBinary: it stays in the
// cache for the next run, so the caller removes nothing).
func SitebusBinaryOrBuild(flagValue string) (string, error) {
	if flagValue == "" {
		slog.Info("building sitebus from this checkout")
		bin, err := SitebusBinary()
		if err != nil {
			return "", fmt.Errorf("build sitebus: %w", err)
		}
		return bin, nil
	}
	bin, err := filepath.Abs(flagValue)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("sitebus binary: %w (run `make build`, or leave -sitebus out to build it)", err)
	}
	return bin, nil
}
