package stompbridge

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
)

// A body the NATS server cannot take in one message used to be published
// again and again, its frame never acked: prefetch_count of them stopped
// the bridge. Whatever stomp.max_frame_body says, the bridge parks it.
func TestFrameTheBusCannotHoldIsParkedAndAcked(t *testing.T) {
	b := bustest.New(t, bus.Config{Logger: slog.New(slog.DiscardHandler)})
	br, err := New(b, Config{Stomp: config.StompSettings{MaxFrameBody: 15 << 20}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	busLimit := int(b.Conn().MaxPayload()) - payloadHeadroom
	if got := br.maxFrameBody(); got != busLimit {
		t.Fatalf("limit %d, want the server's max payload less the headroom, %d", got, busLimit)
	}
	s := newSubscription(Offering{Config: &config.Offering{Name: "o", WaldurOfferingUUID: off}}, "order")
	head := `{"order_uuid": "` + ouid + `", "pad": "`
	body := []byte(head + strings.Repeat("x", int(b.Conn().MaxPayload())+1-len(head)-2) + `"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acked := false
	br.ingest(ctx, s, Frame{Destination: "/queue/" + queueName(sub, off, "order"), MessageID: "huge", Body: body}, func() error { acked = true; return nil })
	if !acked {
		t.Fatalf("the frame was not acked (ctx: %v)", ctx.Err())
	}
	dls, err := b.DeadLetters(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "frame body exceeds " + strconv.Itoa(busLimit) + " bytes"
	if len(dls) != 1 || !strings.Contains(dls[0].Reason, want) || dls[0].Header.Get(HeaderFrameBodySize) != strconv.Itoa(len(body)) {
		t.Fatalf("dead letters %+v; want one with reason %q and size %d", dls, want, len(body))
	}
}
