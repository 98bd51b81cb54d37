package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// ReplayOptions selects the stored events to re-deliver.
type ReplayOptions struct {
	// Stream to replay; default EventsStream.
	Stream string
	// Subject filter, e.g. "waldur.*.order" (on the events stream it also
	// takes the partitioned subjects, see EventFilters). Required, so an
	// operator never replays everything by accident.
	Subject string
	// Since or FromSeq picks the start; exactly one is required.
	Since   time.Time
	FromSeq uint64
	// DryRun lists what would be re-delivered without publishing.
	DryRun bool
}

// Validate reports a replay request that is ambiguous or empty.
func (o *ReplayOptions) Validate() error {
	var errs []error
	if o.Subject == "" {
		errs = append(errs, errors.New("replay: a subject filter is required (e.g. waldur.*.order)"))
	}
	if o.Since.IsZero() == (o.FromSeq == 0) {
		errs = append(errs, errors.New("replay: give exactly one of --since or --from-seq"))
	}
	return errors.Join(errs...)
}

// Replayed describes one message a replay visited.
type Replayed struct {
	Seq     uint64
	Subject string
	Time    time.Time
	// NewSeq is the sequence of the re-delivered copy (0 on a dry run).
	NewSeq uint64
}

// Replay re-delivers stored messages to the services by publishing a copy of
// each on its subject, marked with Sitebus-Replay-Of. It is safe because
// handlers are idempotent. visit is called for each message. An event
// stored before subjects had a partition is copied to its partition.
func (b *Bus) Replay(ctx context.Context, opts ReplayOptions, visit func(Replayed)) (int, error) {
	if opts.Stream == "" {
		opts.Stream = EventsStream
	}
	if err := opts.Validate(); err != nil {
		return 0, err
	}
	run := nuid.Next()
	n := 0
	filters := []string{opts.Subject}
	if opts.Stream == EventsStream {
		filters = EventFilters(opts.Subject)
	}
	err := b.Scan(ctx, opts.Stream, ScanOptions{Subjects: filters, FromSeq: opts.FromSeq, Since: opts.Since}, func(sm StoredMsg) error {
		r := Replayed{Seq: sm.Seq, Subject: sm.Subject, Time: sm.Time}
		if !opts.DryRun {
			h := nats.Header{}
			for k, vs := range sm.Header {
				if k != HeaderMsgID {
					h[k] = vs
				}
			}
			h.Set(HeaderReplayOf, strconv.FormatUint(sm.Seq, 10))
			subject := sm.Subject
			if opts.Stream == EventsStream {
				subject = partitionLegacyEvent(subject, h, sm.Data)
			}
			ack, err := b.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: h, Data: sm.Data},
				WithMsgID(fmt.Sprintf("replay:%s:%d:%s", opts.Stream, sm.Seq, run)))
			if err != nil {
				return err
			}
			r.NewSeq = ack.Sequence
		}
		n++
		if visit != nil {
			visit(r)
		}
		return nil
	})
	return n, err
}
