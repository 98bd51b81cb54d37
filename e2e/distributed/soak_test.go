package distributed_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
)

// soakPolling: Waldur loses the events it publishes while RabbitMQ is
// down, as Mastermind does; sitebus's polling passes (pending orders, teams
// and flags) are what make up for them, so they run often here.
var soakPolling = []string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=0.25", "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES=1"}

// TestChaosSoak is TestMixedOrdersSettleOnceAcrossReplicas under a seeded
// schedule of faults fired while orders flow: kill -9 of a random service
// process (then restarted), a NATS node restarted, RabbitMQ restarted, the
// API server frozen for seconds. Afterwards every order is settled with
// exactly one terminal call, no namespace or group is orphaned or missing,
// and the DLQ holds only the malformed frame.
//
// The short profile (make test) is SITEBUS_SOAK_ORDERS=120 with 6 faults;
// make soak runs 1,000 orders. SITEBUS_SOAK_SEED replays a run's workload
// and schedule; SITEBUS_SOAK_FAULTS sets the number of faults.
func TestChaosSoak(t *testing.T) {
	orders := envInt(t, "SITEBUS_SOAK_ORDERS", 120)
	nFaults := envInt(t, "SITEBUS_SOAK_FAULTS", max(6, orders/80))
	seed := seedFrom(t, "SITEBUS_SOAK_SEED")
	rng := rand.New(rand.NewPCG(seed, seed^0x50a4))

	s := newSite(t, siteOptions{dedicated: true, keycloak: true, projects: orders, env: soakPolling})
	var procs []string
	for _, p := range s.Distributed.Procs {
		procs = append(procs, p.Name)
	}
	w := newWorkload(rng, orders, s.projects)
	schedule := harness.ChaosSchedule(seed, w.orders, nFaults, procs, s.nats.Names)
	header := fmt.Sprintf("chaos soak: seed %d (replay with SITEBUS_SOAK_SEED=%d SITEBUS_SOAK_ORDERS=%d SITEBUS_SOAK_FAULTS=%d), %d orders over %d resources, fault schedule:\n%s",
		seed, seed, orders, nFaults, w.orders, len(w.resources), harness.FormatSchedule(schedule))
	t.Log(header)
	fmt.Print(header)

	ctx := harness.Context(t, 60*time.Minute)
	malformed := fmt.Sprintf("malformed-%d", seed)
	if err := s.deliverMalformed(ctx, malformed); err != nil {
		t.Fatal(err)
	}
	d := &driver{s: s, orderTimeout: 5 * time.Minute}
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); d.run(ctx, w, 16) }()

	injected := map[harness.FaultKind]int{}
	for i, f := range schedule {
		if !waitFinished(d, done, f.AtSettled) {
			t.Errorf("fault %d (%s) not injected: the orders were through before %d settled", i+1, f, f.AtSettled)
			continue
		}
		began := time.Now()
		s.inject(t, f)
		injected[f.Kind]++
		t.Logf("fault %d injected (%s), took %s; %d of %d orders settled", i+1, f, time.Since(began).Round(time.Millisecond), d.finished.Load(), w.orders)
	}
	<-done
	settled := time.Since(start)

	c := s.verify(t, d, w, []string{malformed})
	var kinds []string
	total := 0
	for _, k := range harness.FaultKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, injected[k]))
		total += injected[k]
	}
	line := c.summary("chaos soak", seed, fmt.Sprintf(", faults %d (%s), events Waldur could not publish %d, all orders settled in %s%s",
		total, strings.Join(kinds, ", "), d.unpublished.Load(), settled.Round(time.Millisecond), s.exitsNote()))
	t.Log(line)
	fmt.Println(line)
}

// waitFinished waits until n orders are settled; false when the driver
// ended first.
func waitFinished(d *driver, done <-chan struct{}, n int) bool {
	for d.finished.Load() < int64(n) {
		select {
		case <-done:
			return d.finished.Load() >= int64(n)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// inject carries out one fault and waits until the part it hit is back.
func (s *site) inject(t *testing.T, f harness.Fault) {
	t.Helper()
	const back = 3 * time.Minute
	switch f.Kind {
	case harness.FaultKillService:
		for _, p := range s.Distributed.Procs {
			if p.Name == f.Target {
				if err := s.Distributed.KillAndRestart(p, back); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				return
			}
		}
		t.Fatalf("%s: no such process", f)
	case harness.FaultRestartNATS:
		if err := s.nats.Restart(f.Target, back); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	case harness.FaultRestartRabbitMQ:
		if err := s.Broker.Restart(harness.Context(t, back)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	case harness.FaultPauseAPIServer:
		if err := s.cluster.PauseAPIServer(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// The pause is the fault itself, not a wait for a condition.
		time.Sleep(f.Pause)
		if err := s.cluster.ResumeAPIServer(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	default:
		t.Fatalf("unknown fault %q", f.Kind)
	}
}
