package stompbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-stomp/stomp/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/failpoint"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// reconnectDelay is min(2^(attempt-1) s, max) plus 0–25% jitter, the Python
// agent's schedule, so a broker restart does not see every agent at once.
func reconnectDelay(attempt int, max time.Duration) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d + time.Duration(rand.Float64()*0.25*float64(d))
}

// consume keeps one subscription's session up until ctx ends.
func (br *Bridge) consume(ctx context.Context, s *subscription) {
	log := br.log.With("offering", s.offering.Config.Name, "object_type", s.objectType)
	attempt := 0
	for ctx.Err() == nil {
		start := time.Now()
		frames, err := br.session(ctx, s)
		if ctx.Err() != nil {
			return
		}
		// A session that worked for a while starts the backoff over.
		if frames > 0 || time.Since(start) > time.Minute {
			attempt = 0
		}
		attempt++
		delay := reconnectDelay(attempt, br.cfg.Stomp.ReconnectMax)
		lvl := log.Warn
		if attempt > 3 {
			lvl = log.Error
		}
		lvl("STOMP session ended; reconnecting", "err", err, "endpoint", s.endpoint.String(), "attempt", attempt, "retry_in", delay.Round(time.Millisecond))
		br.metrics.reconnects.WithLabelValues(s.objectType).Inc()
		if sleep(ctx, delay) != nil {
			return
		}
	}
}

// session runs one connection: subscribe with client-individual ack and hand
// each frame to ingest. It returns when the connection fails or ctx ends;
// frames not yet acked then go back to the queue and come again.
func (br *Bridge) session(ctx context.Context, s *subscription) (int, error) {
	conn, err := dial(ctx, s.endpoint, s.cred, br.cfg.Stomp.Heartbeat)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	var inflight sync.WaitGroup
	defer func() {
		cancel()
		inflight.Wait()
		s.connected.Store(false)
		br.metrics.connected.WithLabelValues(s.offeringHex, s.objectType).Set(0)
		disconnect(conn)
	}()
	sub, err := conn.Subscribe(s.destination(), stomp.AckClientIndividual,
		stomp.SubscribeOpt.Id(s.queue),
		// RabbitMQ's flow control: at most this many unacked frames in
		// flight, which also bounds what a NATS outage holds in memory.
		stomp.SubscribeOpt.Header("prefetch-count", strconv.Itoa(br.cfg.Stomp.PrefetchCount)))
	if err != nil {
		return 0, fmt.Errorf("subscribe %s: %w", s.destination(), err)
	}
	s.connected.Store(true)
	br.metrics.connected.WithLabelValues(s.offeringHex, s.objectType).Set(1)
	br.log.Info("STOMP subscription active", "offering", s.offering.Config.Name, "object_type", s.objectType, "queue", s.queue, "endpoint", s.endpoint.String())
	if s.objectType == events.Order {
		// Events Waldur published before this queue existed are gone.
		br.resyncOrders(s.offering)
	}
	sem := make(chan struct{}, br.cfg.Stomp.PrefetchCount)
	frames := 0
	for {
		select {
		case <-ctx.Done():
			return frames, ctx.Err()
		case m, ok := <-sub.C:
			if !ok {
				return frames, errors.New("subscription closed by the broker")
			}
			if m.Err != nil {
				return frames, m.Err
			}
			frames++
			s.lastFrame.Store(time.Now().UnixNano())
			sem <- struct{}{}
			inflight.Add(1)
			go func() {
				defer func() { <-sem; inflight.Done() }()
				br.ingest(sctx, s, Frame{Destination: m.Destination, MessageID: header(m, "x-message-id"), Body: m.Body},
					func() error { return conn.Ack(m) })
			}()
		}
	}
}

func disconnect(conn *stomp.Conn) {
	done := make(chan struct{})
	go func() { _ = conn.Disconnect(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = conn.MustDisconnect()
	}
}

// ingest stores one frame and then acks it. Until JetStream has confirmed
// the write (or the dead letter), the frame stays unacked on the broker.
func (br *Bridge) ingest(ctx context.Context, s *subscription, frame Frame, ack func() error) {
	received := time.Now()
	offeringHex := s.offeringHex
	ctx, span := br.tracer.Start(ctx, s.spanName, trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()

	ev, subject, key, derr := decode(offeringHex, s.objectType, frame, received, br.maxFrameBody())
	// Attributes are built only for a span that keeps them: with tracing
	// off (the default) they would be allocated and dropped for every frame.
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.system", "rabbitmq"),
			attribute.String("messaging.destination.name", frame.Destination),
			attribute.String("waldur.object_type", s.objectType),
			attribute.String("waldur.offering_uuid", offeringHex),
			attribute.String("messaging.message.id", ev.MessageId),
		)
	}
	if err := failpoint.Inject(ctx, "bridge/before-publish"); err != nil {
		return
	}
	var outcome string
	if derr != nil {
		span.SetStatus(codes.Error, derr.Error())
		header := map[string][]string{bus.HeaderContentType: {bus.ContentTypeProtobuf}, bus.HeaderMessageType: {string(ev.ProtoReflect().Descriptor().FullName())},
			"Sitebus-Frame-Destination": {frame.Destination}, HeaderFrameBodySize: {strconv.Itoa(len(frame.Body))}}
		err := retry(ctx, func() error {
			return br.bus.Park(ctx, bus.DeadLetter{
				Source: Name, Reason: derr.Error(), Subject: subject, Data: mustMarshal(ev),
				ID: "frame:" + ev.MessageId, Header: header,
			})
		}, br.log, "park malformed frame")
		if err != nil {
			return
		}
		br.log.Warn("malformed frame dead-lettered", "offering", s.offering.Config.Name, "object_type", s.objectType, "reason", derr.Error(), "message_id", ev.MessageId)
		outcome = "dead_lettered"
	} else {
		var dup bool
		err := retry(ctx, func() error {
			ack, err := br.bus.Publish(ctx, subject, ev, bus.WithMsgID(ev.MessageId), bus.WithOrderingKey(key))
			if err == nil {
				dup = ack.Duplicate
			}
			return err
		}, br.log, "publish event")
		if err != nil {
			return
		}
		outcome = "published"
		if dup {
			outcome = "duplicate"
		}
	}
	if err := failpoint.Inject(ctx, "bridge/after-publish"); err != nil {
		return
	}
	if err := ack(); err != nil {
		// The broker will redeliver; the publish dedupes it.
		br.log.Warn("frame ack failed; it will be redelivered and deduplicated", "err", err, "message_id", ev.MessageId)
		return
	}
	br.metrics.frames.WithLabelValues(s.objectType, outcome).Inc()
	br.metrics.ingestLatency.Observe(time.Since(received).Seconds())
}

// retry calls f until it succeeds or ctx ends, backing off from 100ms to 5s.
// Used for the bus writes a frame's ack waits on: NATS being away is a
// reason to wait, never to drop or ack the frame.
func retry(ctx context.Context, f func() error, log interface {
	Warn(string, ...any)
}, what string) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn(what+" failed; the frame stays unacked and is retried", "err", err, "attempt", attempt)
		}
		if sleep(ctx, delay) != nil {
			return ctx.Err()
		}
		delay = min(delay*2, 5*time.Second)
	}
}

func header(m *stomp.Message, key string) string {
	if m.Header == nil {
		return ""
	}
	return m.Header.Get(key)
}

// Frame is the part of a STOMP MESSAGE the bridge reads.
type Frame struct {
	Destination string
	MessageID   string
	Body        []byte
}

// HeaderFrameBodySize is the dead letter header with the size, in bytes,
// of the parked frame's body as it arrived: an oversized body is kept only
// in part.
const HeaderFrameBodySize = "Sitebus-Frame-Body-Size"

// keptOfOversized is how much of an oversized body its dead letter keeps:
// enough for an operator to see what it was, little enough that a storm of
// them neither fills the dead-letter stream nor trips NATS's payload limit.
const keptOfOversized = 4 << 10

// decode turns a frame from the queue of (offeringHex, objectType) into an
// event and its subject. The object type and offering come from the frame's
// destination when it names a subscription queue (as the Python agent reads
// account types from it), else from the queue it arrived on. On a malformed
// frame it still returns the event (for the dead letter) and an error saying
// what is wrong; subject is then where it would have gone, if known. key
// is the event's ordering key (events.OrderingKey), which both its
// subject's partition and the publish's ordering header carry: read from
// the body once per frame. A body over maxBody bytes is malformed, and its
// event keeps only its first bytes.
func decode(offeringHex, objectType string, f Frame, received time.Time, maxBody int) (ev *sitebusv1.WaldurEvent, subject, key string, err error) {
	id := f.MessageID
	if id == "" {
		// The whole body, so two oversized frames that differ only past
		// the kept part are two dead letters.
		sum := sha256.Sum256([]byte(f.Destination + "\n" + string(f.Body)))
		id = hex.EncodeToString(sum[:16])
	}
	ev = &sitebusv1.WaldurEvent{
		ObjectType: objectType, OfferingUuid: offeringHex, Body: f.Body, Destination: f.Destination,
		MessageId: id, ReceivedAt: timestamppb.New(received), Source: sitebusv1.EventSource_EVENT_SOURCE_STOMP,
	}
	if len(f.Body) > maxBody {
		// No subject: the event cannot be retried from its dead letter,
		// which holds part of the body only.
		ev.Body = f.Body[:min(len(f.Body), keptOfOversized)]
		return ev, "", "", fmt.Errorf("frame body exceeds %d bytes (%d bytes)", maxBody, len(f.Body))
	}
	if off, typ, ok := parseDestination(f.Destination); ok {
		if off != offeringHex {
			return ev, "", "", fmt.Errorf("frame for offering %s arrived on a queue of offering %s", off, offeringHex)
		}
		ev.ObjectType = typ
	}
	// The subject's partition comes from the same key the publish puts in
	// the ordering header, so consumers in cluster ordering keep one
	// resource's events on one slot.
	key, verr := events.Inspect(ev.ObjectType, f.Body)
	subject, serr := bus.EventSubject(ev.OfferingUuid, ev.ObjectType, key)
	if !events.Known(ev.ObjectType) {
		if serr != nil {
			subject = ""
		}
		return ev, subject, key, fmt.Errorf("unknown object type %q", ev.ObjectType)
	}
	if serr != nil {
		return ev, "", key, serr
	}
	return ev, subject, key, verr
}

// parseDestination reads a subscription queue destination. Mastermind sends
// to /amq/queue/subscription_<sub>_offering_<off>_<type>; RabbitMQ delivers
// it with destination /queue/<same name>.
func parseDestination(dest string) (offeringHex, objectType string, ok bool) {
	rest, ok := strings.CutPrefix(dest, "/amq/queue/subscription_")
	if !ok {
		rest, ok = strings.CutPrefix(dest, "/queue/subscription_")
	}
	if !ok || len(rest) < 32+len("_offering_")+32+2 {
		return "", "", false
	}
	rest = rest[32:]
	rest, ok = strings.CutPrefix(rest, "_offering_")
	if !ok {
		return "", "", false
	}
	off, typ := rest[:32], rest[32:]
	typ, ok = strings.CutPrefix(typ, "_")
	if !ok || typ == "" {
		return "", "", false
	}
	return off, typ, true
}
