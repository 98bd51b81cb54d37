package provisioner

import (
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Mastermind checks the nodes, then pulls the cluster: a create is done
// only when Rancher shows the cluster itself active. One that is not by
// the deadline is kept (nothing torn down), recorded for its terminate,
// and both the order and the resource are erred with the reason.
func TestAClusterNotActiveByTheDeadlineIsKeptAndErred(t *testing.T) {
	h := newHarness(t)
	h.w.clusterState = "provisioning"
	sg := h.run(t, ClusterCreate, "0000000000000000000000000000000e", attributes(1, 1))
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s (a cluster not active in time must not be undone)", sg.Status, sg.Error)
	}
	w := h.w
	if w.orderState != waldur.OrderStateErred || !strings.Contains(w.orderError, "not show cluster") || !strings.Contains(w.orderError, "waiting for the cluster agent") {
		t.Errorf("order %s: %q, want erred with Rancher's state and message", w.orderState, w.orderError)
	}
	if w.resourceState != "Erred" || w.resourceError != w.orderError {
		t.Errorf("resource %s: %q, want erred with the order's reason", w.resourceState, w.resourceError)
	}
	if n := len(w.byKind("server")); n != 5 {
		t.Errorf("%d servers left, want the cluster kept (1 load balancer, 3 servers, 1 worker)", n)
	}
	if raw, _ := h.plans.Get(t.Context(), hexUUID(resourceUUID)); raw == nil {
		t.Error("no record kept for the terminate")
	}
	if w.metadata["not_ready"] != w.orderError {
		t.Errorf("backend_metadata %v, want not_ready", w.metadata)
	}
}
