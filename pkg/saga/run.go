package saga

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Run drives sagas until ctx is done. It first resumes every saga in the
// bucket that is not finished and that no live coordinator holds, then keeps
// watching the bucket for new sagas, for sagas resumed by Retry and for
// leases that expire because their coordinator died. Only sagas whose
// definition is registered here are driven. On return (ctx done) in-flight
// activities have been cancelled and, if they stopped within ShutdownGrace,
// their sagas' leases released for another coordinator.
func (c *Coordinator) Run(ctx context.Context) error {
	if err := c.checkActivities(); err != nil {
		return err
	}
	kv, err := c.bucket(ctx, true)
	if err != nil {
		return err
	}
	if err := c.ensureStream(ctx); err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("saga: watch bucket %s: %w", c.cfg.Bucket, err)
	}
	defer func() { _ = w.Stop() }()
	rewatches := 0

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	sem := make(chan struct{}, c.cfg.Concurrency)
	wake := make(chan struct{}, 1)
	pending := map[string]Saga{}  // sagas not finished, by ID
	parked := map[string]string{} // parked sagas' definitions, by ID
	parkedDefs := map[string]bool{}
	finished := map[string]finishedSaga{} // sagas Retention will remove, by ID
	tick := time.NewTicker(max(c.cfg.LeaseTTL/3, 50*time.Millisecond))
	defer tick.Stop()
	sweep := time.NewTicker(sweepInterval(c.cfg.Retention))
	defer sweep.Stop()

	setParkedGauge := func() {
		counts := map[string]int{}
		for _, def := range parked {
			counts[def]++
			parkedDefs[def] = true
		}
		for def := range parkedDefs {
			c.metrics.parked.WithLabelValues(def).Set(float64(counts[def]))
		}
	}
	consider := func(s Saga) {
		if !c.eligible(s, time.Now()) {
			return
		}
		c.mu.Lock()
		if c.active[s.ID] {
			c.mu.Unlock()
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			c.mu.Unlock()
			return // at capacity; a finishing driver wakes us
		}
		c.active[s.ID] = true
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer func() {
				c.mu.Lock()
				delete(c.active, s.ID)
				c.mu.Unlock()
				<-sem
				wg.Done()
				select {
				case wake <- struct{}{}:
				default:
				}
			}()
			c.drive(runCtx, kv, s.ID)
		}()
	}

	c.log.Info("saga coordinator running", "bucket", c.cfg.Bucket, "concurrency", c.cfg.Concurrency, "lease_ttl", c.cfg.LeaseTTL)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				// nats.go gives up on the watch's ordered consumer when
				// recreating it after a node loss fails other than by a
				// timeout; the sagas are all in the bucket, so watch again
				// (its initial values refresh pending) rather than stop
				// coordinating.
				rewatches++
				c.log.Warn("saga bucket watch ended; watching again", "bucket", c.cfg.Bucket, "times", rewatches)
				nw, err := c.rewatch(ctx, kv, rewatches)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("saga: watch bucket %s again: %w", c.cfg.Bucket, err)
				}
				w = nw
				continue
			}
			if e == nil {
				continue // initial values delivered
			}
			id := e.Key()
			if e.Operation() != jetstream.KeyValuePut {
				delete(pending, id)
				delete(parked, id)
				delete(finished, id)
				setParkedGauge()
				continue
			}
			s, err := decode(e)
			if err != nil {
				c.log.Error("undecodable saga record", "saga", id, "err", err)
				continue
			}
			if s.Status.Terminal() {
				delete(pending, id)
			} else {
				pending[id] = s
			}
			if s.Status.Terminal() && s.Status != StatusParked {
				finished[id] = finishedSaga{definition: s.Definition, updated: s.Updated, revision: s.Revision}
			} else {
				delete(finished, id)
			}
			_, wasParked := parked[id]
			if s.Status == StatusParked {
				parked[id] = s.Definition
			} else {
				delete(parked, id)
			}
			if _, isParked := parked[id]; isParked != wasParked {
				setParkedGauge()
			}
			consider(s)
		case <-wake:
			for _, s := range pending {
				consider(s)
			}
		case <-tick.C:
			for _, s := range pending {
				consider(s)
			}
		case <-sweep.C:
			c.expire(ctx, kv, finished, time.Now())
		}
	}
}

// finishedSaga is what the retention sweep needs of a finished saga.
type finishedSaga struct {
	definition string
	updated    time.Time
	revision   uint64
}

// sweepInterval is how often Run looks for finished sagas past their
// retention: a quarter of it, so one lingers at most 25% longer, but at
// least every hour and at most every 10ms.
func sweepInterval(retention time.Duration) time.Duration {
	return min(max(retention/4, 10*time.Millisecond), time.Hour)
}

// expire removes the finished sagas whose last change is older than the
// retention. Each purge is conditional on the revision Run saw, so a saga
// that an operator retried or another coordinator changed meanwhile is kept;
// the purge marker then comes back through the watch and drops the saga
// from finished. Several coordinators sweeping one bucket purge each saga
// once: the others' purges fail on the revision and are ignored.
func (c *Coordinator) expire(ctx context.Context, kv jetstream.KeyValue, finished map[string]finishedSaga, now time.Time) {
	cutoff := now.Add(-c.cfg.Retention)
	purged := 0
	for id, f := range finished {
		if f.updated.After(cutoff) {
			continue
		}
		if err := kv.Purge(ctx, id, jetstream.LastRevision(f.revision)); err != nil {
			if ctx.Err() == nil && !isWrongRevision(err) {
				c.log.Warn("cannot remove an expired saga; will try again", "saga", id, "err", err)
			}
			continue
		}
		delete(finished, id)
		c.metrics.expired.WithLabelValues(f.definition).Inc()
		purged++
	}
	if purged > 0 {
		c.log.Info("removed finished sagas past their retention", "count", purged, "retention", c.cfg.Retention)
	}
	// A purge leaves a marker per key, kept for nats.go's purge delay (30
	// minutes, so that watchers see it); markers older than that are
	// dropped here, or the bucket would still grow by one per order ever
	// served. A later sweep gets those of this one.
	if err := kv.PurgeDeletes(ctx); err != nil && ctx.Err() == nil {
		c.log.Warn("cannot drop the markers of removed sagas; will try again", "err", err)
	}
}

// isWrongRevision reports the answer to a conditional write whose revision
// is no longer the key's last.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// eligible reports whether this coordinator may try to take s: it is not
// finished, its definition is known here and no other live coordinator holds
// its lease.
func (c *Coordinator) eligible(s Saga, now time.Time) bool {
	if s.Status != StatusRunning && s.Status != StatusCompensating {
		return false
	}
	if _, ok := c.definition(s.Definition); !ok {
		return false
	}
	return s.Owner == "" || s.Owner == c.cfg.Owner || !now.Before(s.LeaseUntil)
}

// rewatch makes a new watch of the bucket after a short pause that grows
// with how often it was needed; it gives up only when ctx ends.
func (c *Coordinator) rewatch(ctx context.Context, kv jetstream.KeyValue, n int) (jetstream.KeyWatcher, error) {
	delay := min(time.Duration(n)*100*time.Millisecond, 5*time.Second)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		w, err := kv.WatchAll(ctx)
		if err == nil {
			return w, nil
		}
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil, err // for good: the process must start over
		}
		c.log.Warn("cannot watch the saga bucket yet", "bucket", c.cfg.Bucket, "err", err)
		delay = min(2*delay, 5*time.Second)
	}
}
