package stompbridge

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/events"
)

// FuzzDecode feeds the bridge whole frames: destination, x-message-id and
// body as a broker (or whoever can publish to it) may send them. Whatever
// arrives, the frame must be decoded into an event that keeps the body as
// it came (for the dead letter), a subject that stays inside the
// subscribed offering's waldur.<offering>.<type>.<partition> space with no
// NATS wildcard or separator smuggled in, and an error for anything the
// services could not trust.
func FuzzDecode(f *testing.F) {
	orderQueue := "/amq/queue/" + queueName(sub, off, "order")
	f.Add("order", orderQueue, "abc123", []byte(`{"order_uuid": "`+ouid+`", "order_state": "pending-provider", "offering_uuid": "`+off+`"}`))
	f.Add("order", "/queue/"+queueName(sub, off, "order"), "", []byte(`{"order_uuid": "`+ouid+`"}`))
	f.Add("resource", "/queue/other", "", []byte(`{"resource_uuid": "`+ouid+`"}`))
	f.Add("order", "/amq/queue/"+queueName(sub, off, "a.>"), "", []byte(`{}`))
	f.Add("order", "/amq/queue/"+queueName(sub, strings.Repeat("9", 32), "order"), "m", []byte(`{"order_uuid": "`+ouid+`"}`))
	f.Add("user_role", "/queue/"+queueName(sub, off, "user_role"), "x", []byte(`{"user_uuid":"`+ouid+`","project_uuid":"`+ouid+`"}`))
	f.Add("order", orderQueue, "", []byte("not json"))
	f.Fuzz(func(t *testing.T, queueType, destination, messageID string, body []byte) {
		if !events.Known(queueType) {
			// The bridge subscribes to known types only.
			return
		}
		frame := Frame{Destination: destination, MessageID: messageID, Body: body}
		ev, subject, key, err := decode(off, queueType, frame, time.Unix(100, 0), 1<<20)
		if ev == nil {
			t.Fatal("no event returned: a malformed frame could not be dead-lettered")
		}
		if !bytes.Equal(ev.Body, body) || ev.Destination != destination {
			t.Fatal("the event does not keep the frame as it arrived")
		}
		if ev.MessageId == "" || (messageID != "" && ev.MessageId != messageID) {
			t.Fatalf("message id %q from header %q", ev.MessageId, messageID)
		}
		if ev.OfferingUuid != off {
			t.Fatalf("event offering %q, subscribed %q", ev.OfferingUuid, off)
		}
		if subject != "" {
			rest, ok := strings.CutPrefix(subject, "waldur."+off+".")
			if !ok {
				t.Fatalf("subject %q is outside the offering's space", subject)
			}
			if strings.ContainsAny(subject, "*> \t\r\n") || strings.Count(rest, ".") > 1 {
				t.Fatalf("subject %q has wildcards, blanks or extra tokens", subject)
			}
		}
		if err != nil {
			return
		}
		if !events.Known(ev.ObjectType) || subject == "" {
			t.Fatalf("accepted an event of type %q with subject %q", ev.ObjectType, subject)
		}
		if k, verr := events.Inspect(ev.ObjectType, body); verr != nil || k != key {
			t.Fatalf("accepted a body events.Inspect refuses (%v) or keyed %q not %q", verr, k, key)
		}
	})
}
