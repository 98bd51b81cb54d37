package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/keylock"
)

// ConsumerConfig configures one durable pull consumer and the loop around its
// handler.
type ConsumerConfig struct {
	// Name is the durable consumer name; it is also the dead-letter source.
	Name string
	// Stream to consume from.
	Stream string
	// FilterSubjects selects the subjects of Stream to consume.
	FilterSubjects []string
	// Partitioned says FilterSubjects are bases of partitioned subjects
	// (<base>.<partition>, see EventSubject and PartitionedSubject): the
	// subscription takes <base>.* and the unpartitioned <base>, as one
	// consumer or, in the Bus's cluster ordering mode, as one consumer per
	// slot with one message in flight each, so that the messages of one
	// ordering key are handled one at a time and in order across every
	// process of the service.
	Partitioned bool
	// MaxDeliver is how many times a failing message is tried before it is
	// dead-lettered. Default 10: with the default backoff, about four
	// minutes of retries, enough to ride out a platform or Waldur restart.
	MaxDeliver int
	// AckWait is how long the server waits for a verdict before it redelivers
	// (after a crash). It is short so that a restarted process gets the work
	// its predecessor was killed in within seconds; a live handler, and a
	// message waiting for its ordering key, are kept with InProgress every
	// AckWait/3. Default 3s.
	AckWait time.Duration
	// Backoff schedules redeliveries after handler errors. Default exponential
	// 1s..1m with jitter.
	Backoff Backoff
	// Concurrency is how many messages are handled at once. Default 8.
	Concurrency int
	// HandlerTimeout bounds one handler call; a timeout is a retryable error.
	// Default 5m.
	HandlerTimeout time.Duration
	// DeliverPolicy for a consumer created for the first time. Default all.
	DeliverPolicy jetstream.DeliverPolicy
	// OrderingKey names what a message is about when its publisher did not
	// say (no Sitebus-Ordering-Key header), e.g. "order:<uuid>" from a
	// Waldur event's body. Messages with the same key are handled one at a
	// time and in delivery order by every consumer of the Bus; "" or nil:
	// the message is not serialised.
	OrderingKey func(subject string, data []byte) string
	// KeyLocker, when set, holds each message's ordering key with it
	// instead of the Bus's in-process locks: with *Leases, one handler per
	// key across every replica. A partitioned subscription with a KeyLocker
	// is one shared consumer with many messages in flight even in cluster
	// ordering, not slot consumers: one key's messages are then never
	// handled at once, but replicas may take them out of stream order. For
	// handlers that act on the current state of what a message names, not
	// on its content (an order event only says "look at order X again";
	// the handler reads the order from Waldur), that is all ordering is
	// for, and a shared consumer's acks are replicated in batches where 128
	// one-in-flight slot consumers each replicate their own.
	KeyLocker keylock.Locker
}

func (c *ConsumerConfig) setDefaults() {
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 10
	}
	if c.AckWait == 0 {
		c.AckWait = 3 * time.Second
	}
	if c.Backoff == nil {
		c.Backoff = ExponentialBackoff(time.Second, time.Minute)
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.HandlerTimeout == 0 {
		c.HandlerTimeout = 5 * time.Minute
	}
}

// Validate reports configuration that cannot work.
func (c *ConsumerConfig) Validate() error {
	var errs []error
	if !ValidToken(c.Name) {
		errs = append(errs, fmt.Errorf("bus: consumer name %q must be letters, digits, '-' or '_'", c.Name))
	}
	if c.Stream == "" {
		errs = append(errs, errors.New("bus: consumer "+c.Name+": stream is required"))
	}
	if c.MaxDeliver < 1 {
		errs = append(errs, fmt.Errorf("bus: consumer %s: max deliver %d < 1", c.Name, c.MaxDeliver))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("bus: consumer %s: concurrency %d < 1", c.Name, c.Concurrency))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("bus: consumer %s: ack wait %s < 1s", c.Name, c.AckWait))
	}
	return errors.Join(errs...)
}

// Handler handles one decoded message. nil acks it; an error marked
// [Terminal] dead-letters it; any other error retries it later.
type Handler[PT proto.Message] func(ctx context.Context, msg PT) error

// Delivery describes the message a handler is working on.
type Delivery struct {
	Subject      string
	Stream       string
	Consumer     string
	StreamSeq    uint64
	NumDelivered uint64
	Header       nats.Header
	// ReplayOf is the original stream sequence when this is a replayed copy.
	ReplayOf uint64
	// MaxDeliver is the consumer's attempt budget; on the attempt that
	// reaches it, a handler may settle the outcome itself (e.g. mark an
	// order erred) instead of returning an error that parks the message.
	MaxDeliver int
}

// LastAttempt reports whether this delivery is the last the consumer's
// budget allows.
func (d Delivery) LastAttempt() bool { return d.MaxDeliver > 0 && int(d.NumDelivered) >= d.MaxDeliver }

type deliveryKey struct{}

// DeliveryFromContext returns the delivery a handler's ctx belongs to.
func DeliveryFromContext(ctx context.Context) (Delivery, bool) {
	d, ok := ctx.Value(deliveryKey{}).(Delivery)
	return d, ok
}

// Subscription is a running consumer.
type Subscription struct {
	bus *Bus
	cfg ConsumerConfig
	// One consumer, or in cluster ordering one per slot.
	consumers  []jetstream.Consumer
	ccs        []jetstream.ConsumeContext
	advisories []*nats.Subscription
	checked    atomic.Uint32 // Check calls, to take the consumers in turn
	// This consumer's series of the bus metrics every message touches,
	// looked up once rather than by label on each message.
	waited   prometheus.Observer
	latency  prometheus.Observer
	acked    prometheus.Counter
	inflight sync.WaitGroup
	sem      chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once
}

// Subscribe creates (or updates) the durable consumer and starts handling
// messages with h until Stop. T is the protobuf message type the stream
// carries.
func Subscribe[T any, PT interface {
	*T
	proto.Message
}](ctx context.Context, b *Bus, cfg ConsumerConfig, h Handler[PT]) (*Subscription, error) {
	return subscribe(ctx, b, cfg, func(data []byte) func(context.Context) error {
		var v PT = new(T)
		if err := proto.Unmarshal(data, v); err != nil {
			err = Terminal(fmt.Errorf("decode %T: %w", v, err))
			return func(context.Context) error { return err }
		}
		return func(ctx context.Context) error { return h(ctx, v) }
	})
}

// SubscribeRaw is Subscribe for streams whose payload is not protobuf
// (e.g. the saga outcomes, which are JSON): h gets the bytes as stored.
func SubscribeRaw(ctx context.Context, b *Bus, cfg ConsumerConfig, h func(ctx context.Context, data []byte) error) (*Subscription, error) {
	return subscribe(ctx, b, cfg, func(data []byte) func(context.Context) error {
		return func(ctx context.Context) error { return h(ctx, data) }
	})
}

// decoder turns a message's data into the call of its handler. It runs
// on the consumer's delivery goroutine, before the message waits for its
// key: that goroutine lives as long as the subscription, so its stack has
// long grown to what protobuf decoding needs, where each message's own
// goroutine starts small and grew (runtime.copystack under proto.Unmarshal
// was a third of the consumer's CPU per message in the ingest benchmark).
type decoder func(data []byte) (handle func(context.Context) error)

func subscribe(ctx context.Context, b *Bus, cfg ConsumerConfig, decode decoder) (*Subscription, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	specs := consumerSpecs(cfg, b.cfg.Ordering, func(base string) bool { return b.holdsSubjects(ctx, cfg.Stream, base) })
	consumers, err := b.ensureConsumers(ctx, cfg, specs)
	if err != nil {
		return nil, fmt.Errorf("bus: create consumer %s on %s: %w", cfg.Name, cfg.Stream, err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Subscription{bus: b, cfg: cfg, consumers: consumers, sem: make(chan struct{}, cfg.Concurrency), ctx: runCtx, cancel: cancel,
		waited:  b.metrics.wait.WithLabelValues(cfg.Name),
		latency: b.metrics.latency.WithLabelValues(cfg.Name),
		acked:   b.metrics.handled.WithLabelValues(cfg.Name, "ack"),
	}

	// The callback only queues the message under its ordering key (so the
	// queue follows delivery order) and hands it to a goroutine; the wait
	// for the key and for a handler slot happens there, so one busy key
	// never holds up messages of other keys. MaxAckPending bounds how many
	// goroutines can be waiting.
	locker := b.locks
	if cfg.KeyLocker != nil {
		locker = cfg.KeyLocker
	}
	handle := func(m jetstream.Msg) {
		var ticket keylock.Ticket
		if key := s.orderingKey(m); key != "" {
			ticket = locker.Enqueue(key)
		}
		call := safeDecode(decode, m.Data())
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			if ticket != nil {
				defer ticket.Release()
			}
			s.process(m, ticket, call)
		}()
	}
	for i, cons := range consumers {
		name := specs[i].name
		adv := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", cfg.Stream, name)
		sub, err := b.nc.Subscribe(adv, s.onMaxDeliveries)
		if err != nil {
			s.abort()
			return nil, fmt.Errorf("bus: subscribe to %s: %w", adv, err)
		}
		s.advisories = append(s.advisories, sub)
		// A slot consumer has one message in flight: asking for more only
		// holds pull requests the server cannot fill.
		pull := cfg.Concurrency * 2
		if specs[i].maxAckPending == 1 {
			pull = 1
		}
		cc, err := cons.Consume(handle,
			jetstream.PullMaxMessages(pull),
			jetstream.PullHeartbeat(pullHeartbeat),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				b.log.Debug("consume", "consumer", name, "err", err)
			}))
		if err != nil {
			s.abort()
			return nil, fmt.Errorf("bus: consume %s: %w", name, err)
		}
		s.ccs = append(s.ccs, cc)
	}
	if len(specs) == 1 {
		b.log.Info("consumer started", "consumer", cfg.Name, "stream", cfg.Stream, "filter", specs[0].filters)
	} else {
		b.log.Info("consumer started", "consumer", cfg.Name, "stream", cfg.Stream, "filter", cfg.FilterSubjects, "ordering", OrderingCluster, "slots", len(specs))
	}
	return s, nil
}

// pullHeartbeat is how often the server confirms a waiting pull request.
// Two missed, the client asks again: a pull the server lost (sent while a
// consumer's leader was being elected) would otherwise hold the consumer's
// messages back for nats.go's default of 2 × 15 s; in a test on a fresh
// cluster, saga commands sat 30 s that way.
const pullHeartbeat = 5 * time.Second

// abort undoes a subscribe that failed half-way; nothing was delivered.
func (s *Subscription) abort() {
	for _, cc := range s.ccs {
		cc.Stop()
	}
	for _, a := range s.advisories {
		_ = a.Unsubscribe()
	}
	s.cancel()
}

// Name is the durable consumer name (in cluster ordering, the slot
// consumers' common prefix).
func (s *Subscription) Name() string { return s.cfg.Name }

// Consumers are the subscription's durable consumers: one, or one per
// slot in cluster ordering.
func (s *Subscription) Consumers() []jetstream.Consumer { return s.consumers }

// Check asks the server for a consumer, proving it is bound; for /readyz.
// With slot consumers it asks for one per call, in turn, so a probe costs
// one request however many slots there are, and a deleted slot consumer
// fails a probe within a round.
func (s *Subscription) Check(ctx context.Context) error {
	i := int(s.checked.Add(1)-1) % len(s.consumers)
	_, err := s.consumers[i].Info(ctx)
	return err
}

// Stop stops fetching, waits up to ctx for in-flight handlers to finish and
// then cancels the ones still running (their messages are redelivered).
func (s *Subscription) Stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		for _, cc := range s.ccs {
			cc.Drain()
		}
		for _, a := range s.advisories {
			_ = a.Drain()
		}
		// The consume callback adds to inflight, and a WaitGroup's Wait
		// must not run beside an Add from zero (the race detector caught
		// it): wait for the drained consumers to deliver their last
		// message first.
		for _, cc := range s.ccs {
			select {
			case <-cc.Closed():
			case <-ctx.Done():
				cc.Stop()
				<-cc.Closed()
			}
		}
		done := make(chan struct{})
		go func() { s.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.cancel()
			<-done
		}
		s.cancel()
	})
}

// orderingKey is the publisher's key, else the consumer's OrderingKey.
func (s *Subscription) orderingKey(m jetstream.Msg) string {
	if k := m.Headers().Get(HeaderOrderingKey); k != "" {
		return k
	}
	if s.cfg.OrderingKey != nil {
		return s.cfg.OrderingKey(m.Subject(), m.Data())
	}
	return ""
}

// wait takes the message's turn on its key, then a handler slot. false:
// the subscription stopped first; the message is left to redelivery.
func (s *Subscription) wait(ticket keylock.Ticket) bool {
	start := time.Now()
	if ticket != nil {
		if err := ticket.Wait(s.ctx); err != nil {
			return false
		}
	}
	select {
	case s.sem <- struct{}{}:
	case <-s.ctx.Done():
		return false
	}
	s.waited.Observe(time.Since(start).Seconds())
	return true
}

func (s *Subscription) process(m jetstream.Msg, ticket keylock.Ticket, call func(context.Context) error) {
	b := s.bus
	meta, err := m.Metadata()
	if err != nil {
		// Not a JetStream message: nothing to ack.
		b.log.Error("message without JetStream metadata", "consumer", s.cfg.Name, "err", err)
		return
	}
	d := Delivery{
		Subject: m.Subject(), Stream: meta.Stream, Consumer: meta.Consumer,
		StreamSeq: meta.Sequence.Stream, NumDelivered: meta.NumDelivered, Header: m.Headers(),
		MaxDeliver: s.cfg.MaxDeliver,
	}
	if v := m.Headers().Get(HeaderReplayOf); v != "" {
		d.ReplayOf, _ = strconv.ParseUint(v, 10, 64)
	}
	ctx := b.prop.Extract(s.ctx, headerCarrier(m.Headers()))
	ctx, span := b.tracer.Start(ctx, "process "+m.Subject(), trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()
	// Attributes only for a span that keeps them (tracing on): this runs
	// for every delivered message.
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.destination.name", m.Subject()),
			attribute.String("messaging.consumer.group.name", s.cfg.Name),
			attribute.Int64("messaging.nats.stream_sequence", int64(d.StreamSeq)),
			attribute.Int64("messaging.nats.delivered", int64(d.NumDelivered)),
		)
	}
	ctx = context.WithValue(ctx, deliveryKey{}, d)

	// Keep the message ours while it waits for its key and while the
	// handler runs longer than AckWait allows.
	defer keepAlive(m, s.cfg.AckWait/3)()
	if !s.wait(ticket) {
		return
	}
	defer func() { <-s.sem }()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.HandlerTimeout)
	defer cancel()
	start := time.Now()
	herr := safeCall(ctx, call)
	s.latency.Observe(time.Since(start).Seconds())

	// Built only when there is something to log: most messages are acked.
	log := func() *slog.Logger {
		return b.log.With("consumer", s.cfg.Name, "subject", d.Subject, "seq", d.StreamSeq, "delivered", d.NumDelivered)
	}
	switch {
	case herr == nil:
		if err := m.Ack(); err != nil {
			log().Warn("ack failed; the message will be redelivered", "err", err)
		}
		s.acked.Inc()
	case IsTerminal(herr) || int(d.NumDelivered) >= s.cfg.MaxDeliver:
		span.RecordError(herr)
		span.SetStatus(codes.Error, herr.Error())
		reason := herr.Error()
		if !IsTerminal(herr) {
			reason = fmt.Sprintf("gave up after %d attempts: %s", d.NumDelivered, herr)
		}
		if err := s.bus.deadLetter(s.ctx, rawFromMsg(m, d), s.cfg.Name, reason, d.NumDelivered); err != nil {
			// The copy is not safe yet: keep the original and try again.
			log().Error("dead-lettering failed; retrying later", "err", err, "reason", reason)
			_ = m.NakWithDelay(s.cfg.Backoff(int(d.NumDelivered)))
			b.metrics.handled.WithLabelValues(s.cfg.Name, "retry").Inc()
			return
		}
		_ = m.TermWithReason(truncate(reason, 256))
		log().Warn("message dead-lettered", "reason", reason)
		b.metrics.handled.WithLabelValues(s.cfg.Name, "dead_letter").Inc()
	default:
		span.RecordError(herr)
		span.SetStatus(codes.Error, herr.Error())
		delay, ok := retryDelay(herr)
		if !ok {
			delay = s.cfg.Backoff(int(d.NumDelivered))
		}
		log().Warn("handler failed; will retry", "err", herr, "retry_in", delay.Round(time.Millisecond))
		_ = m.NakWithDelay(delay)
		b.metrics.handled.WithLabelValues(s.cfg.Name, "retry").Inc()
	}
}

// keepAlive tells the server every period that m is still being worked on,
// until the returned stop is called. A timer that re-arms itself rather
// than a goroutine with a ticker: every delivered message has one, and most
// are acked long before it first fires.
func keepAlive(m jetstream.Msg, period time.Duration) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(period, func() {
		_ = m.InProgress()
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(period)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// safeCall turns a handler panic into a retryable error, so one bad message
// cannot take the whole service down; MaxDeliver then parks it.
func safeCall(ctx context.Context, f func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return f(ctx)
}

// safeDecode is decode(data), with a panic in decoding turned into a call
// that fails the way a panicking handler does.
func safeDecode(decode decoder, data []byte) (call func(context.Context) error) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("handler panic: %v", r)
			call = func(context.Context) error { return err }
		}
	}()
	return decode(data)
}

// onMaxDeliveries parks a message the server stopped delivering without a
// handler verdict (the process died during every remaining attempt).
func (s *Subscription) onMaxDeliveries(msg *nats.Msg) {
	var adv struct {
		Stream     string `json:"stream"`
		Consumer   string `json:"consumer"`
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if err := jsonUnmarshal(msg.Data, &adv); err != nil {
		s.bus.log.Error("bad max-deliveries advisory", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	stream, err := s.bus.js.Stream(ctx, adv.Stream)
	if err != nil {
		s.bus.log.Error("max-deliveries advisory: stream lookup", "stream", adv.Stream, "err", err)
		return
	}
	raw, err := stream.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		s.bus.log.Error("max-deliveries advisory: message lookup", "seq", adv.StreamSeq, "err", err)
		return
	}
	rm := rawMsg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data, Stream: adv.Stream, Seq: adv.StreamSeq}
	reason := fmt.Sprintf("delivered %d times without a handler verdict (handler crashed or timed out)", adv.Deliveries)
	if err := s.bus.deadLetter(ctx, rm, s.cfg.Name, reason, adv.Deliveries); err != nil {
		s.bus.log.Error("max-deliveries advisory: dead-lettering failed", "seq", adv.StreamSeq, "err", err)
		return
	}
	s.bus.log.Warn("message dead-lettered", "consumer", s.cfg.Name, "seq", adv.StreamSeq, "reason", reason)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
