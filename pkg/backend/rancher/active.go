package rancher

import (
	"context"
	"time"
)

// WaitClusterActive polls the v3 cluster until Rancher reports it
// "active", at most timeout: Mastermind's pull_cluster after
// check_cluster_nodes, since nodes can all be active while the cluster
// is still provisioning (its agent not connected, a control plane not
// yet serving). progress (optional) sees each read. active false with no
// error is the timeout; the last read cluster says where it stood.
func (c *ClusterClient) WaitClusterActive(ctx context.Context, id string, timeout time.Duration, progress func(Cluster)) (last Cluster, active bool, err error) {
	active, err = c.pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		cl, err := c.GetCluster(ctx, id)
		if err != nil {
			return false, err
		}
		last = cl
		if progress != nil {
			progress(cl)
		}
		return cl.State == "active", nil
	})
	return last, active, err
}
