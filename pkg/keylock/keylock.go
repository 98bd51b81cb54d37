// Package keylock serialises work by key inside one process: work items
// with the same key (an order, a Waldur resource) run one at a time, in the
// order they were queued; items with different keys run in parallel.
//
// Queueing and waiting are separate steps. A consumer queues a message the
// moment it is delivered (Enqueue never blocks, so delivery order is the
// order of the queue) and waits for its turn on its own goroutine, so one
// busy key never holds up the others.
//
// The Locker interface is what the bus depends on. Local is the in-process
// implementation; one that spans replicas wraps it with a lease per key in
// a JetStream key-value bucket (a holder takes the key's lease after its
// local turn and releases it with the ticket), so callers do not change.
package keylock

import (
	"context"
	"sync"
)

// Locker hands out tickets for keys.
type Locker interface {
	// Enqueue puts a ticket for key at the end of the key's queue. It never
	// blocks; the ticket's Wait returns when every earlier ticket for the
	// key has been released.
	Enqueue(key string) Ticket
}

// Ticket is one place in a key's queue. Release must be called exactly
// once, whether or not Wait succeeded.
type Ticket interface {
	// Wait blocks until the ticket is at the head of its queue or ctx ends.
	Wait(ctx context.Context) error
	// Release gives the key to the next ticket (or leaves the queue).
	Release()
}

// Local serialises by key within one process. The zero value is ready.
type Local struct {
	mu     sync.Mutex
	queues map[string]*queue
}

type queue struct {
	// tickets in order; tickets[0] holds the key.
	tickets []*localTicket
}

type localTicket struct {
	l        *Local
	key      string
	turn     chan struct{} // closed when this ticket reaches the head
	released bool
}

// Enqueue implements Locker.
func (l *Local) Enqueue(key string) Ticket {
	t := &localTicket{l: l, key: key, turn: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queues == nil {
		l.queues = map[string]*queue{}
	}
	q := l.queues[key]
	if q == nil {
		q = &queue{}
		l.queues[key] = q
	}
	q.tickets = append(q.tickets, t)
	if len(q.tickets) == 1 {
		close(t.turn)
	}
	return t
}

// Keys reports how many keys have at least one ticket: for metrics and
// tests (an idle Local holds no memory).
func (l *Local) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queues)
}

// Queued reports how many tickets key has, the holder included.
func (l *Local) Queued(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.queues[key]; q != nil {
		return len(q.tickets)
	}
	return 0
}

func (t *localTicket) Wait(ctx context.Context) error {
	select {
	case <-t.turn:
		return nil
	default:
	}
	select {
	case <-t.turn:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *localTicket) Release() {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	q := l.queues[t.key]
	if q == nil {
		return
	}
	for i, x := range q.tickets {
		if x != t {
			continue
		}
		q.tickets = append(q.tickets[:i], q.tickets[i+1:]...)
		// A ticket leaving from the middle (its Wait gave up) does not
		// change who holds the key; the head leaving passes it on.
		if i == 0 && len(q.tickets) > 0 {
			close(q.tickets[0].turn)
		}
		break
	}
	if len(q.tickets) == 0 {
		delete(l.queues, t.key)
	}
}

// Do runs fn holding key: a convenience for code outside a consumer.
func Do(ctx context.Context, l Locker, key string, fn func(context.Context) error) error {
	t := l.Enqueue(key)
	defer t.Release()
	if err := t.Wait(ctx); err != nil {
		return err
	}
	return fn(ctx)
}
