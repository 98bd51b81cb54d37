package bus

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// Stream names and subject spaces. They are part of sitebus's on-disk
// contract: a running site keeps its streams across upgrades.
const (
	// EventsStream keeps every Waldur event (limits retention, so it can be replayed).
	EventsStream = "SITEBUS_EVENTS"
	// EventsSubjects is the subject space of EventsStream:
	// waldur.<offering>.<object_type>.<partition> (EventSubject), and
	// waldur.<offering>.<object_type> as stored before subjects had a
	// partition (still consumed and replayed).
	EventsSubjects = "waldur.>"
	// DLQStream keeps dead letters: dlq.<source>.<original subject>.
	DLQStream = "SITEBUS_DLQ"
	// DLQSubjects is the subject space of DLQStream.
	DLQSubjects = "dlq.>"
)

// Header names. NATS headers are case-sensitive; these are the only spellings
// sitebus writes and reads.
const (
	HeaderMsgID       = "Nats-Msg-Id"
	HeaderContentType = "Content-Type"
	HeaderMessageType = "Sitebus-Type"
	// HeaderOrderingKey names what a message is about (e.g. resource:<uuid>):
	// a process handles messages with the same key one at a time, in order.
	HeaderOrderingKey = "Sitebus-Ordering-Key"

	HeaderDLQReason     = "Sitebus-Dlq-Reason"
	HeaderDLQSource     = "Sitebus-Dlq-Source"
	HeaderDLQStream     = "Sitebus-Dlq-Stream"
	HeaderDLQSubject    = "Sitebus-Dlq-Subject"
	HeaderDLQSeq        = "Sitebus-Dlq-Seq"
	HeaderDLQDeliveries = "Sitebus-Dlq-Deliveries"
	HeaderDLQTime       = "Sitebus-Dlq-Time"

	// HeaderReplayOf marks a re-delivered copy with the sequence it copies,
	// so handlers and logs can tell a replay from a new event.
	HeaderReplayOf = "Sitebus-Replay-Of"
)

// ContentTypeProtobuf is the Content-Type of every message sitebus publishes.
const ContentTypeProtobuf = "application/protobuf"

// ValidToken reports whether s can be used as one subject token: no dots,
// wildcards or white space, so a value from the outside cannot widen a filter.
// Letters, digits, '-' and '_' only, checked byte by byte rather than with a
// regular expression: the bridge checks two tokens of every event it ingests.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return false
		}
	}
	return true
}

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// Partitions is how many partitions the subjects of the events stream (and
// of partitioned command subjects) are split into: a message goes to
// <subject>.<NNN>, NNN = Partition(its ordering key). It is part of the
// on-disk contract: changing it would move keys between partitions while
// older messages of theirs are still stored.
const Partitions = 256

// Partition is the partition of an ordering key: FNV-1a of the key modulo
// Partitions. A message without a key is not serialised with any other,
// so it goes to partition 0.
func Partition(key string) int {
	if key == "" {
		return 0
	}
	// FNV-1a over the string in place: the bridge partitions every event
	// it ingests, and hash/fnv's hasher would cost an allocation and a
	// copy of the key each time. TestPartitionOfAKeyIsPinned and
	// TestPartitionIsFNV1a hold it to hash/fnv's New32a.
	h := uint32(fnvOffset32)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= fnvPrime32
	}
	return int(h % Partitions)
}

// The 32-bit FNV-1a parameters (as in hash/fnv).
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// partitionTokens are the tokens of every partition, formatted once.
var partitionTokens = func() [Partitions]string {
	var t [Partitions]string
	for p := range t {
		t[p] = fmt.Sprintf("%03d", p)
	}
	return t
}()

// PartitionToken is the subject token of partition p: three digits, so
// that subjects sort and filters read alike.
func PartitionToken(p int) string {
	if p >= 0 && p < Partitions {
		return partitionTokens[p]
	}
	return fmt.Sprintf("%03d", p)
}

// PartitionedSubject is base with the partition token of key appended.
func PartitionedSubject(base, key string) string {
	return base + "." + PartitionToken(Partition(key))
}

// EventSubject is the subject of a Waldur event with ordering key key
// (events.OrderingKey of its type and body; "" if it names nothing):
// waldur.<offering>.<object_type>.<partition>. Consumers filter
// waldur.<offering>.<object_type>.* (and the three-token subject events
// stored before partitions were kept on), see ConsumerConfig.Partitioned.
func EventSubject(offeringHex, objectType, key string) (string, error) {
	if !ValidToken(offeringHex) || !ValidToken(objectType) {
		return "", fmt.Errorf("bus: cannot build an event subject from offering %q and object type %q", offeringHex, objectType)
	}
	return PartitionedSubject("waldur."+offeringHex+"."+objectType, key), nil
}

// EventFilters widens a filter on the events stream written for subjects
// without a partition (waldur.<offering>.<object_type>, e.g. waldur.*.order)
// to both that form and the partitioned one, so operators' filters and the
// events stored by older versions keep matching. Other filters are
// returned as they are.
func EventFilters(filter string) []string {
	if strings.HasPrefix(filter, "waldur.") && strings.Count(filter, ".") == 2 && !strings.HasSuffix(filter, ">") {
		return []string{filter, filter + ".*"}
	}
	return []string{filter}
}

// partitionLegacyEvent gives an events-stream event published without a
// partition the partition of the message's ordering key (its header, else
// its body), so that a replayed or retried copy is handled in order with
// the events published since. Such an event is stored with three tokens
// (before the stream had its subject transform) or in partition 000 (the
// transform's, which cannot read the key). Other subjects are returned
// unchanged.
func partitionLegacyEvent(subject string, h nats.Header, data []byte) string {
	if !strings.HasPrefix(subject, "waldur.") {
		return subject
	}
	base := subject
	switch strings.Count(subject, ".") {
	case 2:
	case 3:
		var ok bool
		if base, ok = strings.CutSuffix(subject, "."+PartitionToken(0)); !ok {
			return subject
		}
	default:
		return subject
	}
	key := h.Get(HeaderOrderingKey)
	if key == "" {
		key = WaldurEventKey(base, data)
	}
	return PartitionedSubject(base, key)
}

// CommandStream is the work-queue stream of one service's commands.
func CommandStream(service string) string {
	return "SITEBUS_CMD_" + strings.ToUpper(strings.ReplaceAll(service, "-", "_"))
}

// CommandSubjects is the subject space of a service's command stream.
func CommandSubjects(service string) string { return "cmd." + service + ".>" }

// DLQSubject is where a dead letter from source about subject is stored.
func DLQSubject(source, subject string) string {
	if subject == "" {
		subject = "unknown"
	}
	return "dlq." + source + "." + subject
}
