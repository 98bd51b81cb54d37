package okd_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/services/app"
)

// okdChanges are the calls of the OKD simulator's log that change
// something, as "METHOD path" (token requests are logins, not changes).
func okdChanges(calls []okdsim.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Method != "GET" && c.Method != "HEAD" && !strings.HasSuffix(c.Path, "/token") {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

func explainedOKD(ex *app.OrderExplanation) []string {
	var out []string
	for _, c := range ex.Calls {
		if c.Target == "openshift" && !c.Sent {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

// explain's listing of a create, an update and a terminate of an OKD
// project is what the run then does: the same Waldur changes and the same
// OpenShift changes (the simulators' call logs).
func TestExplainListsTheCallsTheRunMakes(t *testing.T) {
	fx := harness.Fixture(t)
	fx.Orders = nil
	s := newSite(t, harness.WithFixture(fx), harness.WithoutStart(),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"order_process_period": "1h"}}))

	explainThenRun := func(orderUUID, resUUID string, start func()) {
		t.Helper()
		ex := s.Explain(t, orderUUID)
		if ex.Error != "" {
			t.Fatalf("explain says the order would fail: %s", ex.Error)
		}
		if err := s.Admin.ResetCalls(ctx(t)); err != nil {
			t.Fatal(err)
		}
		s.OKD.ResetCalls()
		start()
		s.Deliver(orderUUID)
		if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
			t.Fatalf("order %s: %s (%s)", orderUUID, o.State, o.ErrorMessage)
		}
		calls, err := s.Admin.Calls(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		want := harness.ExplainedChanges(ex, "waldur")
		if got := harness.WaldurChanges(calls, orderUUID, resUUID); !slices.Equal(got, want) {
			t.Errorf("%s: the run's Waldur changes\n  %s\nexplain listed\n  %s", ex.Type, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		want = explainedOKD(ex)
		if len(want) == 0 {
			t.Errorf("%s: explain lists no OpenShift change: %+v", ex.Type, ex.Calls)
		}
		t.Logf("explain of %s lists the OpenShift changes\n  %s\nand the requests %v", ex.Type, strings.Join(want, "\n  "), ex.Requests)
		if got := okdChanges(s.OKD.Calls()); !slices.Equal(got, want) {
			t.Errorf("%s: the run's OpenShift changes\n  %s\nexplain listed\n  %s", ex.Type, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}

	created := harness.CreateOrderSilent(t, s.Admin, "explained", map[string]int{"cpu": 2, "ram": 4, "storage": 10})
	res := created.Resource.UUID
	explainThenRun(created.Order.UUID, res, func() { s.Start() })
	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: res, Limits: map[string]int{"cpu": 8, "ram": 16, "storage": 10}, Silent: true})
	explainThenRun(upd, res, func() {})
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: res, Silent: true})
	explainThenRun(term, res, func() {})
}
