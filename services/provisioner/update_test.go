package provisioner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func updateAttrs(kv map[string]any) json.RawMessage {
	b, _ := json.Marshal(kv)
	return b
}

// created runs a 3-zone create with workers per zone and resets the order.
func created(t *testing.T, h *harness, workers int) {
	t.Helper()
	if sg := h.run(t, ClusterCreate, "000000000000000000000000000000a1", attributes(3, workers)); sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	h.w.mu.Lock()
	h.w.orderState = waldur.OrderStateExecuting
	h.w.calls = nil
	h.w.mu.Unlock()
}

func TestScaleUpRecreatesVaultForTheNewNodesAndRemovesItAfter(t *testing.T) {
	h := newHarness(t)
	created(t, h, 1)
	issued := len(h.w.secretIDs)
	sg := h.run(t, ClusterUpdate, "000000000000000000000000000000a2", updateAttrs(map[string]any{"worker_nodes_count": 2}))
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("update %s: %s", sg.Status, sg.Error)
	}
	if n := len(h.w.byKind("server")); n != 3+3*5 {
		t.Errorf("%d VMs after scale-up, want 18 (3 load balancers, 3 zones × 3 servers + 2 workers)", n)
	}
	if got := len(h.w.secretIDs) - issued; got != 3 {
		t.Errorf("%d secret-ids issued for 3 new nodes", got)
	}
	if !slices.ContainsFunc(h.w.calls, func(c string) bool { return strings.HasPrefix(c, "vault ensure") }) ||
		len(h.w.policies)+len(h.w.roles)+len(h.w.kv) != 0 {
		t.Errorf("Vault was not made again and removed: calls %v, left %v %v", h.w.calls, h.w.policies, h.w.roles)
	}
	if h.w.orderState != waldur.OrderStateDone {
		t.Errorf("order %s", h.w.orderState)
	}
	if nodes, _ := h.w.metadata["nodes"].([]string); len(nodes) != 15 {
		t.Errorf("backend_metadata lists %d nodes after scale up, want 15", len(nodes))
	}
	// The record now lists the new nodes: the terminate removes them too.
	h.w.orderState = waldur.OrderStateExecuting
	if sg := h.run(t, ClusterTerminate, "000000000000000000000000000000a3", nil); sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if inv := h.w.inventory(); len(inv) != 0 {
		t.Errorf("left after terminate: %v", inv)
	}
}

func TestScaleDown(t *testing.T) {
	tests := map[string]struct {
		workers    int
		drainStuck bool
		wantStatus saga.Status
		wantErr    string
		wantVMs    int
	}{
		"drains, then deletes the VM and the Rancher node": {workers: 1, wantStatus: saga.StatusSucceeded, wantVMs: 3 + 3*4},
		"a drain that does not finish leaves the VM and errs": {workers: 1, drainStuck: true, wantStatus: saga.StatusCompensated,
			wantErr: "Node drain timeout.", wantVMs: 3 + 3*5},
		"the last agent is never removed": {workers: 0, wantStatus: saga.StatusFailed, wantErr: "worker_nodes_count", wantVMs: 3 + 3*5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			created(t, h, 2)
			h.w.drainStuck = tc.drainStuck
			sg := h.run(t, ClusterUpdate, "000000000000000000000000000000b2", updateAttrs(map[string]any{"worker_nodes_count": tc.workers}))
			if sg.Status != tc.wantStatus || !strings.Contains(sg.Error, tc.wantErr) {
				t.Fatalf("update %s: %q, want %s with %q", sg.Status, sg.Error, tc.wantStatus, tc.wantErr)
			}
			if n := len(h.w.byKind("server")); n != tc.wantVMs {
				t.Errorf("%d VMs, want %d", n, tc.wantVMs)
			}
			if tc.wantStatus == saga.StatusSucceeded && (len(h.w.drained) != 3 || len(h.w.deletedNodes) != 3) {
				t.Errorf("drained %v, deleted Rancher nodes %v; want one per zone", h.w.drained, h.w.deletedNodes)
			}
		})
	}
}

func TestRenameRenamesTheRancherCluster(t *testing.T) {
	h := newHarness(t)
	created(t, h, 1)
	sg := h.run(t, ClusterUpdate, "000000000000000000000000000000c2", updateAttrs(map[string]any{"name": "physics-prod"}))
	if sg.Status != saga.StatusSucceeded || h.w.renamed != "physics-prod" {
		t.Fatalf("update %s (%s), cluster renamed to %q", sg.Status, sg.Error, h.w.renamed)
	}
}
