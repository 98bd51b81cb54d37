package orderflow

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// TestFlowOnTheBus runs a Flow on an embedded NATS server: an order event
// on the events stream settles its order, and a saga's failure on the
// sagas stream errs another.
func TestFlowOnTheBus(t *testing.T) {
	b := bustest.New(t, bus.Config{})
	w := newFakeWaldur(order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), resource("alpha"))
	w.settled = make(chan string, 4)
	o := Offering{Waldur: w, Backend: newFakeBackend()}
	f, err := NewFlow(b, FlowConfig{Name: "order", Sagas: contract.Definitions(0), Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry(),
		Offerings: []FlowOffering{{UUID: offeringHex, Name: "test", Waldur: w, Handler: &backendHandler{o: o}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	})

	subject, err := bus.EventSubject(offeringHex, events.Order, events.OrderKey(orderUUID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(t.Context(), subject, event("executing")); err != nil {
		t.Fatal(err)
	}
	if got := <-w.settled; got != waldur.OrderStateDone {
		t.Fatalf("order %s, want done", got)
	}

	// A second order, whose saga failed and undid what it made.
	const other = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	otherHex := strings.ReplaceAll(other, "-", "")
	w.mu.Lock()
	w.orders[otherHex] = &waldur.Order{UUID: otherHex, Type: waldur.OrderTypeCreate, State: waldur.OrderStateExecuting}
	w.mu.Unlock()
	in, _ := json.Marshal(contract.NamespaceInput{OfferingUUID: offeringHex, OrderUUID: otherHex})
	data, _ := json.Marshal(saga.Saga{ID: contract.SagaID(otherHex), Definition: contract.NamespaceCreate, Status: saga.StatusCompensated,
		Error: "step object failed: quota exceeded", Input: in})
	if _, err := b.JetStream().Publish(t.Context(), saga.OutcomeSubject(saga.StatusCompensated, contract.NamespaceCreate), data); err != nil {
		t.Fatal(err)
	}
	if got := <-w.settled; got != waldur.OrderStateErred {
		t.Fatalf("order %s, want erred", got)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if want := "step object failed: quota exceeded; everything this order made was removed"; w.erred != want {
		t.Errorf("erred %q, want %q", w.erred, want)
	}
}
