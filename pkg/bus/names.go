package bus

import (
	"fmt"
	"regexp"
	"strings"
)

// Stream names and subject spaces. They are part of sitebus's on-disk
// contract: a running site keeps its streams across upgrades.
const (
	// EventsStream keeps every Waldur event (limits retention, so it can be replayed).
	EventsStream = "SITEBUS_EVENTS"
	// EventsSubjects is the subject space of EventsStream: waldur.<offering>.<object_type>.
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

var tokenRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidToken reports whether s can be used as one subject token: no dots,
// wildcards or white space, so a value from the outside cannot widen a filter.
func ValidToken(s string) bool { return tokenRe.MatchString(s) }

// EventSubject is the subject of a Waldur event.
func EventSubject(offeringHex, objectType string) (string, error) {
	if !ValidToken(offeringHex) || !ValidToken(objectType) {
		return "", fmt.Errorf("bus: cannot build an event subject from offering %q and object type %q", offeringHex, objectType)
	}
	return "waldur." + offeringHex + "." + objectType, nil
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
