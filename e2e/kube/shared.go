package kube

import (
	"context"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/testenv"
)

// One cluster (with controller manager) per test binary: a start costs
// several seconds.
var shared = testenv.Shared[*Cluster]{
	Pkg: "kube", Noun: "cluster", What: "Kubernetes cluster",
	Start: func() (*Cluster, error) { return Start(context.Background(), Options{}) },
	Stop:  (*Cluster).Stop,
	Started: func(t testing.TB, c *Cluster) {
		t.Logf("kube: shared cluster at %s ready in %s", c.Server, c.Timings.Total.Round(100*time.Millisecond))
	},
}

// Runner runs a test binary's tests: *testing.M, or another shared
// instance's wrapper, so shared instances compose.
type Runner = testenv.Runner

// RunShared runs the tests of a package and stops the shared cluster (if a
// test asked for one) afterwards. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }
func RunShared(m Runner) int { return shared.Run(m) }

// SharedRunner wraps m so that running it runs RunShared(m), for a
// TestMain that needs several shared instances:
//
//	func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }
func SharedRunner(m Runner) Runner { return testenv.RunnerFunc(func() int { return RunShared(m) }) }

// Shared returns the binary-wide cluster (with controller manager),
// starting it on first use. It skips t when the binaries are missing (fails
// in CI) and fails t when the cluster does not come up. Tests must not stop
// its API server and should keep to their own namespaces. The package must
// call RunShared from TestMain, which stops the cluster; otherwise Shared
// fails the test rather than leak processes.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	Require(t)
	return shared.Get(t)
}

// StartForTest starts a dedicated cluster stopped by t.Cleanup, for tests
// that must not share one (e.g. ones that stop the API server).
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	testenv.Require(t, "Kubernetes control plane", available(!opts.NoControllerManager))
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
