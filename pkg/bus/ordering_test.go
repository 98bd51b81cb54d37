package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// orderKey reads the order UUID from an event, as the order service does.
func orderKey(_ string, data []byte) string {
	var ev sitebusv1.WaldurEvent
	if err := proto.Unmarshal(data, &ev); err != nil {
		return ""
	}
	return bodyKey(&ev)
}

func bodyKey(ev *sitebusv1.WaldurEvent) string {
	var body struct {
		OrderUUID string `json:"order_uuid"`
	}
	_ = json.Unmarshal(ev.Body, &body)
	return "order:" + body.OrderUUID
}

// keyTracker records, per key, how many handlers run at once and in which
// order the messages of a key were handled.
type keyTracker struct {
	mu      sync.Mutex
	running map[string]int
	seen    map[string][]string
	overlap []string
	maxPar  int
	par     int
}

func newKeyTracker() *keyTracker {
	return &keyTracker{running: map[string]int{}, seen: map[string][]string{}}
}

func (k *keyTracker) enter(key, id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running[key]++
	if k.running[key] > 1 {
		k.overlap = append(k.overlap, key)
	}
	k.par++
	k.maxPar = max(k.maxPar, k.par)
	k.seen[key] = append(k.seen[key], id)
}

func (k *keyTracker) leave(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running[key]--
	k.par--
}

func TestSameOrderingKeyIsHandledOneAtATimeInOrder(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	const orders, perOrder = 8, 6
	kt := newKeyTracker()
	var handled atomic.Int32
	cfg := fastConsumer("keyed")
	cfg.Concurrency = 8
	cfg.OrderingKey = orderKey
	sub, err := bus.Subscribe(ctx, b, cfg, func(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
		key := bodyKey(ev)
		kt.enter(key, ev.MessageId)
		defer kt.leave(key)
		// Hold the key a little, so that overlapping deliveries of one key
		// would show, and different keys overlap.
		time.Sleep(5 * time.Millisecond)
		handled.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	for i := range perOrder {
		for o := range orders {
			id := fmt.Sprintf("o%d-%d", o, i)
			ev := &sitebusv1.WaldurEvent{ObjectType: "order", OfferingUuid: "0123456789abcdef0123456789abcdef",
				Body: []byte(fmt.Sprintf(`{"order_uuid": "o%d"}`, o)), MessageId: id}
			if _, err := b.Publish(ctx, "waldur.0123456789abcdef0123456789abcdef.order", ev, bus.WithMsgID(id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "every event handled", func() bool { return handled.Load() == orders*perOrder })
	kt.mu.Lock()
	defer kt.mu.Unlock()
	if len(kt.overlap) > 0 {
		t.Fatalf("handlers of one key overlapped: %v", kt.overlap)
	}
	for o := range orders {
		key := fmt.Sprintf("order:o%d", o)
		for i, id := range kt.seen[key] {
			if want := fmt.Sprintf("o%d-%d", o, i); id != want {
				t.Fatalf("%s: message %d was %s, want %s (delivery order): %v", key, i, id, want, kt.seen[key])
			}
		}
	}
	if kt.maxPar < 2 {
		t.Fatalf("at most %d handlers ran at once: different keys must run in parallel", kt.maxPar)
	}
}

func TestPublisherOrderingKeySerialisesAcrossConsumers(t *testing.T) {
	// Two consumers of one Bus (say, order events and quota commands) must
	// not handle the same resource at once: the key is the Bus's, not the
	// consumer's.
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	kt := newKeyTracker()
	var handled atomic.Int32
	h := func(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
		kt.enter("resource:r1", ev.MessageId)
		defer kt.leave("resource:r1")
		time.Sleep(2 * time.Millisecond) // holds the key long enough for an overlap to show
		handled.Add(1)
		return nil
	}
	for _, name := range []string{"first", "second"} {
		cfg := fastConsumer(name)
		sub, err := bus.Subscribe(ctx, b, cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Stop(context.Background()) })
	}
	const n = 40
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		if _, err := b.Publish(ctx, "waldur.0123456789abcdef0123456789abcdef.order", event(id),
			bus.WithMsgID(id), bus.WithOrderingKey("resource:r1")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both consumers handled every message", func() bool { return handled.Load() == 2*n })
	kt.mu.Lock()
	defer kt.mu.Unlock()
	if len(kt.overlap) > 0 {
		t.Fatalf("two consumers handled resource:r1 at once %d times", len(kt.overlap))
	}
}
