package kube

import (
	"context"
	"path/filepath"
)

// startEtcd runs a single-member etcd with client and peer listeners on
// loopback and waits for /health.
func (c *Cluster) startEtcd(ctx context.Context, bin string, peerPort int) error {
	peer := loopbackURL("http", peerPort)
	args := []string{
		"--name=default",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + c.EtcdURL,
		"--advertise-client-urls=" + c.EtcdURL,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--logger=zap",
		"--log-level=warn",
	}
	return c.startProcess(ctx, Etcd, bin, args, &c.etcd, probe{url: c.EtcdURL + "/health", want: `"health":"true"`})
}
