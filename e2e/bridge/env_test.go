package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }

const (
	offeringUUID = "d1a2b3c4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	offeringHex  = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	userHex      = "3f1c2b7e9a4d4c8e8f0a1b2c3d4e5f60" // the fixture's token user: the vhost
	token        = "7d2f0c4b9e8a41d3a6b5c4d3e2f1a0b9"
	// orderSubject is the filter of the offering's order events (every partition).
	orderSubject = "waldur." + offeringHex + ".order.*"
)

// orderSubjectOf is the subject the bridge stores an order event with body on:
// its order's partition.
func orderSubjectOf(body []byte) string {
	s, _ := bus.EventSubject(offeringHex, events.Order, events.OrderingKey(events.Order, body))
	return s
}

// env is one simulated site: the shared RabbitMQ, a fresh Waldur simulator,
// and a sitebus process configured against both.
type env struct {
	t      *testing.T
	broker *rabbitmq.Broker
	sim    *waldursim.Server
	admin  *waldursim.AdminClient
	sb     *harness.Sitebus
	reader *harness.Reader
	// startEnv is the environment of every sitebus start.
	startEnv []string
}

type envOptions struct {
	transport    string // websocket (default) or tcp
	natsURL      string // external NATS; "" = embedded
	stompEnabled *bool
	// orderPeriodMinutes is WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES.
	orderPeriodMinutes string
	env                []string
	noStart            bool
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	rabbitmq.Require(t)
	broker := rabbitmq.Shared(t)
	fx, err := waldursim.LoadFixture("../waldursim/testdata/fixture.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sim := waldursim.NewTestServer(t, waldursim.Config{
		Fixture: fx,
		Rabbit:  &waldursim.RabbitConfig{MgmtURL: broker.MgmtURL(), STOMPAddr: broker.STOMPAddr(), AdminUser: broker.AdminUser, AdminPass: broker.AdminPass},
	})
	if o.transport == "" {
		o.transport = "websocket"
	}
	if o.orderPeriodMinutes == "" {
		o.orderPeriodMinutes = "60"
	}
	stomp := true
	if o.stompEnabled != nil {
		stomp = *o.stompEnabled
	}
	wsHost, wsPort, _ := strings.Cut(broker.WebSTOMPAddr(), ":")
	tcpHost, tcpPort, _ := strings.Cut(broker.STOMPAddr(), ":")
	cfg := fmt.Sprintf(`offerings:
  - name: e2e-namespaces
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: k8s-ut-namespace
    order_processing_backend: k8s-ut-namespace
    stomp_enabled: %v
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_components:
      cpu: {measured_unit: cores, accounting_type: limit, label: CPU}
sitebus:
  log_format: text
  stomp:
    transport: %s
    tcp_host: %s
    tcp_port: %s
`, sim.URL(), token, offeringUUID, stomp, wsHost, wsPort, rabbitmq.WebSTOMPPath, o.transport, tcpHost, tcpPort)
	e := &env{t: t, broker: broker, sim: sim, admin: sim.Admin()}
	// The bridge alone: these tests are about ingestion, with no platform.
	e.sb = harness.PrepareSitebus(t, harness.SitebusOptions{Config: cfg, NATSURL: o.natsURL, Args: []string{"--only", "stomp-bridge"}})
	e.reader = harness.NewReader(t, e.sb.NATSURL)
	e.startEnv = append([]string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=" + o.orderPeriodMinutes}, o.env...)
	if !o.noStart {
		e.start()
	}
	return e
}

func (e *env) start(extraEnv ...string) {
	e.t.Helper()
	e.sb.Start(append(append([]string(nil), e.startEnv...), extraEnv...)...)
	e.sb.WaitReady(60 * time.Second)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// queue returns the broker queue of this offering's subscription for
// objectType, waiting until sitebus has registered it.
func (e *env) queue(objectType string) string {
	e.t.Helper()
	var name string
	harness.Eventually(e.t, 30*time.Second, objectType+" subscription queue", func() bool {
		subs, err := e.admin.Subscriptions(ctx(e.t))
		if err != nil {
			return false
		}
		for _, s := range subs {
			for _, q := range s.Queues {
				if q.ObjectType == objectType && strings.ReplaceAll(q.OfferingUUID, "-", "") == offeringHex {
					name = q.QueueName
				}
			}
		}
		return name != ""
	})
	return name
}

// waitConsumer waits until sitebus consumes objectType's queue.
func (e *env) waitConsumer(objectType string) string {
	e.t.Helper()
	q := e.queue(objectType)
	e.waitQueue(q, "a consumer", func(qi rabbitmq.QueueInfo) bool { return qi.Consumers == 1 })
	return q
}

func (e *env) waitQueue(queue, what string, cond func(rabbitmq.QueueInfo) bool) rabbitmq.QueueInfo {
	e.t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qi, err := e.broker.Mgmt().WaitQueue(c, userHex, queue, cond)
	if err != nil {
		e.t.Fatalf("queue %s: waiting for %s: %v (last %+v)", queue, what, err, qi)
	}
	return qi
}

func (e *env) queueInfo(queue string) rabbitmq.QueueInfo {
	e.t.Helper()
	qi, err := e.broker.Mgmt().GetQueue(ctx(e.t), userHex, queue)
	if err != nil {
		e.t.Fatal(err)
	}
	return qi
}

// eventsWithID returns the stored events carrying a Nats-Msg-Id.
func (e *env) eventsWithID(id string) []harness.StoredEvent {
	var out []harness.StoredEvent
	for _, ev := range e.reader.Events(e.t, "") {
		if ev.MsgID == id {
			out = append(out, ev)
		}
	}
	return out
}

func (e *env) stompEventsForOrder(orderUUID string) []harness.StoredEvent {
	var out []harness.StoredEvent
	for _, ev := range e.reader.Events(e.t, orderSubject) {
		if ev.Event.Source != sitebusv1.EventSource_EVENT_SOURCE_STOMP {
			continue
		}
		var body struct {
			OrderUUID string `json:"order_uuid"`
		}
		if json.Unmarshal(ev.Event.Body, &body) == nil && body.OrderUUID == strings.ReplaceAll(orderUUID, "-", "") {
			out = append(out, ev)
		}
	}
	return out
}

func boolPtr(b bool) *bool { return &b }

func protoUnmarshal(b []byte, m *sitebusv1.WaldurEvent) error { return proto.Unmarshal(b, m) }

// metric returns the value of the /metrics sample named by series (name
// and labels as Prometheus prints them, labels sorted), or -1 if absent.
func (e *env) metric(series string) float64 {
	_, m := e.sb.Get("/metrics")
	for _, l := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}

// waitMetric waits until the sample series satisfies cond. Counters are
// updated by sitebus after the effect a test can see from outside (a frame
// is counted after its ack, an event after its publish), so a test that
// asserts on one polls it rather than reading it once after another signal.
func (e *env) waitMetric(series string, cond func(float64) bool) float64 {
	e.t.Helper()
	var v float64
	harness.Eventually(e.t, 30*time.Second, series, func() bool { v = e.metric(series); return cond(v) })
	return v
}
