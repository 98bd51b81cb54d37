package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var jsonUnmarshal = json.Unmarshal

// StoredMsg is a message as a stream holds it.
type StoredMsg struct {
	Stream  string
	Seq     uint64
	Subject string
	Header  nats.Header
	Data    []byte
	Time    time.Time
}

// ScanOptions selects the messages Scan visits.
type ScanOptions struct {
	// Subjects filters the stream (empty: all).
	Subjects []string
	// FromSeq starts at this sequence (0: from the start or Since).
	FromSeq uint64
	// Since starts at the first message stored at or after this time.
	Since time.Time
	// Limit stops after this many messages (0: no limit).
	Limit int
	// Last, without FromSeq and Since, starts at the last Last sequences
	// of the stream (messages deleted among them are not made up for).
	Last int
}

// errStopScan ends a scan early without an error.
var errStopScan = errors.New("stop scan")

// Scan visits the stored messages of stream in order, up to the last message
// present when the scan started, so that a visitor that publishes into the
// same stream (a replay) never sees its own copies.
func (b *Bus) Scan(ctx context.Context, stream string, opts ScanOptions, visit func(StoredMsg) error) error {
	st, err := b.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("bus: stream %s info: %w", stream, err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 || (opts.FromSeq > 0 && opts.FromSeq > last) {
		return nil
	}
	if opts.Last > 0 && opts.FromSeq == 0 && opts.Since.IsZero() {
		opts.FromSeq = 1
		if n := uint64(opts.Last); last > n {
			opts.FromSeq = last - n + 1
		}
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: opts.Subjects, InactiveThreshold: 30 * time.Second}
	switch {
	case opts.FromSeq > 0:
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, opts.FromSeq
	case !opts.Since.IsZero():
		since := opts.Since
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := st.OrderedConsumer(ctx, occ)
	if err != nil {
		return fmt.Errorf("bus: scan %s: %w", stream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("bus: scan %s: %w", stream, err)
	}
	defer it.Stop()
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := it.Next(jetstream.NextMaxWait(2 * time.Second))
		if errors.Is(err, nats.ErrTimeout) {
			// Nothing more matches the filter.
			return nil
		}
		if err != nil {
			return fmt.Errorf("bus: scan %s: %w", stream, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("bus: scan %s: %w", stream, err)
		}
		if meta.Sequence.Stream > last {
			return nil
		}
		sm := StoredMsg{Stream: stream, Seq: meta.Sequence.Stream, Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Time: meta.Timestamp}
		if err := visit(sm); err != nil {
			if errors.Is(err, errStopScan) {
				return nil
			}
			return err
		}
		n++
		if (opts.Limit > 0 && n >= opts.Limit) || meta.NumPending == 0 || meta.Sequence.Stream == last {
			return nil
		}
	}
}
