package distributed_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
)

// noPolling leaves events as the only way orders reach sitebus.
var noPolling = []string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=60", "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES=60"}

// teamPolling is noPolling with the periodic team and flag pass every 30
// s. It is part of the design, not a test crutch: the quota service skips
// a flag event while the resource has an order in flight (state Updating)
// and only this pass applies it later.
var teamPolling = []string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=60", "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES=0.5"}

// TestMixedOrdersSettleOnceAcrossReplicas runs a mixed batch (creates,
// updates, terminations; role changes and pause/downscale flips between
// them; one create with a slug no namespace can have; one malformed frame)
// through the distributed topology with two replicas of order and quota.
// Every order is settled in Waldur with exactly one terminal call, the
// ManagedNamespaces and Keycloak groups are exactly what Waldur's
// resources and teams say, and the DLQ holds only the malformed frame.
// SITEBUS_DIST_SEED replays a run's workload.
func TestMixedOrdersSettleOnceAcrossReplicas(t *testing.T) {
	seed := seedFrom(t, "SITEBUS_DIST_SEED")
	const orders = 60
	s := newSite(t, siteOptions{keycloak: true, projects: orders, env: teamPolling})
	w := newWorkload(rand.New(rand.NewPCG(seed, seed^0xd157)), orders, s.projects)
	ctx := harness.Context(t, 10*time.Minute)
	malformed := fmt.Sprintf("malformed-%d", seed)
	if err := s.deliverMalformed(ctx, malformed); err != nil {
		t.Fatal(err)
	}
	d := &driver{s: s, orderTimeout: 2 * time.Minute}
	start := time.Now()
	d.run(ctx, w, 12)
	settled := time.Since(start)
	c := s.verify(t, d, w, []string{malformed})
	line := c.summary("distributed mixed batch", seed, fmt.Sprintf(", %d resources, all orders settled in %s%s", len(w.resources), settled.Round(time.Millisecond), s.exitsNote()))
	t.Log(line)
	fmt.Println(line)
}

// seedFrom reads a seed from env, or draws one; it is logged either way so
// that a failure can be replayed.
func seedFrom(t *testing.T, env string) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(env); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", env, v, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, env, seed)
	return seed
}

// envInt is a positive integer from env, or def.
func envInt(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", env, v)
	}
	return n
}
