package orderflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// TestOrderLifecycle follows one order event through the Flow with the
// order service's own handler (backendHandler) over fakes of Waldur, the
// platform, the saga coordinator and membership: every order type, every
// outcome, and how each class of error settles the order.
func TestOrderLifecycle(t *testing.T) {
	type want struct {
		err     bool   // the event is returned to the bus (retried or parked)
		state   string // the order's state in Waldur afterwards
		erred   string // in the erred message
		outcome string // sitebus_orders_total's outcome label counted once
		saga    string // the saga started
		object  bool   // the platform object exists afterwards
	}
	tests := map[string]struct {
		order      *waldur.Order
		res        *waldur.Resource
		eventState string
		setup      func(w *fakeWaldur, b *fakeBackend, o *Offering, s *fakeStarter, sy *fakeSync)
		last       bool
		want       want
	}{
		"a create makes the object, tells Waldur its id and is done": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone, object: true},
		},
		"a restore is made as a create": {
			order: order(waldur.OrderTypeRestore, waldur.OrderStateExecuting), res: resource("alpha"),
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone, object: true},
		},
		"a create whose object exists already is done without making another": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: &waldur.Resource{UUID: resUUID, Slug: "alpha", BackendID: "ns-alpha"},
			setup: func(_ *fakeWaldur, b *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				b.objects["ns-alpha"] = nil
			},
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone, object: true},
		},
		"a pending-provider order is approved, then made": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStatePendingProvider), res: resource("alpha"), eventState: "pending-provider",
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone, object: true},
		},
		"an approval someone else answered first (409) is re-read: rejected means skipped": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStatePendingProvider), res: resource("alpha"),
			setup: func(w *fakeWaldur, _ *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				w.fail["Approve"], w.approvedBy = fault.Errorf(fault.Conflict, "409"), waldur.OrderStateRejected
			},
			want: want{state: waldur.OrderStateRejected, outcome: outcomeSkipped},
		},
		"an update goes to the update verb (quota's) and is done": {
			order: order(waldur.OrderTypeUpdate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, _ *fakeStarter, _ *fakeSync) {
				o.Update = func(context.Context, *Order) (*Saga, error) { return nil, nil }
			},
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone},
		},
		"an update of an offering without an update verb is erred as unsupported": {
			order: order(waldur.OrderTypeUpdate, waldur.OrderStateExecuting), res: resource("alpha"),
			want: want{state: waldur.OrderStateErred, erred: `order type "Update" is not supported`, outcome: outcomeErred},
		},
		"a terminate deletes the object and is done": {
			order: order(waldur.OrderTypeTerminate, waldur.OrderStateExecuting), res: &waldur.Resource{UUID: resUUID, Slug: "alpha", BackendID: "ns-alpha"},
			setup: func(_ *fakeWaldur, b *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				b.objects["ns-alpha"] = nil
			},
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone},
		},
		"a terminate of a resource that never got an object is done": {
			order: order(waldur.OrderTypeTerminate, waldur.OrderStateExecuting), res: resource("alpha"),
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone},
		},
		"an unsupported order type is erred at once": {
			order: order("Migrate", waldur.OrderStateExecuting), res: resource("alpha"),
			want: want{state: waldur.OrderStateErred, erred: `order type "Migrate" is not supported`, outcome: outcomeErred},
		},
		"an order Waldur does not know (404) is skipped": {
			order: nil,
			want:  want{outcome: outcomeSkipped},
		},
		"an order Waldur shows done already is skipped": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateDone), res: resource("alpha"),
			want: want{state: waldur.OrderStateDone, outcome: outcomeSkipped},
		},
		"an event in a state the site has nothing to do for is skipped unread": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"), eventState: "pending-consumer",
			want: want{state: waldur.OrderStateExecuting},
		},
		"a create with access groups starts the namespace saga": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, _ *fakeStarter, _ *fakeSync) { o.Groups = roleGroups },
			want:  want{state: waldur.OrderStateExecuting, outcome: outcomeDelegated, saga: contract.NamespaceCreate},
		},
		"a terminate of a Rancher project with Keycloak starts its saga": {
			order: order(waldur.OrderTypeTerminate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, _ *fakeStarter, _ *fakeSync) {
				o.ProjectGroups = projectGroups
			},
			want: want{state: waldur.OrderStateExecuting, outcome: outcomeDelegated, saga: contract.RancherProjectTerminate},
		},
		"a saga create with an invalid name is erred before anything is made": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("Bad Name"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, _ *fakeStarter, _ *fakeSync) { o.Groups = roleGroups },
			want:  want{state: waldur.OrderStateErred, erred: "not a DNS label", outcome: outcomeErred},
		},
		"an invalid create is erred at once, on the first attempt": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("Bad Name"),
			want: want{state: waldur.OrderStateErred, erred: `create fake for resource "Res Bad Name"`, outcome: outcomeErred},
		},
		"a platform away is retried before the last attempt": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, b *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				b.fail["Create"] = fault.Errorf(fault.Unavailable, "apiserver: 503")
			},
			want: want{err: true, state: waldur.OrderStateExecuting},
		},
		"a platform away on the last attempt errs the order": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"), last: true,
			setup: func(_ *fakeWaldur, b *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				b.fail["Create"] = fault.Errorf(fault.Unavailable, "apiserver: 503")
			},
			want: want{state: waldur.OrderStateErred, erred: "apiserver: 503", outcome: outcomeErred},
		},
		"a Waldur away while reading the order is retried": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(w *fakeWaldur, _ *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				w.fail["GetOrder"] = fault.Errorf(fault.Unavailable, "waldur: 502")
			},
			want: want{err: true, state: waldur.OrderStateExecuting},
		},
		"a stopping process (context canceled) is never reported, even on the last attempt": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"), last: true,
			setup: func(_ *fakeWaldur, b *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				b.fail["Create"] = fmt.Errorf("create: %w", context.Canceled)
			},
			want: want{err: true, state: waldur.OrderStateExecuting},
		},
		"a 409 on set_state_done means someone else settled it: fine": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(w *fakeWaldur, _ *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				w.fail["Done"] = fault.Errorf(fault.Conflict, "409")
			},
			want: want{state: waldur.OrderStateExecuting, outcome: outcomeDone, object: true},
		},
		"a team that cannot be applied after a direct create does not fail the order": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, _ *fakeStarter, sy *fakeSync) {
				o.SyncTeam, sy.err = true, fault.Terminal(errors.New("a foreign binding is in the way"))
			},
			want: want{state: waldur.OrderStateDone, outcome: outcomeDone, object: true},
		},
		"a membership away after a direct create is retried": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, _ *fakeStarter, sy *fakeSync) {
				o.SyncTeam, sy.err = true, errors.New("no result: deadline")
			},
			want: want{err: true, state: waldur.OrderStateExecuting, object: true},
		},
		"a coordinator away when starting the saga is retried": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"),
			setup: func(_ *fakeWaldur, _ *fakeBackend, o *Offering, s *fakeStarter, _ *fakeSync) {
				o.Groups, s.fail = roleGroups, errors.New("nats: timeout")
			},
			want: want{err: true, state: waldur.OrderStateExecuting},
		},
		"erring an order Waldur shows settled already leaves it alone": {
			order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), res: resource("alpha"), last: true,
			setup: func(w *fakeWaldur, b *fakeBackend, _ *Offering, _ *fakeStarter, _ *fakeSync) {
				b.fail["Create"] = fault.Errorf(fault.Invalid, "refused")
				// Another actor cancels it while the create fails.
				b.fail["Create"] = &settleMeanwhile{w: w, err: b.fail["Create"]}
			},
			want: want{state: waldur.OrderStateCanceled, outcome: outcomeErred},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, b, s, sy := newFakeWaldur(tc.order, tc.res), newFakeBackend(), &fakeStarter{}, &fakeSync{}
			o := Offering{Waldur: w, Backend: b}
			if tc.setup != nil {
				tc.setup(w, b, &o, s, sy)
			}
			f := testFlow(t, w, &backendHandler{o: o, kind: kindOf(o), sync: sy.sync}, s)
			state := tc.eventState
			if state == "" {
				state = "executing"
			}
			err := f.handleEvent(context.Background(), event(state), tc.last)
			if (err != nil) != tc.want.err {
				t.Fatalf("handleEvent = %v, want an error: %v", err, tc.want.err)
			}
			if tc.order != nil {
				if got := w.state(orderUUID); got != tc.want.state {
					t.Errorf("order state %q, want %q", got, tc.want.state)
				}
			}
			if !strings.Contains(w.erred, tc.want.erred) || (tc.want.erred == "" && w.erred != "") {
				t.Errorf("erred message %q, want one with %q", w.erred, tc.want.erred)
			}
			if w.calls["Erred"] > 1 || w.calls["Done"] > 1 {
				t.Errorf("settled %d times done, %d times erred; want once at most", w.calls["Done"], w.calls["Erred"])
			}
			if w.calls["Done"]+w.calls["Erred"] > 1 {
				t.Errorf("both done and erred were set")
			}
			if tc.want.outcome != "" {
				typ := "unknown"
				if tc.order != nil {
					typ = tc.order.Type
				}
				if got := testutil.ToFloat64(f.outcomes.WithLabelValues(typ, tc.want.outcome)); got != 1 {
					t.Errorf("sitebus_orders_total{type=%q,outcome=%q} = %v, want 1", typ, tc.want.outcome, got)
				}
			} else if n := testutil.CollectAndCount(f.outcomes); n != 0 {
				t.Errorf("%d outcomes counted, want none", n)
			}
			var started []string
			for _, sg := range s.started {
				started = append(started, sg.Definition)
				if sg.ID != contract.SagaID(strings.ReplaceAll(orderUUID, "-", "")) {
					t.Errorf("saga id %q is not the order's", sg.ID)
				}
			}
			if tc.want.saga == "" && len(started) > 0 || tc.want.saga != "" && (len(started) != 1 || started[0] != tc.want.saga) {
				t.Errorf("sagas started %v, want %q", started, tc.want.saga)
			}
			if got := b.exists("ns-alpha"); got != tc.want.object {
				t.Errorf("object exists: %v, want %v", got, tc.want.object)
			}
		})
	}
}

// settleMeanwhile is a platform error during which another actor settles
// the order in Waldur (a user cancels it).
type settleMeanwhile struct {
	w   *fakeWaldur
	err error
}

func (e *settleMeanwhile) Error() string {
	if o, ok := e.w.orders[orderUUID]; ok {
		o.State = waldur.OrderStateCanceled
	}
	return e.err.Error()
}

func (e *settleMeanwhile) Unwrap() error { return e.err }

func roleGroups(slug string) []contract.GroupSpec {
	return []contract.GroupSpec{
		{Role: "admin", Name: "ns-" + slug + "-admin"},
		{Role: "viewer", Name: "ns-" + slug + "-viewer"},
	}
}

func projectGroups(projectSlug string) []contract.GroupSpec {
	return []contract.GroupSpec{{Name: "c-cluster"}, {Name: "c-cluster-" + projectSlug, Parent: "c-cluster"}}
}

// TestEventsNoRetryCanFixAreParked: events that can never be processed are
// terminal for the bus, which parks them.
func TestEventsNoRetryCanFixAreParked(t *testing.T) {
	f := testFlow(t, newFakeWaldur(nil, nil), Verbs{}, nil)
	tests := map[string]*struct {
		offering, body string
	}{
		"an offering not configured here": {offering: "ffffffffffffffffffffffffffffffff", body: `{"order_uuid": "` + orderUUID + `"}`},
		"a body without an order uuid":    {offering: offeringHex, body: `{"order_state": "executing"}`},
		"a body that is no JSON":          {offering: offeringHex, body: `order!`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev := event("executing")
			ev.OfferingUuid, ev.Body = tc.offering, []byte(tc.body)
			if err := f.handleEvent(context.Background(), ev, false); !fault.IsTerminal(err) {
				t.Errorf("handleEvent = %v, want a terminal error", err)
			}
		})
	}
}

// TestVerbsRefuseWhatTheirKindDoesNotDo: a kind without a verb errs the
// order as unsupported, naming the kind.
func TestVerbsRefuseWhatTheirKindDoesNotDo(t *testing.T) {
	w := newFakeWaldur(order(waldur.OrderTypeUpdate, waldur.OrderStateExecuting), nil)
	f := testFlow(t, w, Verbs{Kind: "rancher-cluster"}, nil)
	if err := f.handleEvent(context.Background(), event("executing"), false); err != nil {
		t.Fatal(err)
	}
	if want := "Update orders of rancher-cluster offerings are not supported yet"; w.erred != want {
		t.Errorf("erred %q, want %q", w.erred, want)
	}
}
