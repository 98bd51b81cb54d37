package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind is one kind of fault a chaos schedule injects.
type FaultKind string

// The faults of the chaos soak: each is something a production site sees.
const (
	// FaultKillService kill -9s one service process and starts it again
	// (a pod's container OOM-killed or its node lost).
	FaultKillService FaultKind = "kill-service"
	// FaultRestartNATS stops one node of the NATS cluster and starts it
	// again with its store (a rolling upgrade of the StatefulSet).
	FaultRestartNATS FaultKind = "restart-nats-node"
	// FaultRestartRabbitMQ stops Waldur's broker and starts it again:
	// every STOMP session drops, queued frames stay.
	FaultRestartRabbitMQ FaultKind = "restart-rabbitmq"
	// FaultPauseAPIServer freezes the Kubernetes API server (SIGSTOP) for
	// a while, then continues it: calls hang instead of failing fast.
	FaultPauseAPIServer FaultKind = "pause-apiserver"
)

// FaultKinds lists every kind, in the order a schedule's first faults use
// them.
var FaultKinds = []FaultKind{FaultKillService, FaultRestartNATS, FaultRestartRabbitMQ, FaultPauseAPIServer}

// Fault is one scheduled fault.
type Fault struct {
	Kind FaultKind
	// AtSettled: the fault fires once this many orders are settled, so it
	// lands while orders flow however fast the machine is.
	AtSettled int
	// Target is the process (service-replica) or NATS node it hits.
	Target string
	// Pause is how long the API server stays frozen.
	Pause time.Duration
}

func (f Fault) String() string {
	switch f.Kind {
	case FaultKillService:
		return fmt.Sprintf("at %d settled: kill -9 %s, restart it", f.AtSettled, f.Target)
	case FaultRestartNATS:
		return fmt.Sprintf("at %d settled: restart NATS node %s", f.AtSettled, f.Target)
	case FaultPauseAPIServer:
		return fmt.Sprintf("at %d settled: SIGSTOP the API server for %s", f.AtSettled, f.Pause)
	default:
		return fmt.Sprintf("at %d settled: %s", f.AtSettled, f.Kind)
	}
}

// ChaosSchedule draws n faults from seed: every kind at least once (when n
// allows), kinds and targets otherwise at random, firing at increasing
// settled-order counts spread over the first 80% of orders (the rest
// settle with every fault behind them). processes and natsNodes are the
// targets to choose from.
func ChaosSchedule(seed uint64, orders, n int, processes, natsNodes []string) []Fault {
	rng := rand.New(rand.NewPCG(seed, seed^0xc4a05))
	kinds := make([]FaultKind, n)
	for i := range kinds {
		if i < len(FaultKinds) {
			kinds[i] = FaultKinds[i]
		} else {
			kinds[i] = FaultKinds[rng.IntN(len(FaultKinds))]
		}
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	at := make([]int, n)
	span := max(orders*8/10, n)
	for i := range at {
		at[i] = 1 + rng.IntN(span)
	}
	slices.Sort(at)
	out := make([]Fault, n)
	for i, k := range kinds {
		f := Fault{Kind: k, AtSettled: at[i]}
		switch k {
		case FaultKillService:
			f.Target = processes[rng.IntN(len(processes))]
		case FaultRestartNATS:
			f.Target = natsNodes[rng.IntN(len(natsNodes))]
		case FaultPauseAPIServer:
			f.Pause = time.Duration(2000+rng.IntN(4000)) * time.Millisecond
		}
		out[i] = f
	}
	return out
}

// FormatSchedule is the schedule one fault a line, to print with its seed.
func FormatSchedule(faults []Fault) string {
	var b strings.Builder
	for i, f := range faults {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, f)
	}
	return b.String()
}

// Restart stops node name gracefully and starts it again with its store,
// then waits until the JetStream meta leader sees every node current
// again, so the next fault never finds the cluster still below quorum
// from this one.
func (c *NATSCluster) Restart(name string, timeout time.Duration) error {
	n := c.Node(name)
	n.Stop()
	n.Start()
	return c.WaitCurrent(timeout)
}

// WaitCurrent waits until the meta leader sees every node current.
func (c *NATSCluster) WaitCurrent(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for c.metaPeersCurrent() != len(c.Nodes) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("NATS cluster: %d of %d servers current after %s", c.metaPeersCurrent(), len(c.Nodes), timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
