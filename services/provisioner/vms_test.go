package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
)

// The create of attributes(3, 2) makes 3 servers and 2 workers in each
// of 3 zones: 15 node VMs, named nodePrefix and a number.
const (
	nodePrefix = "k8s-production-cluster-rancher-node-"
	nodeCount  = 15
)

func isNode(name string) bool { return strings.HasPrefix(name, nodePrefix) }

// inFlight counts the node VMs' EnsureServer calls running at once.
// Each call waits until want calls are running (or every node's call has
// started), then all of those go on: a step that made its VMs one after
// another would never get past its first call, and one that made more
// than want at once would be seen doing so. No clock is read.
type inFlight struct {
	mu                             sync.Mutex
	cond                           *sync.Cond
	now, most, started, total, gen int
	want                           int
}

func newInFlight(want, total int) *inFlight {
	f := &inFlight{want: want, total: total}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *inFlight) call(ctx context.Context, name string) (func(), error) {
	if !isNode(name) {
		return func() {}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	gen := f.gen
	f.now++
	f.started++
	f.most = max(f.most, f.now)
	if f.now >= f.want || f.started >= f.total {
		f.gen++ // releases every call waiting now
		f.cond.Broadcast()
	}
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cond.Broadcast()
	})
	defer stop()
	for gen == f.gen && f.started < f.total && ctx.Err() == nil {
		f.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		f.now--
		return nil, err
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.now--
	}, nil
}

// createdOnce fails t for every object the calls show made more than
// once, and returns how many node VMs were made.
func createdOnce(t *testing.T, w *world) (nodes int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]int{}
	for _, c := range w.calls {
		if strings.HasPrefix(c, "create ") {
			seen[c]++
			if strings.HasPrefix(c, "create server "+nodePrefix) {
				nodes++
			}
		}
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d times", c, n)
		}
	}
	return nodes
}

func attemptsOf(sg saga.Saga, name string) int {
	for _, s := range sg.Steps {
		if s.Name == name {
			return s.Attempts
		}
	}
	return 0
}

func TestNodesAreMadeAtOnceUpToTheCap(t *testing.T) {
	for _, limit := range []int{1, 3, DefaultVMConcurrency} {
		t.Run(fmt.Sprintf("cap %d", limit), func(t *testing.T) {
			h := newHarness(t)
			h.acts.vmConcurrency = limit
			f := newInFlight(limit, nodeCount)
			h.w.serverCall = f.call
			sg := h.run(t, ClusterCreate, "00000000000000000000000000000a01", attributes(3, 2))
			if sg.Status != saga.StatusSucceeded {
				t.Fatalf("saga %s: %s", sg.Status, sg.Error)
			}
			if f.most != limit {
				t.Errorf("at most %d node VMs were being made at once, want the cap, %d", f.most, limit)
			}
			if n := createdOnce(t, h.w); n != nodeCount {
				t.Errorf("%d node VMs made, want %d", n, nodeCount)
			}
		})
	}
}

func TestEveryNodeMadeAtOnceIsRecordedInPlanOrder(t *testing.T) {
	h := newHarness(t)
	sg := h.run(t, ClusterCreate, "00000000000000000000000000000a02", attributes(3, 2))
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	raw, err := h.plans.Get(context.Background(), strings.ReplaceAll(resourceUUID, "-", ""))
	if err != nil || raw == nil {
		t.Fatalf("cluster record: %v", err)
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	plan, err := ranchercluster.UnmarshalPlan(rec.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Nodes) != len(plan.Nodes) || len(rec.Nodes) != nodeCount {
		t.Fatalf("%d nodes recorded, %d planned, want %d", len(rec.Nodes), len(plan.Nodes), nodeCount)
	}
	servers := map[string]string{}
	for _, s := range h.w.byKind("server") {
		servers[s.name] = s.id
	}
	for i, n := range rec.Nodes {
		if n.Name != plan.Nodes[i].Name {
			t.Errorf("record %d is %s, the plan's %s", i, n.Name, plan.Nodes[i].Name)
		}
		if n.ServerID == "" || n.ServerID != servers[n.Name] || n.PortID == "" || len(n.VolumeIDs) == 0 {
			t.Errorf("record of %s: %+v; the VM is %q", n.Name, n, servers[n.Name])
		}
	}
}

func TestAFailedNodeFailsTheStepAndTheOthersAreRemovedFromTheirRecords(t *testing.T) {
	h := newHarness(t)
	refused := []string{nodePrefix + "5", nodePrefix + "11"}
	h.w.serverCall = func(_ context.Context, name string) (func(), error) {
		for _, r := range refused {
			if name == r {
				return nil, fault.Errorf(fault.Rejected, "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances")
			}
		}
		return func() {}, nil
	}
	sg := h.run(t, ClusterCreate, "00000000000000000000000000000a03", attributes(3, 2))
	if sg.Status != saga.StatusCompensated {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	// One error names every VM that failed.
	for _, want := range []string{"nodes", "Quota exceeded", refused[0] + ":", refused[1] + ":"} {
		if !strings.Contains(sg.Error, want) {
			t.Errorf("error %q does not name %s", sg.Error, want)
		}
	}
	if n := attemptsOf(sg, "nodes"); n != 1 {
		t.Errorf("nodes step ran %d times; a refusal is final", n)
	}
	if n := createdOnce(t, h.w); n != nodeCount-len(refused) {
		t.Errorf("%d node VMs made, want every one but the refused", n)
	}
	if inv := h.w.inventory(); len(inv) != 0 {
		t.Errorf("left in OpenStack: %v", inv)
	}
	// The step removed what it made from its records: nothing of a VM
	// was left for the tenant's removal to find in the project.
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	for _, c := range h.w.calls {
		if strings.HasSuffix(c, "(emptying its project)") && !strings.Contains(c, "security-group default") {
			t.Errorf("not in any record, found when the project was emptied: %s", c)
		}
	}
}

func TestARerunAfterAnAttemptDiedMidBatchMakesOnlyTheMissingNodes(t *testing.T) {
	h := newHarness(t)
	// The first attempt makes 7 node VMs; then it dies as a killed
	// process does, with the others not made and its output not
	// recorded: each further call fails until every node's has.
	const before = 7
	var mu sync.Mutex
	calls := 0
	h.w.serverCall = func(_ context.Context, name string) (func(), error) {
		if !isNode(name) {
			return func() {}, nil
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls > before && calls <= nodeCount {
			return nil, errors.New("ensure server " + name + ": connection refused")
		}
		return func() {}, nil
	}
	sg := h.run(t, ClusterCreate, "00000000000000000000000000000a04", attributes(3, 2))
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	if n := attemptsOf(sg, "nodes"); n != 2 {
		t.Fatalf("nodes step ran %d times, want the attempt that died and its re-run", n)
	}
	// Every VM, volume and port made once: the re-run adopted the 7 the
	// first attempt made and made the 8 missing.
	if n := createdOnce(t, h.w); n != nodeCount {
		t.Errorf("%d node VMs made, want %d", n, nodeCount)
	}
	if n := len(h.w.byKind("server")); n != nodeCount+3 {
		t.Errorf("%d VMs, want %d nodes and 3 load balancers", n, nodeCount)
	}
}
