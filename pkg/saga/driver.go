package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/bus"
)

// maxInterrupts is how often one attempt may be re-run because its
// coordinator died during it before the interruption counts as a failure.
const maxInterrupts = 3

var (
	errLeaseLost    = errors.New("saga: lease lost to another coordinator")
	errLeaseExpired = errors.New("saga: lease could not be renewed in time")
)

// driver advances one saga while this coordinator holds its lease. Every
// change goes through save, which writes it with a compare-and-set on the
// revision last written, so a driver that lost its lease stops at its next
// write.
type driver struct {
	c   *Coordinator
	kv  jetstream.KeyValue
	def Definition
	log *slog.Logger

	mu        sync.Mutex
	s         Saga
	lastWrite time.Time
	// deadline is when this driver stops trusting its lease: 3/4 of the TTL
	// after the last successful write was sent.
	deadline time.Time
	// leftRunning is set when an abandoned activity did not return within
	// ShutdownGrace; the lease is then left to expire instead of released.
	leftRunning bool
}

// drive takes saga id if it is still free and advances it until it is
// finished, the lease is lost or ctx ends.
func (c *Coordinator) drive(ctx context.Context, kv jetstream.KeyValue, id string) {
	e, err := kv.Get(ctx, id)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("cannot read saga", "saga", id, "err", err)
		}
		return
	}
	s, err := decode(e)
	if err != nil || !c.eligible(s, time.Now()) {
		return
	}
	def, _ := c.definition(s.Definition)
	d := &driver{c: c, kv: kv, def: def, s: s, log: c.log.With("saga", id, "definition", s.Definition)}
	if err := d.save(ctx, nil); err != nil {
		if !errors.Is(err, errLeaseLost) && ctx.Err() == nil {
			d.log.Warn("cannot take saga", "err", err)
		}
		return
	}
	switch {
	case s.Owner != "" && s.Owner != c.cfg.Owner:
		d.log.Info("took over saga from an expired lease", "previous_owner", s.Owner, "status", s.Status)
	case s.Steps[0].Status != StepPending:
		d.log.Info("resuming saga", "status", s.Status)
	}

	dctx, cancel := context.WithCancelCause(ctx)
	renewDone := make(chan struct{})
	go func() { defer close(renewDone); d.renew(dctx, cancel) }()
	stop := func(cause error) {
		cancel(cause)
		<-renewDone
	}

	tctx := c.prop.Extract(dctx, propagation.MapCarrier{"traceparent": s.TraceParent, "tracestate": s.TraceState})
	tctx, span := c.tracer.Start(tctx, "saga "+s.Definition, trace.WithAttributes(
		attribute.String("saga.id", id),
		attribute.String("saga.definition", s.Definition),
		attribute.String("saga.owner", c.cfg.Owner),
	))
	defer span.End()

	for {
		done, err := d.advance(tctx)
		if err == nil {
			if done {
				stop(nil)
				span.SetAttributes(attribute.String("saga.status", string(d.snapshot().Status)))
				return
			}
			continue
		}
		if dctx.Err() != nil || errors.Is(err, errLeaseLost) || errors.Is(err, errLeaseExpired) {
			if cause := context.Cause(dctx); cause != nil && dctx.Err() != nil {
				err = cause
			}
			stop(err)
			span.SetStatus(codes.Error, "abandoned: "+err.Error())
			if ctx.Err() != nil && !d.leftRunning {
				d.release()
				d.log.Info("saga handed back on shutdown", "status", d.snapshot().Status)
			} else {
				d.log.Warn("saga abandoned", "reason", err)
			}
			return
		}
		d.log.Warn("saga bookkeeping failed; retrying", "err", err)
		select {
		case <-dctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (d *driver) snapshot() Saga {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	s.Steps = slices.Clone(d.s.Steps)
	return s
}

// save applies mutate to a copy of the saga, renews the lease in it and
// writes it with a compare-and-set on the revision last written.
func (d *driver) save(ctx context.Context, mutate func(*Saga)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := d.s
	next.Steps = slices.Clone(d.s.Steps)
	if mutate != nil {
		mutate(&next)
	}
	return d.writeLocked(ctx, next, true)
}

// writeLocked writes next, retrying transport errors until the lease
// deadline. hold keeps the lease; otherwise it is given up (terminal writes).
func (d *driver) writeLocked(ctx context.Context, next Saga, hold bool) error {
	ttl := d.c.cfg.LeaseTTL
	for {
		sent := time.Now()
		next.Updated = sent.UTC()
		next.LeaseUntil = time.Time{}
		if hold {
			next.Owner = d.c.cfg.Owner
			next.LeaseUntil = sent.Add(ttl).UTC()
		}
		data, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("saga: encode %s: %w", next.ID, err)
		}
		wctx, cancel := context.WithTimeout(ctx, ttl/3)
		rev, err := d.kv.Update(wctx, next.ID, data, d.s.Revision)
		cancel()
		if err == nil {
			next.Revision = rev
			d.s = next
			d.lastWrite = sent
			d.deadline = sent.Add(ttl * 3 / 4)
			return nil
		}
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return errLeaseLost
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.deadline.IsZero() {
			return fmt.Errorf("saga: write %s: %w", next.ID, err)
		}
		if time.Now().After(d.deadline) {
			return fmt.Errorf("%w: %v", errLeaseExpired, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// renew keeps the lease while the saga waits for an activity or a backoff,
// and cancels the driver when the lease is lost or cannot be renewed before
// another coordinator may take it.
func (d *driver) renew(ctx context.Context, cancel context.CancelCauseFunc) {
	ttl := d.c.cfg.LeaseTTL
	t := time.NewTicker(ttl / 6)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		due := time.Since(d.lastWrite) >= ttl/3
		d.mu.Unlock()
		if !due {
			continue
		}
		if err := d.save(ctx, nil); err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, errLeaseLost) || errors.Is(err, errLeaseExpired) {
				cancel(err)
				return
			}
		}
	}
}

// release gives the lease up on a graceful shutdown so that another
// coordinator resumes the saga at once. Best effort: if it fails, the lease
// expires.
func (d *driver) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.s.Owner != d.c.cfg.Owner || d.s.Status.Terminal() {
		return
	}
	next := d.s
	next.Owner, next.LeaseUntil, next.Updated = "", time.Time{}, time.Now().UTC()
	data, err := json.Marshal(next)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if rev, err := d.kv.Update(ctx, next.ID, data, d.s.Revision); err == nil {
		next.Revision = rev
		d.s = next
	}
}

// matches reports whether the stored steps are the definition's steps.
func matches(s Saga, def Definition) bool {
	if len(s.Steps) != len(def.Steps) {
		return false
	}
	for i := range s.Steps {
		if s.Steps[i].Name != def.Steps[i].Name {
			return false
		}
	}
	return true
}

// advance performs the saga's next transition. done reports that the saga
// reached a terminal status (only meaningful with a nil error).
func (d *driver) advance(ctx context.Context) (done bool, err error) {
	s := d.snapshot()
	if !s.Status.Terminal() && !matches(s, d.def) {
		return true, d.park(ctx, s.Status, "the stored steps do not match the registered definition (was it changed while this saga ran?)", nil)
	}
	switch s.Status {
	case StatusRunning:
		for i, st := range s.Steps {
			if st.Status != StepDone {
				return false, d.attempt(ctx, i, false)
			}
		}
		return true, d.finish(ctx, StatusSucceeded, nil)
	case StatusCompensating:
		compensated := false
		for j := len(s.Steps) - 1; j >= 0; j-- {
			st := s.Steps[j]
			if st.Status == StepCompensating || (st.Status == StepDone && d.def.Steps[j].Compensation != "") {
				return false, d.attempt(ctx, j, true)
			}
			if st.Status == StepCompensated {
				compensated = true
			}
		}
		if compensated {
			return true, d.finish(ctx, StatusCompensated, nil)
		}
		return true, d.finish(ctx, StatusFailed, nil)
	}
	return true, nil
}

// attempt runs one attempt of step i's action (or compensation): it records
// the attempt as in flight, calls the activity and records its verdict.
func (d *driver) attempt(ctx context.Context, i int, comp bool) error {
	s := d.snapshot()
	st, spec := s.Steps[i], d.def.Steps[i]
	name, limit, n := spec.Action, spec.MaxAttempts, st.Attempts
	if comp {
		name, limit, n = spec.Compensation, spec.CompensationMaxAttempts, st.CompensationAttempts
	}
	fn, ok := d.c.activity(name)
	if !ok {
		return d.park(ctx, s.Status, fmt.Sprintf("activity %q of step %s is not registered on coordinator %s", name, spec.Name, d.c.cfg.Owner), nil)
	}
	if st.InFlight {
		// The coordinator that started this attempt died during it: run
		// the same attempt again, a bounded number of times.
		if st.Interrupted >= maxInterrupts {
			return d.verdict(ctx, i, comp, n, nil, fmt.Errorf("attempt %d was interrupted %d times (the coordinator died during it)", n, st.Interrupted+1))
		}
		d.log.Info("re-running an interrupted attempt", "step", spec.Name, "compensation", comp, "attempt", n)
	} else {
		if wait := time.Until(st.RetryAt); wait > 0 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(wait):
			}
		}
		n++
		if n > limit { // the budget shrank with a new definition
			return d.verdict(ctx, i, comp, n-1, nil, bus.Terminal(fmt.Errorf("no attempts left (%d of %d used)", n-1, limit)))
		}
	}
	now := time.Now().UTC()
	if err := d.save(ctx, func(s *Saga) {
		st := &s.Steps[i]
		if comp {
			st.Status, st.CompensationAttempts = StepCompensating, n
		} else {
			st.Status, st.Attempts = StepRunning, n
		}
		if st.InFlight {
			st.Interrupted++
		}
		st.InFlight, st.RetryAt, st.UpdatedAt = true, time.Time{}, now
	}); err != nil {
		return err
	}
	out, aerr, abandoned := d.call(ctx, fn, d.input(d.snapshot(), i, comp, n), spec, name, comp)
	if abandoned {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		return context.Canceled
	}
	return d.verdict(ctx, i, comp, n, out, aerr)
}

func (d *driver) input(s Saga, i int, comp bool, n int) ActivityInput {
	outs := map[string]json.RawMessage{}
	for _, st := range s.Steps {
		if len(st.Output) > 0 {
			outs[st.Name] = st.Output
		}
	}
	return ActivityInput{
		SagaID: s.ID, Definition: s.Definition, Step: s.Steps[i].Name, Compensating: comp, Attempt: n,
		Input: s.Input, Outputs: outs, SagaError: s.Error,
	}
}

func phase(comp bool) string {
	if comp {
		return "compensation"
	}
	return "action"
}

// call runs one activity attempt under the step's timeout. abandoned reports
// that the driver was cancelled (shutdown or lease lost) and no verdict may
// be recorded.
func (d *driver) call(ctx context.Context, fn Activity, in ActivityInput, spec Step, name string, comp bool) (json.RawMessage, error, bool) {
	ctx, span := d.c.tracer.Start(ctx, "saga."+phase(comp)+" "+spec.Name, trace.WithAttributes(
		attribute.String("saga.id", in.SagaID),
		attribute.String("saga.definition", in.Definition),
		attribute.String("saga.step", spec.Name),
		attribute.String("saga.activity", name),
		attribute.Bool("saga.compensating", comp),
		attribute.Int("saga.attempt", in.Attempt),
	))
	defer span.End()
	actx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	type result struct {
		out json.RawMessage
		err error
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("activity %s panicked: %v", name, p)}
			}
			ch <- r
		}()
		r.out, r.err = fn(actx, in)
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		// Shutting down or lost the lease: give the activity a moment to
		// notice, but record nothing; whoever resumes re-runs the attempt.
		select {
		case <-ch:
		case <-time.After(d.c.cfg.ShutdownGrace):
			d.mu.Lock()
			d.leftRunning = true
			d.mu.Unlock()
		}
		span.SetStatus(codes.Error, "abandoned")
		return nil, nil, true
	}
	if ctx.Err() != nil {
		span.SetStatus(codes.Error, "abandoned")
		return nil, nil, true
	}
	d.c.metrics.duration.WithLabelValues(in.Definition, spec.Name, phase(comp)).Observe(time.Since(start).Seconds())
	if r.err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		r.err = fmt.Errorf("timed out after %s: %w", spec.Timeout, r.err)
	}
	if r.err == nil && len(r.out) > 0 && !json.Valid(r.out) {
		r.err = bus.Terminal(fmt.Errorf("activity %s returned output that is not JSON", name))
	}
	if r.err != nil {
		span.RecordError(r.err)
		span.SetStatus(codes.Error, r.err.Error())
	}
	return r.out, r.err, false
}

// verdict records the outcome of attempt n of step i.
func (d *driver) verdict(ctx context.Context, i int, comp bool, n int, out json.RawMessage, aerr error) error {
	spec := d.def.Steps[i]
	limit := spec.MaxAttempts
	if comp {
		limit = spec.CompensationMaxAttempts
	}
	now := time.Now().UTC()
	m := d.c.metrics.attempts
	if aerr == nil {
		m.WithLabelValues(d.def.Name, spec.Name, phase(comp), "ok").Inc()
		return d.save(ctx, func(s *Saga) {
			st := &s.Steps[i]
			st.InFlight, st.Interrupted, st.UpdatedAt = false, 0, now
			if comp {
				st.Status, st.CompensationError = StepCompensated, ""
			} else {
				st.Status, st.Output, st.Error = StepDone, out, ""
			}
		})
	}
	record := func(st *StepState) {
		st.InFlight, st.Interrupted, st.UpdatedAt = false, 0, now
		if comp {
			st.CompensationError = aerr.Error()
		} else {
			st.Error = aerr.Error()
		}
	}
	if !bus.IsTerminal(aerr) && n < limit {
		delay := spec.Backoff(n)
		m.WithLabelValues(d.def.Name, spec.Name, phase(comp), "retry").Inc()
		d.log.Warn("saga activity failed; will retry", "step", spec.Name, "phase", phase(comp), "attempt", n, "of", limit, "retry_in", delay.Round(time.Millisecond), "err", aerr)
		return d.save(ctx, func(s *Saga) {
			st := &s.Steps[i]
			record(st)
			st.RetryAt = now.Add(delay)
		})
	}
	m.WithLabelValues(d.def.Name, spec.Name, phase(comp), "failed").Inc()
	why := fmt.Sprintf("failed after %d attempt(s): %v", n, aerr)
	if bus.IsTerminal(aerr) {
		why = fmt.Sprintf("failed (not retryable): %v", aerr)
	}
	if comp {
		return d.park(ctx, StatusCompensating, "compensation of step "+spec.Name+" "+why, func(s *Saga) { record(&s.Steps[i]) })
	}
	d.log.Warn("saga step failed; compensating", "step", spec.Name, "err", aerr)
	return d.save(ctx, func(s *Saga) {
		st := &s.Steps[i]
		record(st)
		st.Status = StepFailed
		s.Status = StatusCompensating
		s.Error = "step " + spec.Name + " " + why
		for k := i + 1; k < len(s.Steps); k++ {
			if s.Steps[k].Status == StepPending {
				s.Steps[k].Status, s.Steps[k].UpdatedAt = StepSkipped, now
			}
		}
	})
}

// park stops the saga for an operator; Retry resumes it in status from.
func (d *driver) park(ctx context.Context, from Status, reason string, mutate func(*Saga)) error {
	return d.finish(ctx, StatusParked, func(s *Saga) {
		if mutate != nil {
			mutate(s)
		}
		s.ParkedIn, s.ParkReason = from, reason
		s.Parks++
	})
}

// finish moves the saga to a terminal outcome. The outcome is published
// before it is written, with a message ID that is the same on every try, so
// a coordinator that dies in between publishes it again without a duplicate.
func (d *driver) finish(ctx context.Context, outcome Status, mutate func(*Saga)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := d.s
	next.Steps = slices.Clone(d.s.Steps)
	if mutate != nil {
		mutate(&next)
	}
	next.Status = outcome
	next.Updated = time.Now().UTC()
	if err := d.c.publishOutcome(ctx, next); err != nil {
		return err
	}
	if err := d.writeLocked(ctx, next, false); err != nil {
		return err
	}
	d.c.metrics.outcomes.WithLabelValues(next.Definition, string(outcome)).Inc()
	switch outcome {
	case StatusSucceeded:
		d.log.Info("saga succeeded")
	case StatusParked:
		d.log.Error("saga parked; needs an operator (sitebus sagas retry)", "reason", next.ParkReason, "error", next.Error)
	default:
		d.log.Warn("saga "+string(outcome), "error", next.Error)
	}
	return nil
}

func (c *Coordinator) publishOutcome(ctx context.Context, s Saga) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	msgID := s.ID + "." + string(s.Status)
	if s.Status == StatusParked {
		msgID = fmt.Sprintf("%s.parked.%d", s.ID, s.Parks)
	}
	msg := &nats.Msg{Subject: OutcomeSubject(s.Status, s.Definition), Data: data, Header: nats.Header{}}
	msg.Header.Set(bus.HeaderContentType, "application/json")
	msg.Header.Set(HeaderSagaID, s.ID)
	carrier := propagation.MapCarrier{}
	c.prop.Inject(ctx, carrier)
	for k, v := range carrier {
		msg.Header[k] = []string{v} // lower case, as W3C and pkg/bus write it
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.js.PublishMsg(pctx, msg, jetstream.WithMsgID(msgID)); err != nil {
		return fmt.Errorf("saga: publish outcome of %s: %w", s.ID, err)
	}
	return nil
}

// HeaderSagaID carries the saga ID on outcome messages.
const HeaderSagaID = "Sitebus-Saga-Id"
