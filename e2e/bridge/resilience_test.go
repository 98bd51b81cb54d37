package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

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
