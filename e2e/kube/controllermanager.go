package kube

import (
	"context"
	"path/filepath"
	"strconv"
)

func controllerManagerArgs(c *Cluster, port int, saKey string) []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		// Without these it cannot authenticate callers of its own
		// endpoints (and logs warnings saying so). The skip: the API server
		// has no client CA, so it publishes no extension-apiserver-
		// authentication ConfigMap to look up.
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--authentication-skip-lookup",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// Its self-signed serving certificate lands here, so the health
		// probe can verify it.
		"--cert-dir=" + filepath.Dir(c.kcmCAFile),
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + c.CAFile,
		"--controllers=*",
	}
}

// startControllerManager starts kube-controller-manager and waits until its
// /healthz says 200 (an always-allowed path, so no credentials).
func (c *Cluster) startControllerManager(ctx context.Context) error {
	return c.startProcess(ctx, ControllerManager, filepath.Join(BinDir(), controllerManagerBin), c.kcmArgs, &c.kcm, probe{url: c.kcmHealthz, caFile: c.kcmCAFile})
}
