package provisioner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// DefaultVMConcurrency is how many VMs one step makes at once when
// Config.VMConcurrency is 0: a zone's nodes in a usual plan
// (sitebus.cluster_vm_concurrency has the same default).
const DefaultVMConcurrency = 5

// makeVMs makes the VMs of nodes, at most r.vmLimit at once (Mastermind
// creates a cluster's servers in parallel; the cap keeps one order from
// flooding the zones' APIs). userData renders a VM's cloud-init; made,
// when set, runs after each VM is made with how many this call has made
// so far.
//
// The records come back in the order of nodes, each holding the ids of
// what was made for its VM, whether or not the others succeeded: a step
// that fails for good removes exactly those (run.failed), and a step
// re-run after a crash adopts what a name lookup finds (every Ensure is
// by name and owner mark), so no VM is made twice. A failure does not
// stop the other VMs: each one either is made and recorded or has its
// error, and the error returned joins every failure, in the order of
// nodes.
func (r *run) makeVMs(ctx context.Context, what string, nodes []ranchercluster.NodePlan,
	userData func(context.Context, ranchercluster.NodePlan) ([]byte, error), made func(ctx context.Context, n int) error,
) ([]ServerRecord, error) {
	recs := make([]ServerRecord, len(nodes))
	errs := make([]error, len(nodes))
	var count atomic.Int64
	var g errgroup.Group
	g.SetLimit(max(r.vmLimit, 1))
	for i, n := range nodes {
		recs[i] = ServerRecord{Name: n.Name, OfferingUUID: n.OfferingUUID}
		g.Go(func() error {
			ud, err := userData(ctx, n)
			if err == nil {
				err = r.ensureServer(ctx, n, ud, &recs[i])
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s %s: %w", what, n.Name, err)
				return nil
			}
			if made != nil {
				errs[i] = made(ctx, int(count.Add(1)))
			}
			return nil
		})
	}
	_ = g.Wait() // every function returns nil: the errors are in errs
	return recs, errors.Join(errs...)
}
