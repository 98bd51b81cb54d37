package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetter is a parked message and why it was parked.
type DeadLetter struct {
	// Seq is the sequence in the DLQ stream (set when read back).
	Seq uint64
	// Source is the consumer or component that gave up on the message.
	Source string
	Reason string
	// Subject the message was originally on; empty when it never had one
	// (e.g. a frame whose destination could not be parsed). Retry needs it.
	Subject string
	// Stream and StreamSeq locate the original, when it was stored.
	Stream     string
	StreamSeq  uint64
	Deliveries uint64
	Time       time.Time
	Header     nats.Header
	Data       []byte
	// ID deduplicates parking the same message twice (handler and advisory
	// path, or a bridge restart). Derived from Stream/StreamSeq when empty.
	ID string
}

type rawMsg struct {
	Subject string
	Header  nats.Header
	Data    []byte
	Stream  string
	Seq     uint64
}

func rawFromMsg(m jetstream.Msg, d Delivery) rawMsg {
	return rawMsg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Stream: d.Stream, Seq: d.StreamSeq}
}

func (b *Bus) deadLetter(ctx context.Context, rm rawMsg, source, reason string, deliveries uint64) error {
	return b.Park(ctx, DeadLetter{
		Source: source, Reason: reason, Subject: rm.Subject, Stream: rm.Stream, StreamSeq: rm.Seq,
		Deliveries: deliveries, Header: rm.Header, Data: rm.Data,
	})
}

// Park stores a dead letter. It returns only once the DLQ stream has it.
func (b *Bus) Park(ctx context.Context, dl DeadLetter) error {
	if !ValidToken(dl.Source) {
		return fmt.Errorf("bus: invalid dead-letter source %q", dl.Source)
	}
	h := nats.Header{}
	for k, vs := range dl.Header {
		if k == HeaderMsgID {
			continue
		}
		h[k] = append([]string(nil), vs...)
	}
	h.Set(HeaderDLQReason, truncate(dl.Reason, 4096))
	h.Set(HeaderDLQSource, dl.Source)
	h.Set(HeaderDLQSubject, dl.Subject)
	h.Set(HeaderDLQDeliveries, strconv.FormatUint(dl.Deliveries, 10))
	h.Set(HeaderDLQTime, time.Now().UTC().Format(time.RFC3339Nano))
	if dl.Stream != "" {
		h.Set(HeaderDLQStream, dl.Stream)
		h.Set(HeaderDLQSeq, strconv.FormatUint(dl.StreamSeq, 10))
	}
	id := dl.ID
	if id == "" {
		id = fmt.Sprintf("dlq:%s:%s:%d", dl.Source, dl.Stream, dl.StreamSeq)
	}
	subject := DLQSubject(dl.Source, dl.Subject)
	if dl.Subject != "" && !validSubject(dl.Subject) {
		subject = DLQSubject(dl.Source, "")
	}
	if _, err := b.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: h, Data: dl.Data}, WithMsgID(id)); err != nil {
		return err
	}
	b.metrics.deadLettered.WithLabelValues(dl.Source).Inc()
	return nil
}

func validSubject(s string) bool {
	if s == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !ValidToken(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

func deadLetterFrom(sm StoredMsg) DeadLetter {
	h := sm.Header
	dl := DeadLetter{
		Seq: sm.Seq, Source: h.Get(HeaderDLQSource), Reason: h.Get(HeaderDLQReason), Subject: h.Get(HeaderDLQSubject),
		Stream: h.Get(HeaderDLQStream), Time: sm.Time, Header: h, Data: sm.Data,
	}
	dl.StreamSeq, _ = strconv.ParseUint(h.Get(HeaderDLQSeq), 10, 64)
	dl.Deliveries, _ = strconv.ParseUint(h.Get(HeaderDLQDeliveries), 10, 64)
	return dl
}

// DeadLetters lists parked messages whose DLQ subject matches filter
// (e.g. "dlq.order.>"; empty: all).
func (b *Bus) DeadLetters(ctx context.Context, filter string, limit int) ([]DeadLetter, error) {
	opts := ScanOptions{Limit: limit}
	if filter != "" {
		opts.Subjects = []string{filter}
	}
	return b.scanDeadLetters(ctx, opts)
}

// LatestDeadLetters lists the newest parked messages, at most n, oldest
// first: what an operator looks at first, however many older ones wait.
func (b *Bus) LatestDeadLetters(ctx context.Context, n int) ([]DeadLetter, error) {
	return b.scanDeadLetters(ctx, ScanOptions{Last: n})
}

func (b *Bus) scanDeadLetters(ctx context.Context, opts ScanOptions) ([]DeadLetter, error) {
	var out []DeadLetter
	err := b.Scan(ctx, DLQStream, opts, func(sm StoredMsg) error {
		out = append(out, deadLetterFrom(sm))
		return nil
	})
	return out, err
}

// DeadLetter reads one parked message by its DLQ sequence.
func (b *Bus) DeadLetter(ctx context.Context, seq uint64) (DeadLetter, error) {
	st, err := b.js.Stream(ctx, DLQStream)
	if err != nil {
		return DeadLetter{}, err
	}
	raw, err := st.GetMsg(ctx, seq)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return DeadLetter{}, fmt.Errorf("bus: no dead letter with sequence %d", seq)
		}
		return DeadLetter{}, err
	}
	return deadLetterFrom(StoredMsg{Stream: DLQStream, Seq: raw.Sequence, Subject: raw.Subject, Header: raw.Header, Data: raw.Data, Time: raw.Time}), nil
}

// ErrNotRetryable is returned by RetryDeadLetter for a letter that has no
// original subject to go back to.
var ErrNotRetryable = errors.New("dead letter has no original subject")

// RetryDeadLetter puts a parked message back on its original subject, as a
// new message, and removes it from the DLQ once that write is acknowledged.
func (b *Bus) RetryDeadLetter(ctx context.Context, seq uint64) (*jetstream.PubAck, error) {
	dl, err := b.DeadLetter(ctx, seq)
	if err != nil {
		return nil, err
	}
	if dl.Subject == "" || !validSubject(dl.Subject) {
		return nil, fmt.Errorf("bus: dead letter %d: %w", seq, ErrNotRetryable)
	}
	h := nats.Header{}
	for k, vs := range dl.Header {
		switch k {
		case HeaderDLQReason, HeaderDLQSource, HeaderDLQSubject, HeaderDLQStream, HeaderDLQSeq, HeaderDLQDeliveries, HeaderDLQTime, HeaderMsgID:
			continue
		}
		h[k] = vs
	}
	// An event parked before subjects had a partition goes back to its
	// partition, to be handled in order with those published since.
	subject := partitionLegacyEvent(dl.Subject, h, dl.Data)
	ack, err := b.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: h, Data: dl.Data}, WithMsgID(fmt.Sprintf("dlq-retry:%d", seq)))
	if err != nil {
		return nil, err
	}
	if err := b.deleteDLQ(ctx, seq); err != nil {
		return ack, fmt.Errorf("bus: retried dead letter %d as %d but could not remove it: %w", seq, ack.Sequence, err)
	}
	return ack, nil
}

func (b *Bus) deleteDLQ(ctx context.Context, seq uint64) error {
	st, err := b.js.Stream(ctx, DLQStream)
	if err != nil {
		return err
	}
	return st.DeleteMsg(ctx, seq)
}

// PurgeDeadLetters removes parked messages matching filter (empty: all) and
// returns how many were removed.
func (b *Bus) PurgeDeadLetters(ctx context.Context, filter string) (uint64, error) {
	st, err := b.js.Stream(ctx, DLQStream)
	if err != nil {
		return 0, err
	}
	before, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	var opts []jetstream.StreamPurgeOpt
	if filter != "" {
		opts = append(opts, jetstream.WithPurgeSubject(filter))
	}
	if err := st.Purge(ctx, opts...); err != nil {
		return 0, err
	}
	after, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	return before.State.Msgs - after.State.Msgs, nil
}
