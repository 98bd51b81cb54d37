package keylock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSameKeyRunsOneAtATimeInQueueOrder(t *testing.T) {
	var l Local
	const n = 200
	tickets := make([]Ticket, n)
	for i := range tickets {
		tickets[i] = l.Enqueue("order:1")
	}
	var (
		mu      sync.Mutex
		order   []int
		running atomic.Int32
		overlap atomic.Bool
		wg      sync.WaitGroup
	)
	// Start the waiters in reverse so goroutine scheduling cannot produce
	// queue order by accident.
	for i := n - 1; i >= 0; i-- {
		wg.Go(func() {
			tk := tickets[i]
			defer tk.Release()
			if err := tk.Wait(context.Background()); err != nil {
				t.Error(err)
				return
			}
			if running.Add(1) != 1 {
				overlap.Store(true)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			running.Add(-1)
		})
	}
	wg.Wait()
	if overlap.Load() {
		t.Fatal("two holders of one key ran at the same time")
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("position %d ran ticket %d; want queue order", i, got)
		}
	}
	if k := l.Keys(); k != 0 {
		t.Fatalf("%d keys left after every ticket was released", k)
	}
}

func TestDifferentKeysDoNotWaitForEachOther(t *testing.T) {
	var l Local
	held := l.Enqueue("resource:a")
	if err := held.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	other := l.Enqueue("resource:b")
	defer other.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Already at the head: Wait succeeds even with a cancelled context.
	if err := other.Wait(ctx); err != nil {
		t.Fatalf("a free key waited: %v", err)
	}
}

func TestCancelledWaiterLeavesTheQueueAndKeepsOrder(t *testing.T) {
	var l Local
	head := l.Enqueue("k")
	_ = head.Wait(context.Background())
	quitter := l.Enqueue("k")
	next := l.Enqueue("k")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := quitter.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting behind a holder with a cancelled ctx: %v, want context.Canceled", err)
	}
	quitter.Release()
	if got := l.Queued("k"); got != 2 {
		t.Fatalf("queue has %d tickets after one left; want 2", got)
	}
	// The quitter leaving must not hand the key to next while head holds it.
	select {
	case <-next.(*localTicket).turn:
		t.Fatal("next got the key while the head still held it")
	default:
	}
	head.Release()
	if err := next.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	next.Release()
	if l.Keys() != 0 {
		t.Fatal("key left behind")
	}
}

func TestReleaseTwiceIsHarmless(t *testing.T) {
	var l Local
	a := l.Enqueue("k")
	b := l.Enqueue("k")
	a.Release()
	a.Release() // must not pass the key on a second time or drop b
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := l.Enqueue("k")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Wait(ctx); err == nil {
		t.Fatal("c got the key while b holds it")
	}
	c.Release()
	b.Release()
	if l.Keys() != 0 {
		t.Fatal("key left behind")
	}
}

func TestDoHoldsTheKeyAroundFn(t *testing.T) {
	var l Local
	var inside atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_ = Do(context.Background(), &l, "k", func(context.Context) error {
				if inside.Add(1) != 1 {
					t.Error("Do let two callers in")
				}
				inside.Add(-1)
				return nil
			})
		})
	}
	wg.Wait()
}

func BenchmarkEnqueueWaitRelease(b *testing.B) {
	var l Local
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			tk := l.Enqueue(keys[i%len(keys)])
			_ = tk.Wait(context.Background())
			tk.Release()
			i++
		}
	})
}
