package kube

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
)

func apiServerArgs(c *Cluster, port int, saKey, saPub, tokens string) []string {
	return []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// The server writes a self-signed certificate here on first start
		// (SANs include the bind address 127.0.0.1) and reuses it on
		// restart, so clients verify it via CAFile throughout.
		"--cert-dir=" + filepath.Dir(c.CAFile),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The endpoints of the "kubernetes" Service may not be loopback
		// addresses; without this the server logs a rejected update every
		// few seconds. Nothing here runs in-cluster clients that need them.
		"--endpoint-reconciler-type=none",
	}
}

// startAPIServer starts kube-apiserver and waits until /readyz says 200.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	return c.startProcess(ctx, APIServer, filepath.Join(BinDir(), apiServerBin), c.apiArgs, &c.apiserver, probe{url: c.Server + "/readyz", caFile: c.CAFile, token: c.Token})
}

// StopAPIServer stops the API server (SIGTERM) and leaves etcd and the
// controller manager running, to test how clients ride out an API outage.
// Do not call it on the Shared cluster.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p == nil {
		return errors.New("kube-apiserver was never started")
	}
	if err := stopProcess(p); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	return nil
}

// StartAPIServer starts the API server again after StopAPIServer: same
// port, etcd, certificate and tokens, so existing clients and kubeconfigs
// keep working. It waits until the server is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p != nil && !p.Exited() {
		return errors.New("kube-apiserver is still running")
	}
	if err := c.startAPIServer(ctx); err != nil {
		return fmt.Errorf("restart: %w\n--- kube-apiserver (tail) ---\n%s", err, c.LogTail(APIServer, 30))
	}
	return nil
}
