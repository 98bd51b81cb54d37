package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// eventually polls cond until it holds or the deadline passes; cond says
// what it saw last, for the failure message.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last: %s)", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// placed reports whether a stream has its configured replica count and a
// leader with that many members in the cluster.
func placed(ctx context.Context, js jetstream.JetStream, stream string, want int) (bool, string) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return false, err.Error()
	}
	info, err := s.Info(ctx)
	if err != nil {
		return false, err.Error()
	}
	members := 0
	if c := info.Cluster; c != nil && c.Leader != "" {
		members = 1 + len(c.Replicas)
	}
	return info.Config.Replicas == want && members == want,
		fmt.Sprintf("%s: config replicas %d, %d members", stream, info.Config.Replicas, members)
}

// sitebusStreams are the streams a bus creates, buckets included (a KV
// bucket is stream KV_<bucket>).
func sitebusStreams(ctx context.Context, t *testing.T, b *bus.Bus) []string {
	t.Helper()
	if err := b.EnsureCommandStream(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EnsureResultsBucket(ctx); err != nil {
		t.Fatal(err)
	}
	return []string{bus.EventsStream, bus.DLQStream, bus.CommandStream("svc"), "KV_" + bus.ResultsBucket}
}

func TestStreamsAndBucketsHaveTheConfiguredReplicas(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	ctx := testCtx(t)
	b := bustest.OnConn(t, c.Connect(t), bus.Config{Replicas: 3})
	for _, name := range sitebusStreams(ctx, t, b) {
		eventually(t, 15*time.Second, name+" on 3 servers", func() (bool, string) { return placed(ctx, b.JetStream(), name, 3) })
	}
}

func TestExistingOneReplicaStreamsAreRescaledToThree(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	ctx := testCtx(t)
	nc := c.Connect(t)
	r1 := bustest.OnConn(t, nc, bus.Config{Replicas: 1})
	names := sitebusStreams(ctx, t, r1)
	for _, name := range names {
		eventually(t, 15*time.Second, name+" on 1 server", func() (bool, string) { return placed(ctx, r1.JetStream(), name, 1) })
	}
	if _, err := r1.Publish(ctx, "waldur.0123456789abcdef0123456789abcdef.order", event("before"), bus.WithMsgID("before")); err != nil {
		t.Fatal(err)
	}
	// A durable consumer made at R1 inherits the stream's count.
	sub, err := bus.Subscribe(ctx, r1, fastConsumer("svc"), func(context.Context, *sitebusv1.WaldurEvent) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	sub.Stop(ctx)

	// The next start with replicas: 3 (what EnsureStreams and the
	// Ensure* calls do at every start) rescales what exists.
	r3 := bustest.OnConn(t, nc, bus.Config{Replicas: 3})
	sitebusStreams(ctx, t, r3)
	// Writable as soon as the Ensure calls return: a write sent while the
	// stream moves to its new servers would get no answer.
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := r3.Publish(pctx, "waldur.0123456789abcdef0123456789abcdef.order", event("after"), bus.WithMsgID("after")); err != nil {
		t.Fatalf("publish right after rescaling: %v", err)
	}
	for _, name := range names {
		eventually(t, 30*time.Second, name+" rescaled to 3 servers", func() (bool, string) { return placed(ctx, r3.JetStream(), name, 3) })
	}
	eventually(t, 30*time.Second, "the consumer rescaled with its stream", func() (bool, string) {
		cons, err := r3.JetStream().Consumer(ctx, bus.EventsStream, "svc")
		if err != nil {
			return false, err.Error()
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		members := 0
		if info.Cluster != nil && info.Cluster.Leader != "" {
			members = 1 + len(info.Cluster.Replicas)
		}
		return members == 3, fmt.Sprintf("%d members", members)
	})
	s, err := r3.JetStream().Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("events after rescaling: %d messages, want the one published before and the one after", info.State.Msgs)
	}
}

// TestNodeLossMidBurstLosesAndDuplicatesNothing runs a burst of events
// through a durable consumer on R3 streams and shuts down, in the middle,
// the node that leads the events stream and that the bus is connected to.
// The handler's effect is a key-value create keyed by the event
// (idempotent, as sitebus's handlers are), so a redelivery is allowed but
// must never apply the effect twice.
func TestNodeLossMidBurstLosesAndDuplicatesNothing(t *testing.T) {
	const total = 300
	c := bustest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := bustest.OnConn(t, c.Connect(t), bus.Config{Replicas: 3})
	for _, name := range []string{bus.EventsStream, bus.DLQStream} {
		eventually(t, 15*time.Second, name+" on 3 servers", func() (bool, string) { return placed(ctx, setup.JetStream(), name, 3) })
	}
	leader := -1
	for i, s := range c.Servers {
		if s.JetStreamIsStreamLeader("$G", bus.EventsStream) {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no leader for the events stream")
	}
	b := bustest.OnConn(t, c.ConnectTo(t, leader), bus.Config{Replicas: 3})
	js := b.JetStream()
	effects, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "test_effects", Replicas: 3, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	deliveries := map[string]int{} // handler calls per event id
	applied := map[string]int{}    // effects applied per event id (by this consumer's creates)
	cfg := fastConsumer("effects")
	// A node loss is waited out, never dead-lettered: 100 attempts with a
	// growing backoff span ~90 s, longer than any election (a constant 20 ms
	// backoff could spend them all during one on a loaded machine).
	cfg.MaxDeliver = 100
	cfg.Backoff = func(attempt int) time.Duration { return min(time.Duration(attempt)*50*time.Millisecond, time.Second) }
	cfg.Concurrency = 16
	sub, err := bus.Subscribe(ctx, b, cfg, func(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
		id := ev.GetMessageId()
		mu.Lock()
		deliveries[id]++
		mu.Unlock()
		// Bounded like sitebus's own JetStream requests: a create in flight
		// on the node that stops is never answered; the next delivery
		// finds the key if it was stored.
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := effects.Create(cctx, id, []byte("done"))
		ccancel()
		switch {
		case errors.Is(err, jetstream.ErrKeyExists):
			return nil // applied by an earlier delivery whose ack was lost
		case err != nil:
			return err // retried: the cluster is electing a leader
		}
		mu.Lock()
		applied[id]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop(context.Background())

	// The publisher retries like the STOMP bridge: until the PubAck, with
	// the same Nats-Msg-Id, so a retry after a lost PubAck is deduplicated.
	publish := func(id string) {
		for attempt := 1; ; attempt++ {
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := b.Publish(actx, "waldur.0123456789abcdef0123456789abcdef.order", event(id), bus.WithMsgID(id))
			acancel()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Errorf("publish %s: gave up after %d attempts: %v", id, attempt, err)
				return
			}
			time.Sleep(min(time.Duration(attempt)*50*time.Millisecond, time.Second))
		}
	}
	start := time.Now()
	var stoppedAt time.Duration
	for i := range total {
		if i == total/3 {
			// Mid-burst, with deliveries in flight: wait until the consumer
			// has started, then take the stream's leader away.
			eventually(t, 15*time.Second, "the first deliveries", func() (bool, string) {
				mu.Lock()
				defer mu.Unlock()
				return len(deliveries) > 0, fmt.Sprintf("%d delivered", len(deliveries))
			})
			c.Stop(leader)
			stoppedAt = time.Since(start)
		}
		publish(fmt.Sprintf("ev-%03d", i))
	}
	published := time.Since(start)

	// Wait for the effects themselves: a handler records its delivery
	// before it writes the effect, so every event delivered does not mean
	// every effect stored yet.
	var stored []string
	eventually(t, 90*time.Second, "every event's effect", func() (bool, string) {
		stored = nil
		keys, err := effects.ListKeys(ctx)
		if err != nil {
			return false, err.Error()
		}
		for k := range keys.Keys() {
			stored = append(stored, k)
		}
		dead := "?"
		if st, err := js.Stream(ctx, bus.DLQStream); err == nil {
			dead = fmt.Sprint(st.CachedInfo().State.Msgs)
		}
		return len(stored) >= total, fmt.Sprintf("%d of %d effects stored, %s dead-lettered", len(stored), total, dead)
	})
	done := time.Since(start)
	if len(stored) != total {
		t.Fatalf("effects bucket holds %d keys, want %d", len(stored), total)
	}
	for _, k := range stored {
		h, err := effects.History(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 {
			t.Errorf("effect %s written %d times", k, len(h))
		}
	}
	mu.Lock()
	var redelivered, appliedTwice []string
	for id, n := range deliveries {
		if n > 1 {
			redelivered = append(redelivered, id)
		}
		if applied[id] > 1 {
			appliedTwice = append(appliedTwice, id)
		}
	}
	mu.Unlock()
	if len(appliedTwice) > 0 {
		t.Errorf("effects applied twice: %s", strings.Join(appliedTwice, ", "))
	}
	s, err := js.Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != total {
		t.Errorf("events stream holds %d messages, want %d (a retried publish stored twice?)", info.State.Msgs, total)
	}
	if info, err := js.Stream(ctx, bus.DLQStream); err != nil {
		t.Fatal(err)
	} else if n := info.CachedInfo().State.Msgs; n != 0 {
		t.Errorf("%d events dead-lettered, want none", n)
	}
	if b.Conn().Stats().Reconnects == 0 {
		t.Error("the bus never reconnected: the stopped node was not the one it used")
	}
	t.Logf("%d events, node %s stopped at %s, all published after %s, all handled after %s; %d redelivered",
		total, c.Servers[leader].Name(), stoppedAt.Round(time.Millisecond), published.Round(time.Millisecond), done.Round(time.Millisecond), len(redelivered))
}
