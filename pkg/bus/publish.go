package bus

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
)

type publishOptions struct {
	msgID string
	// headers are the message's own (PublishMsg makes sure there are some).
	headers nats.Header
}

// PublishOption adjusts one publish.
type PublishOption func(*publishOptions)

// WithMsgID sets Nats-Msg-Id, so the stream stores the message once however
// often it is published within the duplicate window.
func WithMsgID(id string) PublishOption { return func(o *publishOptions) { o.msgID = id } }

// WithOrderingKey names what the message is about (e.g. "resource:<uuid>"):
// consumers handle messages with the same key one at a time, in order.
// An empty key adds nothing.
func WithOrderingKey(key string) PublishOption {
	if key == "" {
		return func(*publishOptions) {}
	}
	return WithHeader(HeaderOrderingKey, key)
}

// WithHeader adds a header to the published message.
func WithHeader(key, value string) PublishOption {
	return func(o *publishOptions) { o.headers.Set(key, value) }
}

// Publish encodes m and stores it on subject. It returns once JetStream has
// acknowledged the write (the PubAck), so a caller may then ack its own source.
// A duplicate within the window returns a PubAck with Duplicate set.
func (b *Bus) Publish(ctx context.Context, subject string, m proto.Message, opts ...PublishOption) (*jetstream.PubAck, error) {
	data, err := proto.Marshal(m)
	if err != nil {
		return nil, Terminal(fmt.Errorf("bus: encode %T: %w", m, err))
	}
	// Room for the two headers set here and the usual options' (message id,
	// ordering key, trace context) without the map growing.
	msg := &nats.Msg{Subject: subject, Data: data, Header: make(nats.Header, 5)}
	msg.Header.Set(HeaderContentType, ContentTypeProtobuf)
	msg.Header.Set(HeaderMessageType, string(m.ProtoReflect().Descriptor().FullName()))
	return b.PublishMsg(ctx, msg, opts...)
}

// PublishMsg stores a prepared message, adding the trace context of ctx.
func (b *Bus) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...PublishOption) (*jetstream.PubAck, error) {
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	// Options' headers go straight into the message's, not into a map of
	// their own that is then copied: this runs for every ingested frame.
	o := publishOptions{headers: msg.Header}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, span := b.tracer.Start(ctx, "publish "+msg.Subject, trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	// Attributes only for a span that keeps them (tracing on).
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.destination.name", msg.Subject),
			attribute.String("messaging.message.id", o.msgID),
		)
	}
	b.prop.Inject(ctx, headerCarrier(msg.Header))

	var jsOpts []jetstream.PublishOpt
	if o.msgID != "" {
		jsOpts = append(jsOpts, jetstream.WithMsgID(o.msgID))
	}
	root := subjectRoot(msg.Subject)
	var ack *jetstream.PubAck
	var err error
	if o.msgID == "" {
		ack, err = b.js.PublishMsg(ctx, msg, jsOpts...)
	} else {
		// With a message id the stream stores the message once however
		// often it is sent, so a publish that goes unanswered (its server
		// died, a leader is being elected) is sent again, not waited on
		// until ctx ends.
		err = retryUnanswered(ctx, func(ctx context.Context) error {
			var perr error
			ack, perr = b.js.PublishMsg(ctx, msg, jsOpts...)
			return perr
		})
	}
	if err != nil {
		b.metrics.publishErrs.WithLabelValues(root).Inc()
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("bus: publish %s: %w", msg.Subject, err)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int64("messaging.nats.stream_sequence", int64(ack.Sequence)), attribute.Bool("messaging.nats.duplicate", ack.Duplicate))
	}
	b.metrics.published.WithLabelValues(root).Inc()
	return ack, nil
}

func subjectRoot(subject string) string {
	if i := strings.IndexByte(subject, '.'); i > 0 {
		return subject[:i]
	}
	return subject
}
