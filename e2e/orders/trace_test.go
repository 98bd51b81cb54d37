package orders_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/stompbridge"
)

// TestOneOrderIsOneTrace runs the bridge and the order service in this
// process with the SDK's in-memory span recorder, and checks that the spans
// of one order — STOMP frame, publish, consume, every Kubernetes call and
// every Waldur call — share one trace id across the bus.
func TestOneOrderIsOneTrace(t *testing.T) {
	rabbitmq.Require(t)
	kube.Require(t)
	broker := rabbitmq.Shared(t)
	cluster := kube.Shared(t)
	root, _ := harness.RepoRoot()
	c := ctx(t)
	if err := cluster.ApplyFile(c, filepath.Join(root, "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml")); err != nil {
		t.Fatal(err)
	}
	s := newSite(t, harness.WithoutStart()) // for its simulator and CR namespace
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	log := slog.New(slog.DiscardHandler)

	b := bustest.New(t, bus.Config{TracerProvider: tp, Logger: log})

	wsHost, wsPort, _ := strings.Cut(broker.WebSTOMPAddr(), ":")
	cfg, err := config.Parse([]byte(fmt.Sprintf(`offerings:
  - name: traced
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: k8s-ut-namespace
    order_processing_backend: k8s-ut-namespace
    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_settings: {cr_namespace: %s}
    backend_components:
      cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
`, s.Waldur.URL(), token, offeringUUID, wsHost, wsPort, rabbitmq.WebSTOMPPath, s.CRNamespace)), "trace.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	oc := &cfg.Offerings[0]
	instrument := func(target string) func(http.RoundTripper) http.RoundTripper {
		return func(rt http.RoundTripper) http.RoundTripper {
			return telemetry.InstrumentTransport(rt, target, nil, tp)
		}
	}
	wc, err := waldur.New(waldur.Config{APIURL: oc.WaldurAPIURL, Token: token, WrapTransport: instrument("waldur")})
	if err != nil {
		t.Fatal(err)
	}
	settings, err := managedns.ParseSettings(oc.BackendSettings)
	if err != nil {
		t.Fatal(err)
	}
	be, err := managedns.New(settings, oc.BackendComponents, managedns.Options{RESTConfig: cluster.RESTConfig(), Logger: log, WrapTransport: instrument("kubernetes")})
	if err != nil {
		t.Fatal(err)
	}
	bridge, err := stompbridge.New(b, stompbridge.Config{
		Offerings: []stompbridge.Offering{{Config: oc, Waldur: wc}}, OrderPollPeriod: time.Hour,
		Stomp: config.StompSettings{Transport: "websocket"}, Logger: log, TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	orders, err := orderflow.New(b, orderflow.Config{Offerings: []orderflow.Offering{{Config: oc, Waldur: wc, Backend: be}}, Logger: log, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = bridge.Run(runCtx); done <- struct{}{} }()
	go func() { _ = orders.Run(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { stop(); <-done; <-done })
	harness.Eventually(t, 30*time.Second, "the order consumer", func() bool { return orders.Ready(c) == nil })

	// Wait for the subscription, then send one order.
	harness.Eventually(t, 30*time.Second, "the STOMP subscription", func() bool {
		subs, _ := s.Admin.Subscriptions(c)
		for _, sub := range subs {
			for _, q := range sub.Queues {
				if q.ObjectType == "order" {
					qi, err := broker.Mgmt().GetQueue(c, "3f1c2b7e9a4d4c8e8f0a1b2c3d4e5f60", q.QueueName)
					return err == nil && qi.Consumers == 1
				}
			}
		}
		return false
	})
	orderUUID, _ := s.Order(waldursim.CreateOrderRequest{ResourceName: "traced", Limits: map[string]int{"cpu": 1}})
	s.WaitOrder(orderUUID, "done")

	// The order's own span names its trace: the frame that created it must
	// be the root of that trace (the later "done" frame has one of its own).
	// Spans are recorded when they end, and set_state_done is answered
	// before its client span, the order span and the consume span end: poll
	// until the trace is complete (or the deadline), then say what is missing.
	orderHex := strings.ReplaceAll(orderUUID, "-", "")
	subject, err := bus.EventSubject("d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d", events.Order, events.OrderKey(orderHex))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"stomp frame order",
		"publish " + subject,
		"process " + subject,
		"waldur GET /api/marketplace-orders/",
		"waldur POST /api/marketplace-orders/",
		"kubernetes POST /apis/provisioning.hpc.ut.ee/v1/namespaces/" + s.CRNamespace + "/managednamespaces",
		"waldur POST /api/marketplace-provider-resources/",
	}
	var (
		orderSpan sdktrace.ReadOnlySpan
		inTrace   map[string]bool
		missing   []string
	)
	look := func() bool {
		orderSpan, inTrace, missing = nil, map[string]bool{}, nil
		spans := rec.Ended()
		for _, sp := range spans {
			if sp.Name() == "order "+orderHex {
				orderSpan = sp
			}
		}
		if orderSpan == nil {
			return false
		}
		trace := orderSpan.SpanContext().TraceID()
		for _, sp := range spans {
			if sp.SpanContext().TraceID() == trace {
				inTrace[sp.Name()] = true
			}
		}
		for _, w := range want {
			if !slices.ContainsFunc(keys(inTrace), func(name string) bool { return strings.HasPrefix(name, w) }) {
				missing = append(missing, w)
			}
		}
		if done := "waldur POST /api/marketplace-orders/" + orderHex + "/set_state_done/"; !inTrace[done] {
			missing = append(missing, done)
		}
		return len(missing) == 0
	}
	for deadline := time.Now().Add(30 * time.Second); !look() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if orderSpan == nil {
		t.Fatal("no span for the order")
	}
	for _, w := range missing {
		t.Errorf("no span %q in the order's trace %s; the trace has %v", w, orderSpan.SpanContext().TraceID(), keys(inTrace))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
