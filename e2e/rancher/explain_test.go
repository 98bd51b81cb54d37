package rancher_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/dryrun"
	"github.com/sitebus/sitebus/services/app"
)

// assigned rewrites what Rancher decides when it creates a project, which
// no dry run can know beforehand, the way explain shows it: the project's
// generated id part (dryrun.PlaceholderProjectID in explain) and the
// members it gives the new project (its creator, which explain's
// metadata cannot list).
func assigned(lines []string, projectID string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if cluster, _, ok := strings.Cut(projectID, ":"); ok {
			l = strings.ReplaceAll(l, projectID, cluster+":"+dryrun.PlaceholderProjectID)
		}
		if path, body, ok := strings.Cut(l, "/set_backend_metadata/ "); ok {
			var m map[string]map[string]any
			if json.Unmarshal([]byte(body), &m) == nil && m["backend_metadata"] != nil {
				delete(m["backend_metadata"], "users")
				b, _ := json.Marshal(m)
				l = path + "/set_backend_metadata/ " + string(b)
			}
		}
		out = append(out, l)
	}
	return out
}

// rancherChanges are the calls of the Rancher simulator's log that change
// something, as "METHOD path".
func rancherChanges(calls []ranchersim.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Method != "GET" && c.Method != "HEAD" && !strings.HasSuffix(c.Path, "/localProviders/local") {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

func explainedRancher(ex *app.OrderExplanation) []string {
	var out []string
	for _, c := range ex.Calls {
		if c.Target == "rancher" && !c.Sent {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

// explain's listing of a create, an update and a terminate of a Rancher
// project (the direct path, without Keycloak) is what the run then does:
// the same Waldur changes and the same Rancher changes (the simulators'
// call logs).
func TestExplainListsTheCallsTheRunMakes(t *testing.T) {
	fx := harness.Fixture(t)
	fx.Orders, fx.Resources = nil, nil
	s := &site{t: t, Site: harness.NewSite(t, harness.WithFixture(fx), harness.WithCluster(kube.Shared(t)), harness.WithRancher(ranchersim.Options{}),
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...), harness.WithGPU(), harness.WithoutStart(),
		harness.WithSettings(map[string]any{"default_role": "workloads-manage", "keycloak_enabled": false}),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"order_process_period": "1h"}}))}

	explainThenRun := func(orderUUID, resUUID string, start func()) *app.OrderExplanation {
		t.Helper()
		ex := s.Explain(t, orderUUID)
		if ex.Error != "" {
			t.Fatalf("explain says the order would fail: %s", ex.Error)
		}
		if err := s.Admin.ResetCalls(ctx(t)); err != nil {
			t.Fatal(err)
		}
		s.Rancher.ResetCalls()
		start()
		s.Deliver(orderUUID)
		if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
			t.Fatalf("order %s: %s (%s)", orderUUID, o.State, o.ErrorMessage)
		}
		calls, err := s.Admin.Calls(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Admin.Resource(ctx(t), resUUID)
		if err != nil {
			t.Fatal(err)
		}
		want := assigned(harness.ExplainedChanges(ex, "waldur"), r.BackendID)
		if got := assigned(harness.WaldurChanges(calls, orderUUID, resUUID), r.BackendID); !slices.Equal(got, want) {
			t.Errorf("%s: the run's Waldur changes\n  %s\nexplain listed\n  %s", ex.Type, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		want = explainedRancher(ex)
		if len(want) == 0 {
			t.Errorf("%s: explain lists no Rancher change: %+v", ex.Type, ex.Calls)
		}
		t.Logf("explain of %s lists the Rancher changes\n  %s", ex.Type, strings.Join(want, "\n  "))
		if got := rancherChanges(s.Rancher.Calls()); !slices.Equal(got, want) {
			t.Errorf("%s: the run's Rancher changes\n  %s\nexplain listed\n  %s", ex.Type, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		return ex
	}

	created := harness.CreateOrderSilent(t, s.Admin, "explained", map[string]int{"cpu": 2, "ram": 4, "storage": 10})
	res := created.Resource.UUID
	explainThenRun(created.Order.UUID, res, func() { s.Start() })
	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: res, Limits: map[string]int{"cpu": 8, "ram": 16, "storage": 10}, Silent: true})
	explainThenRun(upd, res, func() {})
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: res, Silent: true})
	explainThenRun(term, res, func() {})
}
