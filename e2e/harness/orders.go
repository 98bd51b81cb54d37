package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/waldursim"
)

// Context ends after timeout, or when the test does.
func Context(t testing.TB, timeout time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return c
}

// Member is a member of a resource's team as the fixture names its users:
// offering user "alice01" is Waldur user "alice" of acme.
func Member(user, role string) waldursim.TeamMember {
	return waldursim.TeamMember{Username: strings.TrimSuffix(user, "01"), OfferingUserUsername: user, Role: role, Email: user + "@acme.example", OfferingUserState: "OK"}
}

// CreateOrderSilent makes a create order for resource name with limits,
// and gives the resource team, without telling sitebus; DeliverOrder does.
func CreateOrderSilent(t testing.TB, admin *waldursim.AdminClient, name string, limits map[string]int, team ...waldursim.TeamMember) *waldursim.CreateOrderResult {
	t.Helper()
	res, err := admin.CreateOrder(Context(t, 2*time.Minute), waldursim.CreateOrderRequest{ResourceName: name, Limits: limits, Silent: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range team {
		if _, err := admin.SetTeam(Context(t, 2*time.Minute), waldursim.TeamRequest{ResourceUUID: res.Resource.UUID, Member: m, Granted: true, Silent: true}); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// DeliverOrder publishes the pending-provider event of the order to the
// offering (offeringHex: its UUID without dashes) with message id
// "deliver-" + orderUUID.
func DeliverOrder(t testing.TB, admin *waldursim.AdminClient, offeringHex, orderUUID string) {
	t.Helper()
	PublishOrder(t, admin, offeringHex, orderUUID, "deliver-"+orderUUID)
}

// PublishOrder is DeliverOrder with a message id of the caller's.
func PublishOrder(t testing.TB, admin *waldursim.AdminClient, offeringHex, orderUUID, messageID string) {
	t.Helper()
	if err := PublishOrderEvent(Context(t, 2*time.Minute), admin, offeringHex, orderUUID, messageID); err != nil {
		t.Fatal(err)
	}
}

// PublishOrderEvent is PublishOrder returning the error, for goroutines
// (which must not end the test).
func PublishOrderEvent(ctx context.Context, admin *waldursim.AdminClient, offeringHex, orderUUID, messageID string) error {
	body := fmt.Sprintf(`{"order_uuid": "%s", "order_state": "pending-provider", "offering_uuid": "%s"}`, strings.ReplaceAll(orderUUID, "-", ""), offeringHex)
	_, err := admin.PublishRaw(ctx, waldursim.RawEventRequest{OfferingUUID: offeringHex, ObjectType: "order", Body: body, MessageID: messageID})
	return err
}

// WaitOrder waits up to 90s for the order to reach one of states and
// returns it; otherwise it fails t with the order as last seen and the
// last tailLines lines of sb's output.
func WaitOrder(t testing.TB, admin *waldursim.AdminClient, sb *Sitebus, tailLines int, uuid string, states ...string) *waldursim.APIOrder {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	o, err := admin.WaitOrder(c, uuid, states...)
	if err != nil {
		last, _ := admin.Order(context.Background(), uuid)
		t.Fatalf("order %s did not reach %v: %v (last: %+v)\n%s", uuid, states, err, last, sb.Tail(tailLines))
	}
	return o
}

// WaitOrderSubscription waits up to 30s until sitebus consumes the order
// queue of the offering (offeringHex: its UUID without dashes).
func (s *Sitebus) WaitOrderSubscription(offeringHex string) {
	s.t.Helper()
	Eventually(s.t, 30*time.Second, "the order subscription", func() bool {
		_, m := s.Get("/metrics")
		return strings.Contains(m, `sitebus_stomp_connected{object_type="order",offering="`+offeringHex+`"} 1`)
	})
}
