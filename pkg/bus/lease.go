package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/keylock"
)

// LeasesBucket holds one entry per key held across replicas (cluster
// ordering mode): its value names the holder. Part of the on-disk
// contract, like the stream names.
const LeasesBucket = "sitebus_leases"

// DefaultLeaseTTL is how long a lease outlives its holder's last renewal:
// after a holder dies, the key is free again within this time. Renewals
// come every TTL/3.
const DefaultLeaseTTL = 15 * time.Second

// Leases serialises work by key across every process of a site: a key is
// held by one process at a time, whichever replica took the message. It
// is the cross-replica complement of slot consumers, for keys a message's
// subject cannot carry: an order event names the order, and only the
// order, once read, names the resource it changes, so two orders of one
// resource may be taken by two replicas at once; they meet here.
//
// A Leases is a keylock.Locker: a ticket waits for the process's own turn
// (keylock.Local, FIFO) and then for the key's lease in the bucket, which
// it renews while held and deletes on Release. The lease expires after
// TTL if its holder dies without releasing it.
type Leases struct {
	kv    jetstream.KeyValue
	local keylock.Locker
	owner string
	ttl   time.Duration
	log   *slog.Logger
	lost  func()
}

// EnsureLeases creates (or updates) the leases bucket. owner names this
// process in the entries it holds (for operators reading the bucket); ttl
// 0 is DefaultLeaseTTL.
func (b *Bus) EnsureLeases(ctx context.Context, owner string, ttl time.Duration) (*Leases, error) {
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < time.Second {
		return nil, fmt.Errorf("bus: lease TTL %s < 1s", ttl)
	}
	kv, err := EnsureKeyValue(ctx, b.js, jetstream.KeyValueConfig{
		Bucket:      LeasesBucket,
		Description: "Keys held across replicas: resource leases of the order service",
		History:     1,
		// Every renewal is a new revision, so TTL is counted from the last.
		TTL:      ttl,
		Storage:  jetstream.FileStorage,
		Replicas: b.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: ensure bucket %s: %w", LeasesBucket, err)
	}
	if owner == "" {
		owner = "unnamed"
	}
	return &Leases{kv: kv, local: b.locks, owner: owner, ttl: ttl, log: b.log,
		lost: func() { b.metrics.leasesLost.Inc() }}, nil
}

// leaseKey maps an ordering key (resource:<hex>) onto the bucket's key
// alphabet, which has no ':'.
func leaseKey(key string) string { return strings.ReplaceAll(key, ":", ".") }

// Enqueue implements keylock.Locker.
func (l *Leases) Enqueue(key string) keylock.Ticket {
	return &leaseTicket{l: l, key: key, local: l.local.Enqueue(key)}
}

type leaseTicket struct {
	l     *Leases
	key   string
	local keylock.Ticket

	mu       sync.Mutex
	held     bool
	rev      uint64
	stop     chan struct{}
	renewed  sync.WaitGroup
	released bool
}

// Wait takes the process's turn, then the lease.
func (t *leaseTicket) Wait(ctx context.Context) error {
	if err := t.local.Wait(ctx); err != nil {
		return err
	}
	key := leaseKey(t.key)
	poll := max(t.l.ttl/10, 100*time.Millisecond)
	for {
		rev, err := t.l.kv.Create(ctx, key, []byte(t.l.owner))
		if errors.Is(err, jetstream.ErrKeyExists) {
			// Ours already: a create whose answer was lost (its server
			// died) made it, or an earlier ticket here could not delete
			// it. This process's turn is this ticket's, so it is held.
			if e, gerr := t.l.kv.Get(ctx, key); gerr == nil && string(e.Value()) == t.l.owner {
				rev, err = e.Revision(), nil
			}
		}
		if err == nil {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.released {
				// Release raced Wait: give the lease back at once.
				_ = t.l.kv.Delete(context.WithoutCancel(ctx), key, jetstream.LastRevision(rev))
				return errors.New("bus: lease ticket released while waiting")
			}
			t.held, t.rev, t.stop = true, rev, make(chan struct{})
			t.renewed.Add(1)
			go t.renew(key)
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !unanswered(err) {
			return fmt.Errorf("bus: take lease %s: %w", t.key, err)
		}
		// Held elsewhere (or the request went unanswered): the holder
		// deletes it when done, or it expires; look again shortly. A
		// watch would not see an expiry, so this polls.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// renew keeps the lease while it is held. A renewal refused because the
// revision moved means the lease expired and someone else took it: that
// is logged and counted (the work under it overlapped another's), since
// the Locker interface cannot stop the holder.
func (t *leaseTicket) renew(key string) {
	defer t.renewed.Done()
	tick := time.NewTicker(t.l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.l.ttl/3)
		t.mu.Lock()
		rev := t.rev
		t.mu.Unlock()
		nrev, err := t.l.kv.Update(ctx, key, []byte(t.l.owner), rev)
		cancel()
		switch {
		case err == nil:
			t.mu.Lock()
			t.rev = nrev
			t.mu.Unlock()
		case unanswered(err):
			// Try again next tick; the TTL leaves two more.
		default:
			t.l.log.Warn("lease lost while held", "key", t.key, "err", err)
			t.l.lost()
			return
		}
	}
}

// Release deletes the lease (if this ticket holds it) and gives the
// process's turn to the next ticket.
func (t *leaseTicket) Release() {
	t.mu.Lock()
	if t.released {
		t.mu.Unlock()
		return
	}
	t.released = true
	held, stop := t.held, t.stop
	t.mu.Unlock()
	if held {
		close(stop)
		t.renewed.Wait()
		t.mu.Lock()
		rev := t.rev
		t.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		// Only our revision: a lease that expired and was taken by another
		// process is theirs now.
		if err := t.l.kv.Delete(ctx, leaseKey(t.key), jetstream.LastRevision(rev)); err != nil {
			t.l.log.Warn("lease not released; it expires on its own", "key", t.key, "err", err)
		}
		cancel()
	}
	t.local.Release()
}
