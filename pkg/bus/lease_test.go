package bus_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/keylock"
)

// Three processes ("replicas", each its own connection and Bus) run work
// for a few keys at once through their Leases: per key, never two at a
// time, whichever process runs it; different keys do overlap.
func TestLeasesSerialiseAKeyAcrossProcesses(t *testing.T) {
	s := bustest.Server(t)
	ctx := testCtx(t)
	const procs, keys, perKey = 3, 4, 12
	var leases []*bus.Leases
	for i := range procs {
		b := bustest.On(t, s, bus.Config{})
		l, err := b.EnsureLeases(ctx, fmt.Sprintf("replica-%d", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	var (
		mu       sync.Mutex
		inside   = map[string]int{}
		overlaps []string
		across   atomic.Int32 // most keys held at one moment
		held     atomic.Int32
	)
	var wg sync.WaitGroup
	for k := range keys {
		key := fmt.Sprintf("resource:%032x", k)
		for n := range perKey {
			l := leases[(k+n)%procs]
			wg.Go(func() {
				err := keylock.Do(ctx, l, key, func(context.Context) error {
					mu.Lock()
					inside[key]++
					if inside[key] > 1 {
						overlaps = append(overlaps, key)
					}
					mu.Unlock()
					h := held.Add(1)
					for {
						m := across.Load()
						if h <= m || across.CompareAndSwap(m, h) {
							break
						}
					}
					time.Sleep(2 * time.Millisecond) // work: gives an overlap the chance to show
					held.Add(-1)
					mu.Lock()
					inside[key]--
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if len(overlaps) > 0 {
		t.Fatalf("keys held by two at once: %v", overlaps)
	}
	if across.Load() < 2 {
		t.Errorf("different keys never ran at the same time (at most %d at once)", across.Load())
	}
}

// A holder that dies without releasing (its process is gone: the ticket is
// never released and renewals stop with the connection) keeps the key only
// until the lease's TTL has passed.
func TestALeaseOfADeadHolderExpires(t *testing.T) {
	s := bustest.Server(t)
	ctx := testCtx(t)
	nc := bustest.Connect(t, s)
	dead := bustest.OnConn(t, nc, bus.Config{})
	const ttl = time.Second
	dl, err := dead.EnsureLeases(ctx, "dead", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := dl.Enqueue("resource:aa").Wait(ctx); err != nil {
		t.Fatal(err)
	}
	nc.Close() // dies holding it

	live, err := bustest.On(t, s, bus.Config{}).EnsureLeases(ctx, "live", ttl)
	if err != nil {
		t.Fatal(err)
	}
	tk := live.Enqueue("resource:aa")
	defer tk.Release()
	wctx, cancel := context.WithTimeout(ctx, 20*ttl)
	defer cancel()
	if err := tk.Wait(wctx); err != nil {
		t.Fatalf("the key was never free again after its holder died: %v", err)
	}
}

// A held lease is renewed: its entry gets new revisions while held (so
// it never reaches its TTL), a second process does not get the key
// meanwhile, and gets it once the first releases it.
func TestAHeldLeaseIsRenewedAndReleased(t *testing.T) {
	s := bustest.Server(t)
	ctx := testCtx(t)
	const ttl = 3 * time.Second
	ab := bustest.On(t, s, bus.Config{})
	a, err := ab.EnsureLeases(ctx, "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bustest.On(t, s, bus.Config{}).EnsureLeases(ctx, "b", ttl)
	if err != nil {
		t.Fatal(err)
	}
	ta := a.Enqueue("resource:bb")
	if err := ta.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	tb := b.Enqueue("resource:bb")
	defer tb.Release()
	got := make(chan error, 1)
	go func() { got <- tb.Wait(ctx) }()

	kv, err := ab.JetStream().KeyValue(ctx, bus.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	first, err := kv.Get(ctx, "resource.bb")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two renewals of the held lease", func() bool {
		e, err := kv.Get(ctx, "resource.bb")
		return err == nil && e.Revision() >= first.Revision()+2 && string(e.Value()) == "a"
	})
	select {
	case err := <-got:
		t.Fatalf("second holder got the key while the first held it (err %v)", err)
	default:
	}
	ta.Release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the key was not handed on after release")
	}
}

func TestLeaseTTLBelowASecondIsRefused(t *testing.T) {
	b := newBus(t, bus.Config{})
	if _, err := b.EnsureLeases(testCtx(t), "x", 100*time.Millisecond); err == nil {
		t.Fatal("a 100ms lease TTL was accepted")
	}
}
