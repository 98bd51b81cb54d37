package bus_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

const orderingOffering = "0123456789abcdef0123456789abcdef"

// resourceKey is the ordering key of test resource k.
func resourceKey(k int) string { return fmt.Sprintf("resource:%032x", k) }

// seqLog records, across every replica, which message of each key was
// handled when, and whether two handlers of one key ever ran at once.
type seqLog struct {
	mu        sync.Mutex
	running   map[string]int
	overlaps  int
	handled   map[string][]int
	byReplica map[int]int
	total     int
	// par is how many handlers a replica runs now, maxPar the most it ran
	// at once: different resources must run in parallel in one process.
	par, maxPar map[int]int
}

func newSeqLog() *seqLog {
	return &seqLog{running: map[string]int{}, handled: map[string][]int{}, byReplica: map[int]int{}, par: map[int]int{}, maxPar: map[int]int{}}
}

func (l *seqLog) enter(key string, seq, replica int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[key]++
	if l.running[key] > 1 {
		l.overlaps++
	}
	l.handled[key] = append(l.handled[key], seq)
	l.byReplica[replica]++
	l.total++
	l.par[replica]++
	l.maxPar[replica] = max(l.maxPar[replica], l.par[replica])
}

func (l *seqLog) leave(key string, replica int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[key]--
	l.par[replica]--
}

// distinct is how many (key, seq) pairs were handled at least once.
func (l *seqLog) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, seqs := range l.handled {
		seen := map[int]bool{}
		for _, s := range seqs {
			seen[s] = true
		}
		n += len(seen)
	}
	return n
}

// disorder lists the keys whose messages were not handled in publish
// order 0..perKey-1. A message handled again right after itself (a crashed
// replica's message, redelivered) is allowed: delivery is at least once.
func (l *seqLog) disorder(keys, perKey int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for k := range keys {
		key := resourceKey(k)
		next, last := 0, -1
		ok := true
		for _, s := range l.handled[key] {
			switch s {
			case last:
			case next:
				last, next = s, next+1
			default:
				ok = false
			}
		}
		if !ok || next != perKey {
			bad = append(bad, fmt.Sprintf("%s: %v", key, l.handled[key]))
		}
	}
	return bad
}

// replica is one process of a service: its own connection, Bus (so its
// own in-process key lock) and subscription.
type replica struct {
	nc  *nats.Conn
	bus *bus.Bus
	sub *bus.Subscription
}

func orderedConsumer() bus.ConsumerConfig {
	return bus.ConsumerConfig{
		Name: "ordered", Stream: bus.EventsStream, Partitioned: true,
		FilterSubjects: []string{"waldur." + orderingOffering + ".resource"},
		MaxDeliver:     5, AckWait: time.Second, Concurrency: 4,
		Backoff: func(int) time.Duration { return 50 * time.Millisecond },
	}
}

// startReplicas starts n replicas of one subscription on s. handle runs
// inside the tracked section; nil just sleeps a few random milliseconds,
// so that overlapping deliveries of one key would show.
func startReplicas(t *testing.T, s *server.Server, n int, ord bus.Ordering, cfg bus.ConsumerConfig, log *seqLog, handle func(replica int, key string, seq int) error) []*replica {
	t.Helper()
	return startReplicasOn(t, func(int) *nats.Conn { return bustest.Connect(t, s) }, n, bus.Config{Ordering: ord}, cfg, log, handle)
}

// startReplicasOn is startReplicas with replica i on connect(i) and the
// buses configured with bc.
func startReplicasOn(t *testing.T, connect func(i int) *nats.Conn, n int, bc bus.Config, cfg bus.ConsumerConfig, log *seqLog, handle func(replica int, key string, seq int) error) []*replica {
	t.Helper()
	return startReplicasWith(t, connect, n, bc, func(int, *bus.Bus) bus.ConsumerConfig { return cfg }, log, handle)
}

// startReplicasWith is startReplicasOn with replica i's consumer
// configured by cfgFor on its own Bus (e.g. its own leases).
func startReplicasWith(t *testing.T, connect func(i int) *nats.Conn, n int, bc bus.Config, cfgFor func(i int, b *bus.Bus) bus.ConsumerConfig, log *seqLog, handle func(replica int, key string, seq int) error) []*replica {
	t.Helper()
	ctx := testCtx(t)
	reps := make([]*replica, n)
	for i := range reps {
		nc := connect(i)
		b := bustest.OnConn(t, nc, bc)
		sub, err := bus.Subscribe(ctx, b, cfgFor(i, b), func(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
			key, seqStr, _ := strings.Cut(ev.MessageId, "#")
			seq, _ := strconv.Atoi(seqStr)
			if handle != nil {
				if err := handle(i, key, seq); err != nil {
					return err
				}
			}
			log.enter(key, seq, i)
			defer log.leave(key, i)
			time.Sleep(time.Duration(1+rand.IntN(4)) * time.Millisecond) // widens the window in which an overlap would show
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Stop(context.Background()) })
		reps[i] = &replica{nc: nc, bus: b, sub: sub}
	}
	return reps
}

// killFirstAfter crashes replica 0 (no acks, no more pulls) once it has
// handled something and n messages were handled in all: the victim must
// have worked, so that its death leaves work behind and the others' share
// shows.
func killFirstAfter(t *testing.T, reps []*replica, log *seqLog, n int) {
	t.Helper()
	waitFor(t, "the first messages handled", func() bool {
		log.mu.Lock()
		worked := log.byReplica[0] > 0
		log.mu.Unlock()
		return worked && log.distinct() >= n
	})
	reps[0].nc.Close()
}

// publishInterleaved publishes message 0 of every key, then message 1 of
// every key, and so on, as a partitioned event publisher does.
func publishInterleaved(t *testing.T, b *bus.Bus, keys, perKey int) {
	t.Helper()
	publishEach(t, b, keys, perKey, false)
}

// publishEach publishes perKey messages of each of keys keys: message 0 of
// every key, then message 1 of every key, and so on; grouped, every
// message of key 0, then of key 1, so that one key's messages lie next to
// each other and land in two replicas' pulls at once.
func publishEach(t *testing.T, b *bus.Bus, keys, perKey int, grouped bool) {
	t.Helper()
	ctx := testCtx(t)
	for n := range keys * perKey {
		i, k := n/keys, n%keys
		if grouped {
			i, k = n%perKey, n/perKey
		}
		key := resourceKey(k)
		subject, err := bus.EventSubject(orderingOffering, "resource", key)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%s#%d", key, i)
		ev := &sitebusv1.WaldurEvent{ObjectType: "resource", OfferingUuid: orderingOffering, MessageId: id,
			Body: []byte(`{"resource_uuid": "` + strings.TrimPrefix(key, "resource:") + `"}`)}
		if _, err := b.Publish(ctx, subject, ev, bus.WithMsgID(id), bus.WithOrderingKey(key)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClusterOrderingAcrossReplicas(t *testing.T) {
	const keys, perKey = 50, 6
	cluster := bus.Ordering{Mode: bus.OrderingCluster, Slots: 8}
	tests := map[string]struct {
		replicas int
		// kill closes replica 0's connection once this many messages were
		// handled (0: nobody dies).
		killAfter int
		// nodes > 1: a JetStream cluster of that many servers, streams
		// and consumers replicated on all, replica i connected to node i;
		// else one server.
		nodes int
	}{
		"two replicas":                                   {replicas: 2},
		"three replicas":                                 {replicas: 3},
		"three replicas, one killed mid-stream":          {replicas: 3, killAfter: keys * perKey / 3},
		"two replicas, one killed after the first few":   {replicas: 2, killAfter: 20},
		"three replicas on three nodes (R3), one killed": {replicas: 3, killAfter: keys * perKey / 3, nodes: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			log := newSeqLog()
			var reps []*replica
			if tc.nodes > 1 {
				c := bustest.StartCluster(t, tc.nodes)
				reps = startReplicasOn(t, func(i int) *nats.Conn { return c.ConnectTo(t, i%tc.nodes) }, tc.replicas,
					bus.Config{Ordering: cluster, Replicas: tc.nodes}, orderedConsumer(), log, nil)
			} else {
				reps = startReplicas(t, bustest.Server(t), tc.replicas, cluster, orderedConsumer(), log, nil)
			}
			publishInterleaved(t, reps[len(reps)-1].bus, keys, perKey)
			if tc.killAfter > 0 {
				killFirstAfter(t, reps, log, tc.killAfter)
			}
			waitFor(t, "every message handled", func() bool { return log.distinct() == keys*perKey })
			log.mu.Lock()
			overlaps, byReplica, maxPar := log.overlaps, maps(log.byReplica), maps(log.maxPar)
			log.mu.Unlock()
			parallel := false
			for _, n := range maxPar {
				parallel = parallel || n > 1
			}
			if !parallel {
				t.Errorf("no replica ever ran two handlers at once (%v): different resources must run in parallel", maxPar)
			}
			if overlaps > 0 {
				t.Errorf("two replicas handled one resource at once %d times", overlaps)
			}
			if bad := log.disorder(keys, perKey); len(bad) > 0 {
				t.Errorf("%d resources handled out of publish order, e.g. %s", len(bad), bad[0])
			}
			working := 0
			for _, n := range byReplica {
				if n > 0 {
					working++
				}
			}
			if working < 2 {
				t.Errorf("only %d replica did work (%v): the slots must be shared", working, byReplica)
			}
		})
	}
}

func maps(m map[int]int) map[int]int {
	out := make(map[int]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestProcessOrderingLetsReplicasOverlap(t *testing.T) {
	// The detector above must be able to fail: with the process mode's one
	// shared consumer, two replicas take messages of one resource at once
	// or out of order. Which replica gets what depends on pull timing, so
	// rounds are repeated until a violation shows (it does in the first
	// round in practice); twenty clean rounds mean the detector is blind.
	const keys, perKey, rounds = 50, 6, 20
	s := bustest.Server(t)
	for round := range rounds {
		log := newSeqLog()
		cfg := orderedConsumer()
		cfg.Name = fmt.Sprintf("process-%d", round)
		reps := startReplicas(t, s, 2, bus.Ordering{Mode: bus.OrderingProcess}, cfg, log, nil)
		if round == 0 {
			publishInterleaved(t, reps[0].bus, keys, perKey)
		}
		waitFor(t, "every message handled", func() bool { return log.distinct() == keys*perKey })
		for _, r := range reps {
			r.sub.Stop(context.Background())
		}
		log.mu.Lock()
		overlaps := log.overlaps
		log.mu.Unlock()
		if bad := log.disorder(keys, perKey); overlaps > 0 || len(bad) > 0 {
			t.Logf("round %d: %d overlaps, %d resources out of order", round, overlaps, len(bad))
			return
		}
	}
	t.Fatalf("%d rounds of two process-mode replicas never overlapped or reordered a resource: the detector cannot see a violation", rounds)
}

func TestClusterOrderingHoldsAKeyThroughRetries(t *testing.T) {
	// A failing message keeps its slot: the next message of its resource
	// waits for the retry instead of overtaking it.
	s := bustest.Server(t)
	log := newSeqLog()
	var failed atomic.Bool
	reps := startReplicas(t, s, 2, bus.Ordering{Mode: bus.OrderingCluster, Slots: 4}, orderedConsumer(), log,
		func(_ int, key string, seq int) error {
			if key == resourceKey(0) && seq == 1 && failed.CompareAndSwap(false, true) {
				return errors.New("Waldur is away")
			}
			return nil
		})
	publishInterleaved(t, reps[0].bus, 1, 5)
	waitFor(t, "every message handled", func() bool { return log.distinct() == 5 })
	if bad := log.disorder(1, 5); len(bad) > 0 {
		t.Errorf("a retried message was overtaken: %v", bad)
	}
	if !failed.Load() {
		t.Error("the failure was never injected")
	}
}

func TestProcessOrderingSubscriptionIsOneConsumerForBothSubjectForms(t *testing.T) {
	// Process mode behaves as before partitions: one durable consumer,
	// named as configured, with many messages in flight, taking the
	// partitioned subjects and the three-token ones stored by older
	// versions.
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	legacy := "waldur." + orderingOffering + ".resource"
	storeAsOlderVersions(t, b, legacy, event("legacy"))
	var handled atomic.Int32
	cfg := orderedConsumer()
	sub, err := bus.Subscribe(ctx, b, cfg, func(context.Context, *sitebusv1.WaldurEvent) error {
		handled.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	publishInterleaved(t, b, 10, 2)
	// Published by hand without a partition after the start: the
	// stream's subject transform gives it one.
	if _, err := b.Publish(ctx, legacy, event("by hand")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both subject forms handled", func() bool { return handled.Load() == 22 })
	names := consumerNames(t, b, bus.EventsStream)
	if len(names) != 1 || names[0] != "ordered" {
		t.Fatalf("consumers %v, want just ordered", names)
	}
	info, err := sub.Consumers()[0].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAckPending < 256 {
		t.Errorf("process mode max ack pending %d, want the wide window as before", info.Config.MaxAckPending)
	}
}

func TestProcessOrderingFiltersOnlyPartitionedSubjectsWhenNoneOlderAreStored(t *testing.T) {
	// A stream without three-token subjects gets a consumer with one
	// filter: the server's single-filter path is the fast one.
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	if _, err := b.Publish(ctx, "waldur."+orderingOffering+".resource.007", event("partitioned")); err != nil {
		t.Fatal(err)
	}
	sub, err := bus.Subscribe(ctx, b, orderedConsumer(), func(context.Context, *sitebusv1.WaldurEvent) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	info, err := sub.Consumers()[0].Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{orderedConsumer().FilterSubjects[0] + ".*"}
	got := append([]string{info.Config.FilterSubject}, info.Config.FilterSubjects...)
	got = slices.DeleteFunc(got, func(s string) bool { return s == "" })
	if !slices.Equal(got, want) {
		t.Errorf("filters %v, want %v", got, want)
	}
}

func TestClusterOrderingTakesLegacySubjectsOnce(t *testing.T) {
	s := bustest.Server(t)
	log := newSeqLog()
	reps := startReplicas(t, s, 2, bus.Ordering{Mode: bus.OrderingCluster, Slots: 4}, orderedConsumer(), log, nil)
	ctx := testCtx(t)
	legacy := "waldur." + orderingOffering + ".resource"
	for i := range 3 {
		id := fmt.Sprintf("%s#%d", resourceKey(0), i)
		if _, err := reps[0].bus.Publish(ctx, legacy, &sitebusv1.WaldurEvent{MessageId: id}, bus.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the stored events handled", func() bool { return log.distinct() == 3 })
	// Slot 0 has the legacy subject; every slot has acked all it was given.
	for _, c := range reps[0].sub.Consumers() {
		waitFor(t, "acks settled", func() bool {
			info, err := c.Info(ctx)
			return err == nil && info.NumAckPending == 0
		})
	}
	log.mu.Lock()
	total := log.total
	log.mu.Unlock()
	if total != 3 {
		t.Errorf("3 legacy events handled %d times", total)
	}
	if bad := log.disorder(1, 3); len(bad) > 0 {
		t.Errorf("legacy events out of order: %v", bad)
	}
}

// storeAsOlderVersions stores m on subject as versions before partitions
// did: the events stream without its subject transform, which EnsureStreams
// then puts back, as an upgrade does.
func storeAsOlderVersions(t *testing.T, b *bus.Bus, subject string, m *sitebusv1.WaldurEvent) {
	t.Helper()
	ctx := testCtx(t)
	st, err := b.JetStream().Stream(ctx, bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.SubjectTransform = nil
	if _, err := b.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, subject, m); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
}

func consumerNames(t *testing.T, b *bus.Bus, stream string) []string {
	t.Helper()
	ctx := testCtx(t)
	st, err := b.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	l := st.ConsumerNames(ctx)
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestSwitchingOrderingModeReplacesTheConsumers(t *testing.T) {
	tests := map[string]struct {
		stream  string
		base    string
		publish func(t *testing.T, b *bus.Bus, key, id string)
	}{
		"events stream (limits)": {
			stream: bus.EventsStream, base: "waldur." + orderingOffering + ".resource",
		},
		"command stream (work queue)": {
			stream: bus.CommandStream("quota"), base: "cmd.quota.*",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := bustest.Server(t)
			ctx := testCtx(t)
			seen := map[string]int{}
			var mu sync.Mutex
			run := func(ord bus.Ordering, ids ...string) *bus.Bus {
				t.Helper()
				b := bustest.OnConn(t, bustest.Connect(t, s), bus.Config{Ordering: ord})
				if err := b.EnsureCommandStream(ctx, "quota"); err != nil {
					t.Fatal(err)
				}
				publish := func(b *bus.Bus, ids []string) {
					for _, id := range ids {
						key := "resource:" + id
						subject := bus.PartitionedSubject(strings.Replace(tc.base, "*", orderingOffering, 1), key)
						msg := &nats.Msg{Subject: subject, Header: nats.Header{"Id": {id}}}
						if _, err := b.PublishMsg(ctx, msg, bus.WithMsgID(id), bus.WithOrderingKey(key)); err != nil {
							t.Fatal(err)
						}
					}
				}
				// Half is stored while no process runs (the restart that
				// switches the mode), half after.
				publish(b, ids[:len(ids)/2])
				cfg := orderedConsumer()
				cfg.Stream, cfg.FilterSubjects = tc.stream, []string{tc.base}
				sub, err := bus.SubscribeRaw(ctx, b, cfg, func(ctx context.Context, _ []byte) error {
					d, _ := bus.DeliveryFromContext(ctx)
					mu.Lock()
					seen[d.Header.Get("Id")]++
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Fatalf("subscribe in %s mode: %v", ord.Mode, err)
				}
				publish(b, ids[len(ids)/2:])
				waitFor(t, fmt.Sprintf("the new messages handled in %s mode with %d slots", ord.Mode, ord.Slots), func() bool {
					mu.Lock()
					defer mu.Unlock()
					for _, id := range ids {
						if seen[id] == 0 {
							return false
						}
					}
					return true
				})
				// Every ack is in before the next mode starts from the floor.
				for _, c := range sub.Consumers() {
					waitFor(t, "acks settled", func() bool {
						info, err := c.Info(ctx)
						return err == nil && info.NumAckPending == 0 && info.NumPending == 0
					})
				}
				sub.Stop(context.Background())
				return b
			}
			ids := func(prefix string) []string {
				var out []string
				for i := range 20 {
					out = append(out, fmt.Sprintf("%s%d", prefix, i))
				}
				return out
			}
			run(bus.Ordering{Mode: bus.OrderingProcess}, ids("a")...)
			b := run(bus.Ordering{Mode: bus.OrderingCluster, Slots: 8}, ids("b")...)
			if names := consumerNames(t, b, tc.stream); len(names) != 8 || !strings.HasPrefix(names[0], "ordered-s") {
				t.Errorf("after switching to cluster mode: consumers %v, want ordered-s00of08..s07of08", names)
			}
			b = run(bus.Ordering{Mode: bus.OrderingCluster, Slots: 16}, ids("c")...)
			if names := consumerNames(t, b, tc.stream); len(names) != 16 {
				t.Errorf("after raising the slots: consumers %v, want 16", names)
			}
			b = run(bus.Ordering{Mode: bus.OrderingCluster, Slots: 4}, ids("d")...)
			if names := consumerNames(t, b, tc.stream); len(names) != 4 {
				t.Errorf("after lowering the slots: consumers %v, want 4", names)
			}
			b = run(bus.Ordering{Mode: bus.OrderingProcess}, ids("e")...)
			if names := consumerNames(t, b, tc.stream); len(names) != 1 || names[0] != "ordered" {
				t.Errorf("after switching back to process mode: consumers %v, want just ordered", names)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 100 {
				t.Errorf("%d of 100 messages handled", len(seen))
			}
			// Merging slots starts the merged consumer at the least position
			// of its predecessors, so a message the others had settled may
			// come once more (idempotent handlers); never more than that.
			dups := 0
			for id, n := range seen {
				if n > 2 {
					t.Errorf("%s handled %d times", id, n)
				}
				if n > 1 {
					dups++
				}
			}
			t.Logf("%d of 100 messages handled twice across the mode and slot changes", dups)
		})
	}
}

func TestCheckFindsADeletedSlotConsumerWithinARound(t *testing.T) {
	// Readiness asks for one slot consumer per probe; a lost one must fail
	// a probe before the round is over.
	b := newBus(t, bus.Config{Ordering: bus.Ordering{Mode: bus.OrderingCluster, Slots: 8}})
	ctx := testCtx(t)
	sub, err := bus.Subscribe(ctx, b, orderedConsumer(), func(context.Context, *sitebusv1.WaldurEvent) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	for range 8 {
		if err := sub.Check(ctx); err != nil {
			t.Fatalf("check with every consumer bound: %v", err)
		}
	}
	if err := b.JetStream().DeleteConsumer(ctx, bus.EventsStream, bus.SlotConsumerName("ordered", 5, 8)); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range 8 {
		if sub.Check(ctx) != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d of 8 checks failed after one slot consumer was deleted, want 1", failed)
	}
}

func TestLeasedKeysAcrossReplicasShareOneConsumer(t *testing.T) {
	// A KeyLocker (leases) instead of slots: one consumer with many
	// messages in flight, and still never two handlers of one key at once
	// across replicas, also when a replica dies holding leases.
	const keys, perKey = 50, 6
	tests := map[string]struct {
		replicas, killAfter int
	}{
		"two replicas":                          {replicas: 2},
		"three replicas, one killed mid-stream": {replicas: 3, killAfter: keys * perKey / 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := bustest.Server(t)
			log := newSeqLog()
			cfg := orderedConsumer()
			bc := bus.Config{Ordering: bus.Ordering{Mode: bus.OrderingCluster, Slots: 8}}
			reps := startReplicasWith(t, func(int) *nats.Conn { return bustest.Connect(t, s) }, tc.replicas, bc,
				func(i int, b *bus.Bus) bus.ConsumerConfig {
					leases, err := b.EnsureLeases(testCtx(t), fmt.Sprintf("replica-%d", i), 2*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					c := cfg
					c.KeyLocker = leases
					return c
				}, log, nil)
			if got := consumerNames(t, reps[0].bus, bus.EventsStream); !slices.Equal(got, []string{cfg.Name}) {
				t.Fatalf("consumers %v, want the one shared consumer %q", got, cfg.Name)
			}
			publishEach(t, reps[len(reps)-1].bus, keys, perKey, true)
			if tc.killAfter > 0 {
				killFirstAfter(t, reps, log, tc.killAfter) // its leases expire, its messages come again
			}
			waitFor(t, "every message handled", func() bool { return log.distinct() == keys*perKey })
			log.mu.Lock()
			overlaps, byReplica, maxPar := log.overlaps, maps(log.byReplica), maps(log.maxPar)
			log.mu.Unlock()
			if overlaps > 0 {
				t.Errorf("two replicas handled one key at once %d times", overlaps)
			}
			working, parallel := 0, false
			for i, n := range byReplica {
				if n > 0 {
					working++
				}
				parallel = parallel || maxPar[i] > 1
			}
			if working < 2 {
				t.Errorf("only %d replica did work (%v): the consumer must be shared", working, byReplica)
			}
			if !parallel {
				t.Errorf("no replica ever ran two handlers at once (%v): different keys must run in parallel", maxPar)
			}
		})
	}
}
