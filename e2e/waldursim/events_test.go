package waldursim_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// agentSubscription registers an identity, an event subscription and a queue
// for objectType through the REST API, as the site agent does, and returns
// the subscription and queue.
func agentSubscription(t *testing.T, s *waldursim.Server, objectType string) (waldursim.EventSubscription, waldursim.SubscriptionQueue) {
	t.Helper()
	var ident map[string]any
	r := call(t, s, "GET", "/api/marketplace-site-agent-identities/?name=agent-"+offering, token, "")
	var list []map[string]any
	r.json(t, &list)
	if len(list) == 1 {
		ident = list[0]
	} else {
		r = call(t, s, "POST", "/api/marketplace-site-agent-identities/", token,
			`{"offering":"`+offering+`","name":"agent-`+offering+`"}`)
		wantStatus(t, r, 201)
		r.json(t, &ident)
	}
	var sub waldursim.EventSubscription
	r = call(t, s, "POST", "/api/marketplace-site-agent-identities/"+ident["uuid"].(string)+"/register_event_subscription/", token,
		`{"observable_object_type":"`+objectType+`","description":"Event subscription created by the site agent for identity {identity.name}"}`)
	wantStatus(t, r, 201)
	r.json(t, &sub)
	var q waldursim.SubscriptionQueue
	r = call(t, s, "POST", "/api/event-subscriptions/"+sub.UUID+"/create_queue/", token,
		`{"offering_uuid":"`+offering+`","object_type":"`+objectType+`"}`)
	wantStatus(t, r, 201)
	r.json(t, &q)
	return sub, q
}

func brokerSim(t *testing.T) (*waldursim.Server, *rabbitmq.Broker) {
	b := rabbitmq.Shared(t)
	s := newSim(t, waldursim.Config{Rabbit: &waldursim.RabbitConfig{
		MgmtURL: b.MgmtURL(), STOMPAddr: b.STOMPAddr(), AdminUser: b.AdminUser, AdminPass: b.AdminPass,
	}})
	return s, b
}

// subscribeAsAgent connects over Web-STOMP with the agent's credentials
// (login = subscription uuid, passcode = token, vhost = user uuid).
func subscribeAsAgent(t *testing.T, b *rabbitmq.Broker, sub waldursim.EventSubscription, queue string) *stomp.Subscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rabbitmq.DialWebSTOMP(ctx, b.WebSTOMPURL(), sub.UUID, token, sub.UserUUID)
	if err != nil {
		t.Fatalf("agent STOMP connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect() })
	s, err := c.Subscribe("/amq/queue/"+queue, stomp.AckAuto, stomp.SubscribeOpt.Id(queue))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func receive(t *testing.T, s *stomp.Subscription) *stomp.Message {
	t.Helper()
	select {
	case m := <-s.C:
		if m == nil || m.Err != nil {
			t.Fatalf("subscription error: %v", m)
		}
		return m
	case <-time.After(15 * time.Second):
		t.Fatal("no frame within 15 s")
	}
	return nil
}

func TestOrderEventsReachTheAgentQueue(t *testing.T) {
	s, b := brokerSim(t)
	ctx := context.Background()
	sub, q := agentSubscription(t, s, "order")

	t.Run("queue exists with Mastermind's arguments", func(t *testing.T) {
		info, err := b.Mgmt().GetQueue(ctx, userUUID, q.QueueName)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"x-message-ttl": 3600000.0, "x-max-length": 10000.0, "x-overflow": "reject-publish-dlx",
			"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "waldur.dlq.messages"}
		if !info.Durable || !reflect.DeepEqual(info.Arguments, want) {
			t.Fatalf("queue durable=%v args=%v", info.Durable, info.Arguments)
		}
	})

	agent := subscribeAsAgent(t, b, sub, q.QueueName)
	created, err := s.Admin().CreateOrder(ctx, waldursim.CreateOrderRequest{ResourceName: "ns-gamma"})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Published) != 1 {
		t.Fatalf("published %+v", created.Published)
	}
	msg := receive(t, agent)
	for i := range msg.Header.Len() {
		k, v := msg.Header.GetAt(i)
		t.Logf("header %s: %s", k, v)
	}
	wantBody := `{"order_uuid": "` + created.Order.UUID + `", "order_state": "pending-provider", "offering_uuid": "` + offering + `"}`
	if string(msg.Body) != wantBody {
		t.Fatalf("body\n got %s\nwant %s", msg.Body, wantBody)
	}
	topic := "subscription/" + sub.UUID + "/offering/" + offering + "/order"
	wantHeaders := map[string]string{
		// RabbitMQ rewrites /amq/queue/<q> to /queue/<q> on delivery.
		"destination":  "/queue/" + q.QueueName,
		"content-type": "application/json",
		"persistent":   "true",
		"x-message-id": waldursim.MessageID(userUUID, topic, wantBody),
	}
	if _, ok := msg.Header.Contains("receipt"); ok {
		t.Errorf("frame carries a receipt header Mastermind never sends")
	}
	for k, v := range wantHeaders {
		if got := msg.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if len(wantHeaders["x-message-id"]) != 32 {
		t.Errorf("x-message-id length %d", len(wantHeaders["x-message-id"]))
	}

	t.Run("set_state_done publishes done", func(t *testing.T) {
		o := created.Order.UUID
		wantStatus(t, call(t, s, "POST", "/api/marketplace-orders/"+o+"/approve_by_provider/", token, "{}"), 200)
		wantStatus(t, call(t, s, "POST", "/api/marketplace-orders/"+o+"/set_state_done/", token, ""), 200)
		m := receive(t, agent)
		want := `{"order_uuid": "` + o + `", "order_state": "done", "offering_uuid": "` + offering + `"}`
		if string(m.Body) != want {
			t.Fatalf("body %s", m.Body)
		}
	})
	t.Run("silent orders publish nothing; raw frames may be malformed and duplicated", func(t *testing.T) {
		if _, err := s.Admin().CreateOrder(ctx, waldursim.CreateOrderRequest{Silent: true}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			res, err := s.Admin().PublishRaw(ctx, waldursim.RawEventRequest{
				OfferingUUID: offering, ObjectType: "order", Body: `{"order_uuid": `, MessageID: "dup-1",
			})
			if err != nil || len(res.Published) != 1 {
				t.Fatalf("published %+v err %v", res, err)
			}
		}
		for range 2 {
			m := receive(t, agent)
			if string(m.Body) != `{"order_uuid": ` || m.Header.Get("x-message-id") != "dup-1" {
				t.Fatalf("got %s id %s", m.Body, m.Header.Get("x-message-id"))
			}
		}
	})
}

func TestResourceAndUserRoleEvents(t *testing.T) {
	s, b := brokerSim(t)
	ctx := context.Background()
	subRes, qRes := agentSubscription(t, s, "resource")
	subRole, qRole := agentSubscription(t, s, "user_role")
	resources := subscribeAsAgent(t, b, subRes, qRes.QueueName)
	roles := subscribeAsAgent(t, b, subRole, qRole.QueueName)

	paused := true
	fr, err := s.Admin().SetFlags(ctx, resAlpha, waldursim.FlagsRequest{Paused: &paused})
	if err != nil || !fr.Resource.Paused {
		t.Fatalf("flags %+v err %v", fr, err)
	}
	m := receive(t, resources)
	want := `{"resource_uuid": "` + resAlpha + `", "resource_backend_id": "genomics-ns-alpha", "downscaled": false, ` +
		`"restrict_member_access": false, "paused": true, "sequence_number": 1, "offering_uuid": "` + offering + `"}`
	if string(m.Body) != want {
		t.Fatalf("resource body\n got %s\nwant %s", m.Body, want)
	}
	t.Run("unchanged flags publish nothing", func(t *testing.T) {
		fr, err := s.Admin().SetFlags(ctx, resAlpha, waldursim.FlagsRequest{Paused: &paused})
		if err != nil || len(fr.Published) != 0 {
			t.Fatalf("published %+v err %v", fr, err)
		}
	})

	tr, err := s.Admin().SetTeam(ctx, waldursim.TeamRequest{ResourceUUID: resAlpha, Granted: true,
		Member: waldursim.TeamMember{UUID: "c0000000000040008000000000000003", Username: "carol", Role: "PROJECT.MEMBER"}})
	if err != nil || len(tr.Team) != 3 {
		t.Fatalf("team %+v err %v", tr, err)
	}
	m = receive(t, roles)
	want = `{"user_uuid": "c0000000000040008000000000000003", "user_username": "carol", "project_uuid": "` + project +
		`", "project_name": "Genomics", "role_name": "PROJECT.MEMBER", "granted": true, "offering_uuid": "` + offering + `"}`
	if string(m.Body) != want {
		t.Fatalf("user_role body\n got %s\nwant %s", m.Body, want)
	}
}

func TestPublishFailureIsReportedToAdminCallers(t *testing.T) {
	b := rabbitmq.Shared(t)
	ctx := context.Background()
	// Management works (so the queue is created) but STOMP is unreachable.
	s := newSim(t, waldursim.Config{Rabbit: &waldursim.RabbitConfig{
		MgmtURL: b.MgmtURL(), STOMPAddr: "127.0.0.1:1", AdminUser: b.AdminUser, AdminPass: b.AdminPass,
	}})
	agentSubscription(t, s, "order")
	res, err := s.Admin().CreateOrder(ctx, waldursim.CreateOrderRequest{})
	if err == nil || res.PublishError == "" || res.Order.UUID == "" {
		t.Fatalf("want a publish error with the order still created; got %+v, %v", res, err)
	}
}
