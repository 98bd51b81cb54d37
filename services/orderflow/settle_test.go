package orderflow

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// TestSagaOutcomesErrTheOrder: a saga that did not succeed errs its order
// with the step that failed and what became of what it made; one word for
// every saga, the namespace and the cluster ones alike.
func TestSagaOutcomesErrTheOrder(t *testing.T) {
	tests := map[string]struct {
		status    saga.Status
		sagaErr   string
		park      string
		state     string // the order's state in Waldur before
		wantState string
		want      []string
		notWant   string
	}{
		"compensated: the step's error, and that everything was removed": {
			status: saga.StatusCompensated, sagaErr: "step object failed: quota exceeded", state: waldur.OrderStateExecuting,
			wantState: waldur.OrderStateErred, want: []string{"step object failed: quota exceeded", "; everything this order made was removed"},
		},
		"failed before anything was made: no removal claimed": {
			status: saga.StatusFailed, sagaErr: "step plan failed: worker_nodes_count: must be at least 1", state: waldur.OrderStateExecuting,
			wantState: waldur.OrderStateErred, want: []string{"worker_nodes_count"}, notWant: "removed",
		},
		"parked: where to look and why undoing failed": {
			status: saga.StatusParked, sagaErr: "step nodes failed", park: "delete VM x: 503", state: waldur.OrderStateExecuting,
			wantState: waldur.OrderStateErred, want: []string{"step nodes failed", "parked", "sitebus sagas show order-1", "delete VM x: 503"},
		},
		"no error recorded: the saga and how it ended": {
			status: saga.StatusFailed, state: waldur.OrderStateExecuting,
			wantState: waldur.OrderStateErred, want: []string{"saga order-1 ended failed"},
		},
		"an order Waldur shows settled already is left alone": {
			status: saga.StatusCompensated, sagaErr: "step object failed", state: waldur.OrderStateCanceled,
			wantState: waldur.OrderStateCanceled,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newFakeWaldur(order(waldur.OrderTypeCreate, tc.state), nil)
			f := testFlow(t, w, Verbs{}, &fakeStarter{})
			in, _ := json.Marshal(contract.NamespaceInput{OfferingUUID: offeringHex, OrderUUID: strings.ReplaceAll(orderUUID, "-", "")})
			// The fake keys orders by the dashed UUID; the saga carries hex.
			w.orders[strings.ReplaceAll(orderUUID, "-", "")] = w.orders[orderUUID]
			data, _ := json.Marshal(saga.Saga{ID: "order-1", Status: tc.status, Error: tc.sagaErr, ParkReason: tc.park, Input: in})
			if err := f.onOutcome(context.Background(), data); err != nil {
				t.Fatal(err)
			}
			if got := w.state(orderUUID); got != tc.wantState {
				t.Errorf("order %q, want %q", got, tc.wantState)
			}
			for _, s := range tc.want {
				if !strings.Contains(w.erred, s) {
					t.Errorf("erred %q lacks %q", w.erred, s)
				}
			}
			if tc.notWant != "" && strings.Contains(w.erred, tc.notWant) {
				t.Errorf("erred %q has %q", w.erred, tc.notWant)
			}
			if got := testutil.ToFloat64(f.outcomes.WithLabelValues("saga", outcomeErred)); got != 1 {
				t.Errorf("saga erred counted %v times, want 1", got)
			}
		})
	}
}

func TestSagaOutcomesNoRetryCanFixAreParked(t *testing.T) {
	f := testFlow(t, newFakeWaldur(nil, nil), Verbs{}, &fakeStarter{})
	tests := map[string]string{
		"no saga":                         `nonsense`,
		"an input without an order":       `{"id": "order-1", "input": 7}`,
		"an offering not for orders here": `{"id": "order-1", "input": {"offering_uuid": "ffff", "order_uuid": "0b6f1a7e3c2d4e5f8a9b1c2d3e4f5a6b"}}`,
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if err := f.onOutcome(context.Background(), []byte(data)); !fault.IsTerminal(err) {
				t.Errorf("onOutcome = %v, want a terminal error", err)
			}
		})
	}
}

// TestMarkDoneFromASagaSettlesOnlyAnExecutingOrder: a saga's settle step
// may run again after a crash, or after a user cancelled the order.
func TestMarkDoneFromASagaSettlesOnlyAnExecutingOrder(t *testing.T) {
	tests := map[string]struct {
		state, want string
		doneCalls   int
	}{
		"executing: done":                    {state: waldur.OrderStateExecuting, want: waldur.OrderStateDone, doneCalls: 1},
		"done already (a repeated step)":     {state: waldur.OrderStateDone, want: waldur.OrderStateDone},
		"canceled meanwhile: left alone":     {state: waldur.OrderStateCanceled, want: waldur.OrderStateCanceled},
		"erred by another actor: left alone": {state: waldur.OrderStateErred, want: waldur.OrderStateErred},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newFakeWaldur(order(waldur.OrderTypeCreate, tc.state), nil)
			f := testFlow(t, w, Verbs{}, nil)
			if err := f.MarkDone(context.Background(), offeringHex, orderUUID); err != nil {
				t.Fatal(err)
			}
			if got := w.state(orderUUID); got != tc.want || w.calls["Done"] != tc.doneCalls {
				t.Errorf("order %q after %d set_state_done, want %q after %d", got, w.calls["Done"], tc.want, tc.doneCalls)
			}
		})
	}
	f := testFlow(t, newFakeWaldur(nil, nil), Verbs{}, nil)
	if err := f.MarkDone(context.Background(), "ffff", orderUUID); !fault.IsTerminal(err) {
		t.Errorf("MarkDone of an offering not here = %v, want a terminal error", err)
	}
}

// TestMarkErredReportsOnlyWhatWaldurCanTake covers markErred's own rules:
// Waldur away is retried; an order gone or a stopping process is not an
// error.
func TestMarkErredReportsOnlyWhatWaldurCanTake(t *testing.T) {
	tests := map[string]struct {
		fail    map[string]error
		noOrder bool
		wantErr bool
	}{
		"Waldur away while reading the state: retried": {fail: map[string]error{"GetOrder": fault.Errorf(fault.Unavailable, "502")}, wantErr: true},
		"Waldur away while erring: retried":            {fail: map[string]error{"Erred": fault.Errorf(fault.Unavailable, "502")}, wantErr: true},
		"someone settled it first (409): fine":         {fail: map[string]error{"Erred": fault.Errorf(fault.Conflict, "409")}},
		"the process stopping (context canceled): not reported as a failure": {
			fail: map[string]error{"Erred": context.Canceled}},
		"an order Waldur does not know: nothing to err": {noOrder: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newFakeWaldur(order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), nil)
			if tc.noOrder {
				delete(w.orders, orderUUID)
			}
			w.fail = tc.fail
			f := testFlow(t, w, Verbs{}, nil)
			err := markErred(context.Background(), w, orderUUID, "boom", f.log)
			if (err != nil) != tc.wantErr {
				t.Errorf("markErred = %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}
