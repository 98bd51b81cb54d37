package stompbridge

import (
	"strings"
	"testing"
	"time"
)

const (
	off  = "0123456789abcdef0123456789abcdef"
	sub  = "fedcba9876543210fedcba9876543210"
	ouid = "11111111222233334444555555555555"
)

func TestDecode(t *testing.T) {
	orderQueue := "/amq/queue/" + queueName(sub, off, "order")
	// The partitions of order:<ouid> and resource:<ouid>, written out: they
	// are part of what is stored, and events without a key go to 00.
	orderP, resourceP := ".007", ".221"
	tests := map[string]struct {
		queueType   string
		frame       Frame
		wantSubject string
		wantType    string
		wantErr     string
		wantID      string
	}{
		"order frame becomes an order event with the broker's message id": {
			queueType: "order", frame: Frame{Destination: orderQueue, MessageID: "abc123", Body: []byte(`{"order_uuid": "` + ouid + `", "order_state": "pending-provider", "offering_uuid": "` + off + `"}`)},
			wantSubject: "waldur." + off + ".order" + orderP, wantType: "order", wantID: "abc123",
		},
		"frame without x-message-id gets a stable hash of destination and body": {
			queueType: "order", frame: Frame{Destination: orderQueue, Body: []byte(`{"order_uuid": "` + ouid + `"}`)},
			wantSubject: "waldur." + off + ".order" + orderP, wantType: "order", wantID: "hash",
		},
		"object type comes from the destination": {
			queueType: "service_account", frame: Frame{Destination: "/amq/queue/" + queueName(sub, off, "course_account"), Body: []byte(`{"account_uuid": "` + ouid + `", "project_uuid": "` + ouid + `"}`)},
			wantSubject: "waldur." + off + ".course_account.000", wantType: "course_account",
		},
		"body that is not JSON is malformed but keeps its subject": {
			queueType: "order", frame: Frame{Destination: orderQueue, Body: []byte("not json")},
			wantSubject: "waldur." + off + ".order.000", wantType: "order", wantErr: "order body is not a JSON object",
		},
		"missing order uuid is malformed": {
			queueType: "order", frame: Frame{Destination: orderQueue, Body: []byte(`{"order_state": "done"}`)},
			wantSubject: "waldur." + off + ".order.000", wantType: "order", wantErr: "order event lacks order_uuid",
		},
		"unknown object type in the destination is malformed": {
			queueType: "order", frame: Frame{Destination: "/amq/queue/" + queueName(sub, off, "invoice"), Body: []byte(`{}`)},
			wantSubject: "waldur." + off + ".invoice.000", wantType: "invoice", wantErr: `unknown object type "invoice"`,
		},
		"a type that could widen a subject filter has no subject": {
			queueType: "order", frame: Frame{Destination: "/amq/queue/" + queueName(sub, off, "a.>"), Body: []byte(`{}`)},
			wantSubject: "", wantType: "a.>", wantErr: "unknown object type",
		},
		"frame naming another offering is refused": {
			queueType: "order", frame: Frame{Destination: "/amq/queue/" + queueName(sub, strings.Repeat("9", 32), "order"), Body: []byte(`{"order_uuid": "` + ouid + `"}`)},
			wantType: "order", wantErr: "arrived on a queue of offering " + off,
		},
		"destination as RabbitMQ delivers it (/queue/...) is understood": {
			queueType: "service_account", frame: Frame{Destination: "/queue/" + queueName(sub, off, "course_account"), Body: []byte(`{"account_uuid": "` + ouid + `", "project_uuid": "` + ouid + `"}`)},
			wantSubject: "waldur." + off + ".course_account.000", wantType: "course_account",
		},
		"unparseable destination falls back to the queue's type": {
			queueType: "resource", frame: Frame{Destination: "/queue/other", Body: []byte(`{"resource_uuid": "` + ouid + `"}`)},
			wantSubject: "waldur." + off + ".resource" + resourceP, wantType: "resource",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev, subject, _, err := decode(off, tc.queueType, tc.frame, time.Unix(100, 0), 1<<20)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if subject != tc.wantSubject {
				t.Errorf("subject = %q, want %q", subject, tc.wantSubject)
			}
			if ev.ObjectType != tc.wantType || ev.OfferingUuid != off || string(ev.Body) != string(tc.frame.Body) || ev.Destination != tc.frame.Destination {
				t.Errorf("event = %v", ev)
			}
			switch tc.wantID {
			case "":
			case "hash":
				again, _, _, _ := decode(off, tc.queueType, tc.frame, time.Now(), 1<<20)
				if len(ev.MessageId) != 32 || again.MessageId != ev.MessageId {
					t.Errorf("hash id %q not stable (%q)", ev.MessageId, again.MessageId)
				}
			default:
				if ev.MessageId != tc.wantID {
					t.Errorf("message id = %q, want %q", ev.MessageId, tc.wantID)
				}
			}
		})
	}
}

func TestFrameOverTheBodyLimit(t *testing.T) {
	orderQueue := "/amq/queue/" + queueName(sub, off, "order")
	valid := `{"order_uuid": "` + ouid + `", "pad": "`
	tests := map[string]struct {
		size     int
		wantErr  string
		wantKept int
	}{
		"a body of exactly the limit is taken":                      {size: 8 << 10, wantKept: 8 << 10},
		"a body one byte over is parked with the limit as reason":   {size: 8<<10 + 1, wantErr: "frame body exceeds 8192 bytes (8193 bytes)", wantKept: keptOfOversized},
		"a body far over keeps only its first bytes for the letter": {size: 3 << 20, wantErr: "frame body exceeds 8192 bytes", wantKept: keptOfOversized},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			body := []byte(valid + strings.Repeat("x", tc.size-len(valid)-2) + `"}`)
			ev, subject, _, err := decode(off, "order", Frame{Destination: orderQueue, Body: body}, time.Unix(100, 0), 8<<10)
			if tc.wantErr == "" {
				if err != nil || subject == "" {
					t.Fatalf("error %v, subject %q; want the event taken", err, subject)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if subject != "" {
					t.Errorf("subject %q: a body kept in part must not be retried onto the bus", subject)
				}
			}
			if len(ev.Body) != tc.wantKept || string(ev.Body) != string(body[:tc.wantKept]) {
				t.Errorf("event keeps %d bytes, want the first %d", len(ev.Body), tc.wantKept)
			}
			// Two oversized frames differing past the kept part are two letters.
			other := append([]byte(nil), body...)
			other[len(other)-3] = 'y'
			ev2, _, _, _ := decode(off, "order", Frame{Destination: orderQueue, Body: other}, time.Unix(100, 0), 8<<10)
			if ev2.MessageId == ev.MessageId {
				t.Errorf("frames differing at byte %d have one message id", len(other)-3)
			}
		})
	}
}

func TestReconnectDelayGrowsToTheCapWithJitter(t *testing.T) {
	max := 120 * time.Second
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 8: max, 30: max} {
		for range 50 {
			d := reconnectDelay(attempt, max)
			if d < base || d > base+base/4 {
				t.Fatalf("attempt %d: delay %s outside [%s, %s]", attempt, d, base, base+base/4)
			}
		}
	}
}
