package bus

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// OrderingMode says how a partitioned subscription keeps the messages of
// one ordering key in order when a service runs in more than one process.
type OrderingMode string

const (
	// OrderingProcess is one durable consumer per subscription, shared by
	// every replica: messages of one key are handled one at a time and in
	// order within a process (keylock), but two replicas may handle two
	// messages of one key at once. Right for one process per service.
	OrderingProcess OrderingMode = "process"
	// OrderingCluster is Slots durable consumers per subscription
	// (<name>-s<NN>of<Slots>), slot s taking the partitions p with p % Slots == s,
	// each with one message in flight (MaxAckPending 1). The server then
	// hands out a slot's messages one at a time, in stream order, to
	// whichever replica asks: one key's messages are never handled at once
	// or out of order anywhere, without leases; a crashed replica's message
	// is redelivered after AckWait, still before the next of its slot.
	//
	// The cost: a message waiting for a retry holds its slot, so the other
	// keys hashed to that slot wait too (for a persistently failing message
	// up to the MaxDeliver budget, a few minutes, before it is parked); and
	// at most Slots messages of a subscription are in flight cluster-wide.
	OrderingCluster OrderingMode = "cluster"
)

// DefaultSlots is the slot count of cluster ordering when none is given:
// four times a subscription's default concurrency (8), so up to four
// replicas each keep a full set of handlers busy; with as many slots as
// one replica's concurrency, a second replica would add no throughput.
// (The order service's events, the widest subscription, are held with
// leases instead, see ConsumerConfig.KeyLocker.) Each slot is a
// replicated consumer the servers keep alive even when idle: on a 2-core
// test machine 128 slots of five subscriptions cost three nats-servers
// 0.7 of a core doing nothing.
const DefaultSlots = 32

// Ordering configures partitioned subscriptions (ConsumerConfig.Partitioned).
type Ordering struct {
	// Mode: OrderingProcess (default) or OrderingCluster.
	Mode OrderingMode
	// Slots in cluster mode: a divisor of Partitions. Default DefaultSlots.
	Slots int
}

func (o *Ordering) setDefaults() {
	if o.Mode == "" {
		o.Mode = OrderingProcess
	}
	if o.Slots == 0 {
		o.Slots = DefaultSlots
	}
}

// Validate reports an ordering that cannot work.
func (o *Ordering) Validate() error {
	var errs []error
	if o.Mode != OrderingProcess && o.Mode != OrderingCluster {
		errs = append(errs, fmt.Errorf("bus: ordering mode %q is not %s or %s", o.Mode, OrderingProcess, OrderingCluster))
	}
	if o.Slots < 1 || o.Slots > Partitions || Partitions%o.Slots != 0 {
		errs = append(errs, fmt.Errorf("bus: %d ordering slots do not divide the %d partitions", o.Slots, Partitions))
	}
	return errors.Join(errs...)
}

// SlotOf is the slot partition p belongs to with slots slots.
func SlotOf(p, slots int) int { return p % slots }

// SlotConsumerName is the durable name of slot s of subscription name
// with slots slots. The slot count is part of the name so that changing it
// makes new consumers next to the old ones (which are deleted once the new
// ones exist), never rewrites the filter of one whose position belongs to
// other partitions.
func SlotConsumerName(name string, s, slots int) string {
	return fmt.Sprintf("%s-s%03dof%03d", name, s, slots)
}

// consumerSpec is one durable consumer of a subscription.
type consumerSpec struct {
	name          string
	filters       []string
	maxAckPending int
}

// consumerSpecs are the durable consumers cfg runs as under ordering o.
// Partitioned filters are bases: <base>.<partition> and, for messages
// stored before subjects had a partition, <base> itself (in cluster mode
// on slot 0 only, so it is delivered once). The events stream stores new
// unpartitioned publishes with a partition (its subject transform), so in
// process mode the base is taken only when legacy says the stream still
// holds messages stored before that: a consumer with two filters is read
// through the server's multi-filter path, which cost the ingest benchmark
// a tenth of its throughput.
func consumerSpecs(cfg ConsumerConfig, o Ordering, legacy func(base string) bool) []consumerSpec {
	wide := max(cfg.Concurrency*8, 256)
	if !cfg.Partitioned {
		return []consumerSpec{{name: cfg.Name, filters: cfg.FilterSubjects, maxAckPending: wide}}
	}
	if o.Mode != OrderingCluster || cfg.KeyLocker != nil {
		var f []string
		for _, base := range cfg.FilterSubjects {
			f = append(f, base+".*")
			if legacy(base) {
				f = append(f, base)
			}
		}
		return []consumerSpec{{name: cfg.Name, filters: f, maxAckPending: wide}}
	}
	specs := make([]consumerSpec, o.Slots)
	for s := range specs {
		var f []string
		for _, base := range cfg.FilterSubjects {
			for p := s; p < Partitions; p += o.Slots {
				f = append(f, base+"."+PartitionToken(p))
			}
			if s == 0 {
				f = append(f, base)
			}
		}
		specs[s] = consumerSpec{name: SlotConsumerName(cfg.Name, s, o.Slots), filters: f, maxAckPending: 1}
	}
	return specs
}

var slotSuffix = regexp.MustCompile(`^-s[0-9]{2,3}of[0-9]{2,3}$`)

// family reports whether consumer is one of subscription name's, in
// either mode and with any slot count.
func family(name, consumer string) bool {
	rest, ok := strings.CutPrefix(consumer, name)
	return ok && (rest == "" || slotSuffix.MatchString(rest))
}

// ensureConsumers creates or updates the consumers of a subscription and
// deletes those of its other mode or slot count: on a work-queue stream
// overlapping filters are refused, and on a limits stream both would
// deliver every message. On a limits stream, consumers it adds next to
// existing ones start after what those have settled (the lowest
// acknowledged sequence; for one with nothing pending, the stream's end),
// not at the beginning of a stream that keeps days of events; messages in
// flight or acknowledged out of order past that point come again, which
// idempotent handlers absorb. On a work-queue stream the old consumers are
// deleted first (what they had not acknowledged stays and goes to the new
// ones); elsewhere last, so a crash in between loses no position.
func (b *Bus) ensureConsumers(ctx context.Context, cfg ConsumerConfig, specs []consumerSpec) ([]jetstream.Consumer, error) {
	existing := map[string]*jetstream.ConsumerInfo{}
	var stale []string
	var stream jetstream.Stream
	// What each old consumer has settled: new consumers start after the
	// least of those whose filters overlap theirs.
	type oldPos struct {
		filters []string
		upTo    uint64
	}
	var olds []oldPos
	workQueue := false
	if cfg.Partitioned {
		var info *jetstream.StreamInfo
		if err := retryUnanswered(ctx, func(actx context.Context) (err error) {
			if stream, err = b.js.Stream(actx, cfg.Stream); err != nil {
				return err
			}
			info, err = stream.Info(actx)
			return err
		}); err != nil {
			return nil, err
		}
		workQueue = info.Config.Retention == jetstream.WorkQueuePolicy
		// Read before the consumers, so that a consumer with nothing
		// pending has settled everything up to here.
		end := info.State.LastSeq
		wanted := map[string]bool{}
		for _, sp := range specs {
			wanted[sp.name] = true
		}
		// Listing is a paged request like any other: a busy cluster may
		// leave a page unanswered, so the whole listing is repeated.
		err := retryUnanswered(ctx, func(actx context.Context) error {
			clear(existing)
			stale, olds = stale[:0], olds[:0]
			lister := stream.ListConsumers(actx)
			for ci := range lister.Info() {
				if !family(cfg.Name, ci.Name) {
					continue
				}
				existing[ci.Name] = ci
				if !wanted[ci.Name] {
					stale = append(stale, ci.Name)
				}
				upTo := ci.AckFloor.Stream
				if ci.NumPending == 0 && ci.NumAckPending == 0 {
					upTo = max(upTo, end)
				}
				olds = append(olds, oldPos{filters: consumerFilters(ci.Config), upTo: upTo})
			}
			return lister.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("list consumers of %s: %w", cfg.Stream, err)
		}
	}
	// startOf is where a new consumer with filters starts: 0 is
	// cfg.DeliverPolicy (no predecessor; and on a work queue, which keeps
	// only what is unacknowledged and wants consumers to deliver all).
	startOf := func(filters []string) uint64 {
		if workQueue {
			return 0
		}
		var start uint64
		for _, o := range olds {
			if overlap(o.filters, filters) && (start == 0 || o.upTo+1 < start) {
				start = o.upTo + 1
			}
		}
		return start
	}
	slices.Sort(stale)
	deleteStale := func() error {
		for _, name := range stale {
			err := retryUnanswered(ctx, func(actx context.Context) error { return stream.DeleteConsumer(actx, name) })
			if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return fmt.Errorf("delete consumer %s of another ordering mode: %w", name, err)
			}
			b.log.Info("consumer of another ordering mode deleted", "consumer", name, "stream", cfg.Stream)
		}
		return nil
	}
	if workQueue {
		if err := deleteStale(); err != nil {
			return nil, err
		}
	}
	out := make([]jetstream.Consumer, 0, len(specs))
	for _, sp := range specs {
		cc := jetstream.ConsumerConfig{
			Durable:        sp.name,
			Description:    "sitebus consumer " + cfg.Name,
			FilterSubjects: sp.filters,
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        cfg.AckWait,
			// One more than the handler's budget: if the process dies during the
			// last attempt, the server still redelivers once so the handler can
			// reach a verdict. Past that, the max-deliveries advisory parks it.
			MaxDeliver:    cfg.MaxDeliver + 1,
			MaxAckPending: sp.maxAckPending,
			DeliverPolicy: cfg.DeliverPolicy,
		}
		switch prev, ok := existing[sp.name]; {
		case ok:
			// The start is fixed when a consumer is made; an update must
			// repeat it.
			cc.DeliverPolicy, cc.OptStartSeq, cc.OptStartTime = prev.Config.DeliverPolicy, prev.Config.OptStartSeq, prev.Config.OptStartTime
		default:
			if start := startOf(sp.filters); start > 0 {
				cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
			}
		}
		// Creating a consumer is idempotent: repeated while unanswered, as a
		// clustered server may not answer while it elects the consumer's leader.
		var cons jetstream.Consumer
		err := retryUnanswered(ctx, func(actx context.Context) (err error) {
			cons, err = b.js.CreateOrUpdateConsumer(actx, cfg.Stream, cc)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("consumer %s: %w", sp.name, err)
		}
		out = append(out, cons)
	}
	if !workQueue {
		if err := deleteStale(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func consumerFilters(c jetstream.ConsumerConfig) []string {
	if c.FilterSubject != "" {
		return []string{c.FilterSubject}
	}
	if len(c.FilterSubjects) == 0 {
		return []string{">"}
	}
	return c.FilterSubjects
}

// overlap reports whether some subject matches a filter of a and one of b.
func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if filtersOverlap(strings.Split(x, "."), strings.Split(y, ".")) {
				return true
			}
		}
	}
	return false
}

func filtersOverlap(a, b []string) bool {
	for i := 0; ; i++ {
		switch {
		case i == len(a) && i == len(b):
			return true
		case i == len(a) || i == len(b):
			return false
		case a[i] == ">" || b[i] == ">":
			return true
		case a[i] != "*" && b[i] != "*" && a[i] != b[i]:
			return false
		}
	}
}

// holdsSubjects reports whether stream holds a message on a subject that
// filter matches. When the server cannot say (no answer in time), it
// answers yes: taking a filter that matches nothing costs throughput,
// leaving one out would strand the messages it matches.
func (b *Bus) holdsSubjects(ctx context.Context, stream, filter string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := b.js.Stream(ctx, stream)
	if err != nil {
		return true
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return true
	}
	return len(info.State.Subjects) > 0
}
