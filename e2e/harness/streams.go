package harness

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// StoredEvent is an event as the events stream holds it.
type StoredEvent struct {
	Seq     uint64
	Subject string
	MsgID   string
	Event   *sitebusv1.WaldurEvent
}

// Reader reads sitebus's streams over NATS, as an operator's tool would.
type Reader struct {
	bus *bus.Bus
	nc  *nats.Conn
}

// NewReader connects to the NATS server at url.
func NewReader(t testing.TB, url string) *Reader {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.New(nc, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &Reader{bus: b, nc: nc}
}

// Bus is the reader's bus, for tools (replay, dead-letter retry).
func (r *Reader) Bus() *bus.Bus { return r.bus }

// Events returns the stored events matching filter ("" = all).
func (r *Reader) Events(t testing.TB, filter string) []StoredEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var opts bus.ScanOptions
	if filter != "" {
		opts.Subjects = []string{filter}
	}
	var out []StoredEvent
	err := r.bus.Scan(ctx, bus.EventsStream, opts, func(m bus.StoredMsg) error {
		var ev sitebusv1.WaldurEvent
		if err := proto.Unmarshal(m.Data, &ev); err != nil {
			t.Errorf("event %d on %s is not a WaldurEvent: %v", m.Seq, m.Subject, err)
			return nil
		}
		out = append(out, StoredEvent{Seq: m.Seq, Subject: m.Subject, MsgID: m.Header.Get(bus.HeaderMsgID), Event: &ev})
		return nil
	})
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	return out
}

// DeadLetters returns the parked messages.
func (r *Reader) DeadLetters(t testing.TB) []bus.DeadLetter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dls, err := r.bus.DeadLetters(ctx, "", 0)
	if err != nil {
		t.Fatalf("read dead letters: %v", err)
	}
	return dls
}

// Eventually polls cond until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitHandled waits until sitebus's consumer (on the events stream) has
// settled the events carrying msgIDs: the events are in the stream and the
// consumer's ack floor has passed them. What a handler did before its ack
// (a Kubernetes create, a Keycloak change through keycloak-sync) is then
// done, whichever of several deliveries ran last; the order reaching
// "done" in Waldur says nothing about a second event still in flight.
func WaitHandled(t testing.TB, natsURL, consumer string, msgIDs ...string) {
	t.Helper()
	r := NewReader(t, natsURL)
	var last uint64
	Eventually(t, 60*time.Second, "events "+strconv.Quote(consumer)+" must handle", func() bool {
		last = 0
		found := 0
		for _, ev := range r.Events(t, "") {
			if slices.Contains(msgIDs, ev.MsgID) {
				found++
				last = max(last, ev.Seq)
			}
		}
		return found >= len(msgIDs)
	})
	Eventually(t, 60*time.Second, consumer+" to ack up to event "+strconv.FormatUint(last, 10), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := r.Bus().JetStream().Consumer(ctx, bus.EventsStream, consumer)
		if err != nil {
			return false
		}
		ci, err := c.Info(ctx)
		return err == nil && ci.AckFloor.Stream >= last
	})
}
