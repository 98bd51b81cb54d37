package kube

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// One cluster per test binary: a start costs several seconds.
var shared struct {
	mu     sync.Mutex
	active bool
	tried  bool
	c      *Cluster
	err    error
}

// Runner runs a test binary's tests: *testing.M, or another shared
// instance's wrapper, so shared instances compose.
type Runner interface{ Run() int }

// RunShared runs the tests of a package and stops the shared cluster (if a
// test asked for one) afterwards. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }
func RunShared(m Runner) int {
	shared.mu.Lock()
	shared.active = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kube: stop shared cluster: %v\n", err)
		}
		shared.c = nil
	}
	return code
}

// SharedRunner wraps m so that running it runs RunShared(m), for a
// TestMain that needs several shared instances:
//
//	func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }
func SharedRunner(m Runner) Runner { return runFunc(func() int { return RunShared(m) }) }

type runFunc func() int

func (f runFunc) Run() int { return f() }

// Shared returns the binary-wide cluster (with controller manager),
// starting it on first use. It skips t when the binaries are missing (fails
// in CI) and fails t when the cluster does not come up. Tests must not stop
// its API server and should keep to their own namespaces. The package must
// call RunShared from TestMain, which stops the cluster; otherwise Shared
// fails the test rather than leak processes.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	Require(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.active {
		t.Fatal("kube.Shared needs kube.RunShared in TestMain (it stops the cluster)")
	}
	if !shared.tried {
		shared.tried = true
		shared.c, shared.err = Start(context.Background(), Options{})
		if shared.err == nil {
			t.Logf("kube: shared cluster at %s ready in %s", shared.c.Server, shared.c.Timings.Total.Round(100*time.Millisecond))
		}
	}
	if shared.err != nil {
		t.Fatalf("start shared Kubernetes cluster: %v", shared.err)
	}
	return shared.c
}

// StartForTest starts a dedicated cluster stopped by t.Cleanup, for tests
// that must not share one (e.g. ones that stop the API server).
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if err := available(!opts.NoControllerManager); err != nil {
		unavailable(t, err)
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start Kubernetes cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, comp := range []string{Etcd, APIServer, ControllerManager} {
				t.Logf("--- %s (tail) ---\n%s", comp, c.LogTail(comp, 40))
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop Kubernetes cluster: %v", err)
		}
	})
	return c
}
