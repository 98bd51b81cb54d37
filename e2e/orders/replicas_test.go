package orders_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/e2e/harness"
)

// TestReplicatedStreamsKeepOrdersThroughANodeLoss runs `sitebus run
// --nats-url` against a cluster of three nats-server processes with
// sitebus.streams.replicas: 3, orders run as sagas with Keycloak (so every
// kind of stream and bucket is made). Half of a burst of create orders is
// delivered, the node leading the events stream is killed (-9) while they
// are handled, and the other half is delivered while it is down. Every
// stream and bucket has three replicas, and every order is settled with one
// terminal transition, one namespace and its groups made once.
func TestReplicatedStreamsKeepOrdersThroughANodeLoss(t *testing.T) {
	const orders = 30
	cluster := harness.StartNATSCluster(t, 3)
	s := newSite(t, withKeycloak, harness.WithNATS(cluster.URL()), harness.WithSitebusConfig(map[string]any{"streams": map[string]any{"replicas": 3}}))
	kc := s.Keycloak
	alice := member("alice01", "PROJECT.ADMIN")

	nc, err := nats.Connect(cluster.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	var all []crashOrder
	for i := range orders {
		slug := fmt.Sprintf("r3-%02d", i)
		all = append(all, s.undeliveredCreate(slug, alice))
	}
	deliver := func(batch []crashOrder) {
		var wg sync.WaitGroup
		for _, o := range batch {
			wg.Go(func() { s.deliverOrder(o.uuid) })
		}
		wg.Wait()
	}

	start := time.Now()
	first, second := all[:orders/2], all[orders/2:]
	deliver(first)
	// Mid-burst: once the first order is settled, the others of the half
	// are in the handlers or queued on the streams.
	harness.Eventually(t, 60*time.Second, "the first order settled", func() bool { return s.notSettled(first) < len(first) })
	leader := streamLeader(t, js, "SITEBUS_EVENTS")
	inFlight := s.notSettled(first)
	cluster.Node(leader).Kill()
	killedAt := time.Since(start)
	deliver(second)
	s.waitAll(all)
	settled := time.Since(start)

	// Three replicas everywhere, the server says (two of them up).
	want := []string{"SITEBUS_EVENTS", "SITEBUS_DLQ", "SITEBUS_SAGAS", "KV_sitebus_sagas", "KV_sitebus_results",
		"KV_sitebus_stomp_subscriptions", "KV_sitebus_keycloak_pending"}
	var names []string
	for name := range js.StreamNames(ctx(t)).Name() {
		names = append(names, name)
		st, err := js.Stream(ctx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		if n := st.CachedInfo().Config.Replicas; n != 3 {
			t.Errorf("stream %s: %d replicas, want 3", name, n)
		}
		if name == "SITEBUS_DLQ" && st.CachedInfo().State.Msgs != 0 {
			t.Errorf("%d dead letters, want none", st.CachedInfo().State.Msgs)
		}
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("stream %s missing (streams: %v)", w, names)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "SITEBUS_CMD_") }) {
		t.Errorf("no command stream (streams: %v)", names)
	}

	// One terminal transition per order, one namespace and three groups
	// (made once) per resource.
	calls, err := s.Admin.Calls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	transitions := harness.TerminalTransitions(calls)
	live := map[string]map[string]string{}
	for _, o := range all {
		if got := transitions[strings.ReplaceAll(o.uuid, "-", "")]; len(got) != 1 {
			t.Errorf("order %s (%s): terminal transitions %v, want exactly one", o.uuid, o.slug, got)
		}
		live[o.slug] = map[string]string{"cpu": "1", "memory": "2Gi"}
	}
	if n := s.crCount(); n != orders {
		t.Errorf("%d ManagedNamespaces, want %d", n, orders)
	}
	checkCrashGroups(t, kc, all, live)
	t.Logf("%d orders on R3 streams: node %s (events leader) killed at %s with %d of the first %d in flight, all settled at %s",
		orders, leader, killedAt.Round(time.Millisecond), inFlight, len(first), settled.Round(time.Millisecond))
}

// streamLeader is the server name of the stream's leader.
func streamLeader(t *testing.T, js jetstream.JetStream, stream string) string {
	t.Helper()
	st, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	c := st.CachedInfo().Cluster
	if c == nil || c.Leader == "" {
		t.Fatalf("stream %s has no leader", stream)
	}
	return c.Leader
}
