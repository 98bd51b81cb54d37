package kube

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/testenv"
)

// Version is the Kubernetes release whose binaries the cluster runs; it
// matches the client-go minor version in go.mod.
const Version = "v1.36.3"

const (
	apiServerBin         = "kube-apiserver"
	controllerManagerBin = "kube-controller-manager"
	etcdBin              = "etcd"
)

// BinDir is where .ci/k8s-binaries.sh puts kube-apiserver and
// kube-controller-manager: $SITEBUS_CACHE/k8s-<Version>.
func BinDir() string { return filepath.Join(harness.CacheDir(), "k8s-"+Version) }

// Available reports why a cluster cannot be started here, or nil.
func Available() error { return available(true) }

func available(withControllerManager bool) error {
	var errs []error
	bins := []string{apiServerBin}
	if withControllerManager {
		bins = append(bins, controllerManagerBin)
	}
	for _, b := range bins {
		p := filepath.Join(BinDir(), b)
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s missing (run .ci/k8s-binaries.sh to build it)", p))
		}
	}
	if _, err := etcdPath(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// etcdPath finds etcd on PATH, falling back to where Debian installs it
// (test runners sometimes have a minimal PATH).
func etcdPath() (string, error) {
	if p, err := exec.LookPath(etcdBin); err == nil {
		return p, nil
	}
	const debian = "/usr/bin/etcd"
	if _, err := os.Stat(debian); err == nil {
		return debian, nil
	}
	return "", errors.New("etcd not found (apt-get install etcd-server)")
}

// Require skips t (printing the reason) when no cluster can be started
// locally, and fails it in CI.
func Require(t testing.TB) {
	t.Helper()
	testenv.Require(t, "Kubernetes control plane", Available())
}
