package bridge_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

func TestFrameBecomesExactlyOneEvent(t *testing.T) {
	for _, transport := range []string{"websocket", "tcp"} {
		t.Run("over "+transport, func(t *testing.T) {
			var opts []harness.SiteOption
			if transport == "tcp" {
				opts = append(opts, overTCP(t))
			}
			e := newEnv(t, opts...)
			q := e.waitConsumer("order")
			res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "frame-" + transport})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Published) != 1 {
				t.Fatalf("simulator published %d frames, want 1: %+v", len(res.Published), res)
			}
			frame := res.Published[0]
			harness.Eventually(t, 30*time.Second, "the event", func() bool { return len(e.eventsWithID(frame.MessageID)) > 0 })
			// Counted once acked: after that the broker has nothing to redeliver.
			e.waitMetric(`sitebus_stomp_frames_total{object_type="order",outcome="published"}`, func(v float64) bool { return v >= 1 })
			e.waitQueue(q, "the frame to be acked", func(qi rabbitmq.QueueInfo) bool { return qi.Messages == 0 })
			got := e.eventsWithID(frame.MessageID)
			if len(got) != 1 {
				t.Fatalf("%d events carry message id %s, want 1", len(got), frame.MessageID)
			}
			ev := got[0]
			if want := orderSubjectOf(ev.Event.Body); ev.Subject != want {
				t.Errorf("subject = %s, want %s", ev.Subject, want)
			}
			if string(ev.Event.Body) != frame.Body {
				t.Errorf("body = %s, want the frame verbatim: %s", ev.Event.Body, frame.Body)
			}
			if ev.Event.ObjectType != "order" || ev.Event.OfferingUuid != offeringHex || ev.Event.MessageId != frame.MessageID ||
				ev.Event.Source != sitebusv1.EventSource_EVENT_SOURCE_STOMP || !strings.HasSuffix(ev.Event.Destination, frame.Queue) || ev.Event.ReceivedAt == nil {
				t.Errorf("envelope = %v", ev.Event)
			}
			if n := len(e.stompEventsForOrder(res.Order.UUID)); n != 1 {
				t.Errorf("%d STOMP events for the order, want 1", n)
			}
		})
	}
}

func TestSameFrameTwiceIsStoredOnce(t *testing.T) {
	e := newEnv(t)
	q := e.waitConsumer("order")
	body := fmt.Sprintf(`{"order_uuid": "%s", "order_state": "pending-provider", "offering_uuid": "%s"}`, "0000000000004000800000000000dead", offeringHex)
	// The same frame twice, with one x-message-id, as a broker redelivers it.
	for range 2 {
		if _, err := e.Admin.PublishRaw(ctx(t), waldursim.RawEventRequest{OfferingUUID: offeringHex, ObjectType: "order", Body: body, MessageID: "dup-frame-1"}); err != nil {
			t.Fatal(err)
		}
	}
	// A frame is counted after its ack, so the two counts say that both
	// frames went through the bridge; only then is the stream's content
	// final. (Waiting for the queue to look empty is not enough: the
	// broker's statistics may still show the state before the publish.)
	published := `sitebus_stomp_frames_total{object_type="order",outcome="published"}`
	duplicate := `sitebus_stomp_frames_total{object_type="order",outcome="duplicate"}`
	harness.Eventually(t, 30*time.Second, "both frames counted", func() bool { return e.metric(published)+e.metric(duplicate) >= 2 })
	if p, d := e.metric(published), e.metric(duplicate); p != 1 || d != 1 {
		_, metrics := e.Sitebus.Get("/metrics")
		t.Errorf("frames counted %v published, %v duplicate; want 1 and 1:\n%s", p, d, grep(metrics, "sitebus_stomp_frames_total"))
	}
	if n := len(e.eventsWithID("dup-frame-1")); n != 1 {
		t.Fatalf("%d events for a frame delivered twice, want 1", n)
	}
	e.waitQueue(q, "both frames acked", func(qi rabbitmq.QueueInfo) bool { return qi.Messages == 0 })
}

func TestKilledBeforeAckThenRestartedStoresTheEventOnce(t *testing.T) {
	tests := map[string]struct {
		failpoint string
		// published: whether the event is in the stream when the process dies.
		published bool
	}{
		"killed after the JetStream PubAck, before the broker ack": {failpoint: "bridge/after-publish=pause", published: true},
		"killed before publishing":                                 {failpoint: "bridge/before-publish=pause", published: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, harness.WithoutStart())
			e.Start("SITEBUS_FAILPOINTS=" + tc.failpoint)
			q := e.waitConsumer("order")
			res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "crash"})
			if err != nil || len(res.Published) != 1 {
				t.Fatalf("create order: %v %+v", err, res)
			}
			id := res.Published[0].MessageID
			e.waitQueue(q, "the frame held unacked", func(qi rabbitmq.QueueInfo) bool { return qi.MessagesUnacknowledged == 1 })
			if tc.published {
				harness.Eventually(t, 30*time.Second, "the event before the crash", func() bool { return len(e.eventsWithID(id)) == 1 })
			} else if n := len(e.eventsWithID(id)); n != 0 {
				t.Fatalf("%d events stored before the publish failpoint", n)
			}
			e.Sitebus.Kill()
			e.waitQueue(q, "the frame back in the queue", func(qi rabbitmq.QueueInfo) bool { return qi.MessagesReady == 1 && qi.Consumers == 0 })

			e.Start()
			e.waitQueue(q, "the redelivered frame acked", func(qi rabbitmq.QueueInfo) bool { return qi.Messages == 0 && qi.Consumers == 1 })
			harness.Eventually(t, 30*time.Second, "the event after restart", func() bool { return len(e.eventsWithID(id)) > 0 })
			if n := len(e.eventsWithID(id)); n != 1 {
				t.Fatalf("%d events after crash and restart, want exactly 1", n)
			}
		})
	}
}

func TestNATSOutageHoldsFramesUnackedUntilItIsBack(t *testing.T) {
	nats := harness.StartNATS(t)
	e := newEnv(t, harness.WithNATS(nats.URL()))
	q := e.waitConsumer("order")
	nats.Stop()

	var ids []string
	for i := range 3 {
		res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: fmt.Sprintf("outage-%d", i)})
		if err != nil || len(res.Published) != 1 {
			t.Fatalf("create order: %v %+v", err, res)
		}
		ids = append(ids, res.Published[0].MessageID)
	}
	e.waitQueue(q, "three frames held unacked", func(qi rabbitmq.QueueInfo) bool { return qi.MessagesUnacknowledged == 3 })
	// Every frame's first publish has failed (the bridge logs the first
	// failure of each) before the window below opens, so the window covers
	// failed retries, not frames still on their way.
	harness.Eventually(t, 60*time.Second, "a failed publish for each frame", func() bool {
		return strings.Count(e.Sitebus.Output(), "publish event failed") >= 3
	})
	// The behaviour under test is that nothing is acked while NATS is away:
	// a "nothing happens during X" check. A correct bridge passes it however
	// long X is; 3s (several retries, six statistics ticks) is what it costs.
	time.Sleep(3 * time.Second)
	if qi := e.queueInfo(q); qi.Messages != 3 || qi.MessagesUnacknowledged != 3 {
		t.Fatalf("during the outage the queue is %+v, want 3 unacked frames", qi)
	}
	if n := e.metric(`sitebus_stomp_frames_total{object_type="order",outcome="published"}`); n > 0 {
		t.Fatalf("%v frames acked as published during the outage", n)
	}

	nats.Start()
	e.waitQueue(q, "frames acked once NATS is back", func(qi rabbitmq.QueueInfo) bool { return qi.Messages == 0 })
	for _, id := range ids {
		if n := len(e.eventsWithID(id)); n != 1 {
			t.Errorf("frame %s: %d events, want 1", id, n)
		}
	}
}

func TestMalformedFramesAreParkedAndLaterFramesFlow(t *testing.T) {
	e := newEnv(t)
	q := e.waitConsumer("order")
	bad := map[string]struct{ body, reason string }{
		"bad-not-json":     {body: `order 42, please`, reason: "order body is not a JSON object"},
		"bad-no-uuid":      {body: `{"order_state": "pending-provider"}`, reason: "order event lacks order_uuid"},
		"bad-invalid-uuid": {body: `{"order_uuid": "../../x"}`, reason: `invalid UUID: order_uuid="../../x"`},
	}
	for id, b := range bad {
		if _, err := e.Admin.PublishRaw(ctx(t), waldursim.RawEventRequest{OfferingUUID: offeringHex, ObjectType: "order", Body: b.body, MessageID: id}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "after-bad"})
	if err != nil || len(res.Published) != 1 {
		t.Fatalf("create order: %v %+v", err, res)
	}
	good := res.Published[0].MessageID
	e.waitQueue(q, "all frames acked", func(qi rabbitmq.QueueInfo) bool { return qi.Messages == 0 })
	harness.Eventually(t, 30*time.Second, "the good frame's event", func() bool { return len(e.eventsWithID(good)) == 1 })

	var dls []bus.DeadLetter
	harness.Eventually(t, 10*time.Second, "three dead letters", func() bool { dls = e.reader.DeadLetters(t); return len(dls) >= 3 })
	if len(dls) != 3 {
		t.Fatalf("%d dead letters, want 3: %+v", len(dls), dls)
	}
	for _, dl := range dls {
		var ev sitebusv1.WaldurEvent
		if err := protoUnmarshal(dl.Data, &ev); err != nil {
			t.Fatalf("dead letter %d payload: %v", dl.Seq, err)
		}
		want, ok := bad[ev.MessageId]
		if !ok {
			t.Errorf("unexpected dead letter %v", &ev)
			continue
		}
		if dl.Source != "stomp-bridge" || !strings.Contains(dl.Reason, want.reason) || dl.Subject != orderSubjectOf(ev.Body) || string(ev.Body) != want.body {
			t.Errorf("dead letter for %s = source %s, reason %q, subject %s, body %q; want reason %q", ev.MessageId, dl.Source, dl.Reason, dl.Subject, ev.Body, want.reason)
		}
		if n := len(e.eventsWithID(ev.MessageId)); n != 0 {
			t.Errorf("malformed frame %s reached the events stream", ev.MessageId)
		}
	}
}

func TestReconcilerPublishesOrdersTheBrokerNeverDelivered(t *testing.T) {
	tests := map[string]struct{ stomp bool }{
		"a frame lost on a STOMP offering":   {stomp: true},
		"an offering served by polling only": {stomp: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// 0.05 minutes: the reconciler polls every 3 s.
			e := newEnv(t, harness.WithOffering(map[string]any{"stomp_enabled": tc.stomp}),
				harness.WithEnv("WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=0.05"))
			if tc.stomp {
				e.waitConsumer("order")
			}
			res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "silent", Silent: true})
			if err != nil || len(res.Published) != 0 {
				t.Fatalf("create silent order: %v %+v", err, res)
			}
			orderHex := strings.ReplaceAll(res.Order.UUID, "-", "")
			id := "reconcile:order:" + orderHex + ":pending-provider"
			harness.Eventually(t, 30*time.Second, "the reconciler's event", func() bool { return len(e.eventsWithID(id)) == 1 })
			ev := e.eventsWithID(id)[0]
			if ev.Subject != orderSubjectOf(ev.Event.Body) || ev.Event.Source != sitebusv1.EventSource_EVENT_SOURCE_RECONCILER {
				t.Errorf("event = %s %v", ev.Subject, ev.Event)
			}
			if want := `"order_uuid":"` + orderHex + `"`; !strings.Contains(string(ev.Event.Body), want) {
				t.Errorf("body %s lacks %s", ev.Event.Body, want)
			}
			// Polling again within the dedupe window adds nothing: wait for a
			// later poll to have offered the order again (counted as a
			// duplicate by the stream), or for a second event, then count.
			harness.Eventually(t, 30*time.Second, "a later poll", func() bool {
				return e.metric(`sitebus_reconciler_orders_total{outcome="duplicate"}`) >= 1 || len(e.eventsWithID(id)) > 1
			})
			if n := len(e.eventsWithID(id)); n != 1 {
				t.Errorf("%d reconciler events for one pending order, want 1", n)
			}
			if !tc.stomp {
				subs, err := e.Admin.Subscriptions(ctx(t))
				if err != nil {
					t.Fatal(err)
				}
				if len(subs) != 0 {
					t.Errorf("an offering without STOMP registered %d event subscriptions", len(subs))
				}
			}
		})
	}
}

// Waldur drops the events it publishes to a queue that does not exist
// yet, so an order made while the bridge is still registering (here Waldur
// refuses to create its queues) is lost to STOMP. The bridge polls for
// pending orders once its order subscription is active, not a poll period
// (5 minutes here) later.
func TestOrderMadeBeforeItsQueueExistedArrivesOnceSubscribed(t *testing.T) {
	e := newEnv(t, harness.WithoutStart())
	refuse := waldursim.Fault{Method: "POST", PathPrefix: "/api/event-subscriptions/", Status: 500, Count: 1000}
	if err := e.Admin.AddFault(ctx(t), refuse); err != nil {
		t.Fatal(err)
	}
	e.Sitebus.Start(e.Env()...)
	// The reconciler's first pass has listed the (no) pending orders.
	harness.Eventually(t, time.Minute, "the reconciler's first listing", func() bool {
		calls, err := e.Admin.Calls(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(calls, func(c waldursim.Call) bool {
			return c.Method == "GET" && c.Path == "/api/marketplace-orders/" && c.Status == 200
		})
	})
	res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "before-queue"})
	if err != nil || len(res.Published) != 0 {
		t.Fatalf("create order with no queue to publish to: %v %+v", err, res)
	}
	if err := e.Admin.ClearFaults(ctx(t)); err != nil {
		t.Fatal(err)
	}
	id := "reconcile:order:" + strings.ReplaceAll(res.Order.UUID, "-", "") + ":pending-provider"
	harness.Eventually(t, 2*time.Minute, "the order found once the subscription is active", func() bool { return len(e.eventsWithID(id)) == 1 })
}

func grep(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestBrokerDroppingTheConnectionIsSurvived(t *testing.T) {
	e := newEnv(t)
	q := e.waitConsumer("order")
	// The broker lists a connection in its statistics a moment after its
	// consumer shows on the queue: close until one was there to close.
	harness.Eventually(t, 30*time.Second, "sitebus's broker connection to be closed", func() bool {
		n, err := e.Broker.Mgmt().CloseConnections(ctx(t), userHex)
		if err != nil {
			t.Fatalf("closing connections: %v", err)
		}
		return n > 0
	})
	// sitebus counts the session's end before it waits to reconnect. (The
	// broker's consumer count going to 0 is no signal to wait for: it lasts
	// about a second, and the statistics behind it refresh every 500 ms.)
	e.waitMetric(`sitebus_stomp_reconnects_total{object_type="order"}`, func(v float64) bool { return v >= 1 })
	e.waitMetric(`sitebus_stomp_connected{object_type="order",offering="`+offeringHex+`"}`, func(v float64) bool { return v == 1 })
	res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "after-drop"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Published[0].MessageID
	harness.Eventually(t, 30*time.Second, "the event after reconnecting", func() bool { return len(e.eventsWithID(id)) == 1 })
	e.waitQueue(q, "the consumer back", func(qi rabbitmq.QueueInfo) bool { return qi.Consumers == 1 })
}

func TestReadyzNeedsWaldur(t *testing.T) {
	e := newEnv(t, harness.WithoutStart())
	if err := e.Admin.AddFault(ctx(t), waldursim.Fault{Method: "GET", PathPrefix: "/api/users/me/", Status: 503, Count: 1000}); err != nil {
		t.Fatal(err)
	}
	e.Sitebus.Start(e.Env()...)
	var body string
	harness.Eventually(t, 30*time.Second, "/readyz to answer", func() bool {
		var code int
		code, body = e.Sitebus.Get("/readyz")
		return code == 503 && strings.Contains(body, "Waldur for offering")
	})
	if !strings.Contains(body, "503") {
		t.Errorf("/readyz does not say what Waldur answered:\n%s", body)
	}
	if code, _ := e.Sitebus.Get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d while only Waldur is down", code)
	}
	if err := e.Admin.ClearFaults(ctx(t)); err != nil {
		t.Fatal(err)
	}
	e.Sitebus.WaitReady(30 * time.Second)
}
