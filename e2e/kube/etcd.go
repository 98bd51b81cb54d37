package kube

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/sitebus/sitebus/e2e/harness"
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
	p, err := harness.StartProcess(Etcd, bin, args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = p
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := (probe{url: c.EtcdURL + "/health", want: `"health":"true"`, proc: p}).wait(wctx); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}
