package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }

const (
	offeringHex = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	userHex     = "3f1c2b7e9a4d4c8e8f0a1b2c3d4e5f60" // the fixture's token user: the vhost
	// orderSubject is the filter of the offering's order events (every partition).
	orderSubject = "waldur." + offeringHex + ".order.*"
)

// orderSubjectOf is the subject the bridge stores an order event with body on:
// its order's partition.
func orderSubjectOf(body []byte) string {
	s, _ := bus.EventSubject(offeringHex, events.Order, events.OrderingKey(events.Order, body))
	return s
}

// env is one simulated site: the shared RabbitMQ, a fresh Waldur simulator
// on the whole fixture, and the bridge alone (these tests are about
// ingestion, with no platform), reading over websocket unless opts say
// otherwise (overTCP).
type env struct {
	*harness.Site
	t      *testing.T
	reader *harness.Reader
}

func newEnv(t *testing.T, opts ...harness.SiteOption) *env {
	t.Helper()
	s := harness.NewSite(t, append([]harness.SiteOption{harness.WithOnly("stomp-bridge"), harness.WithFixture(harness.Fixture(t))}, opts...)...)
	return &env{Site: s, t: t, reader: harness.NewReader(t, s.Sitebus.NATSURL)}
}

// overTCP reads STOMP over TCP rather than websocket.
func overTCP(t *testing.T) harness.SiteOption {
	host, port, _ := strings.Cut(rabbitmq.Shared(t).STOMPAddr(), ":")
	return harness.WithSitebusConfig(map[string]any{"stomp": map[string]any{"transport": "tcp", "tcp_host": host, "tcp_port": port}})
}

func ctx(t *testing.T) context.Context { return harness.Context(t, 2*time.Minute) }

// queue returns the broker queue of this offering's subscription for
// objectType, waiting until sitebus has registered it.
func (e *env) queue(objectType string) string {
	e.t.Helper()
	var name string
	harness.Eventually(e.t, 30*time.Second, objectType+" subscription queue", func() bool {
		subs, err := e.Admin.Subscriptions(ctx(e.t))
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
	qi, err := e.Broker.Mgmt().WaitQueue(c, userHex, queue, cond)
	if err != nil {
		e.t.Fatalf("queue %s: waiting for %s: %v (last %+v)", queue, what, err, qi)
	}
	return qi
}

func (e *env) queueInfo(queue string) rabbitmq.QueueInfo {
	e.t.Helper()
	qi, err := e.Broker.Mgmt().GetQueue(ctx(e.t), userHex, queue)
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

func protoUnmarshal(b []byte, m *sitebusv1.WaldurEvent) error { return proto.Unmarshal(b, m) }

// metric returns the value of the /metrics sample named by series (name
// and labels as Prometheus prints them, labels sorted), or -1 if absent.
func (e *env) metric(series string) float64 {
	_, m := e.Sitebus.Get("/metrics")
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
