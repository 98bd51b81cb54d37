package rancher_test

import (
	"encoding/json"
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

// explainSite is a site with no orders and sitebus not started, for
// explain and then the run; keycloakEnabled picks the saga or the direct
// path.
func explainSite(t *testing.T, keycloakEnabled bool) *site {
	fx := harness.Fixture(t)
	fx.Orders, fx.Resources = nil, nil
	return &site{t: t, Site: harness.NewSite(t, harness.WithFixture(fx), harness.WithCluster(kube.Shared(t)), harness.WithRancher(ranchersim.Options{}),
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...), harness.WithGPU(), harness.WithoutStart(),
		harness.WithSettings(map[string]any{"default_role": "workloads-manage", "keycloak_enabled": keycloakEnabled}),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"order_process_period": "1h"}}))}
}

// explain's listing of a create, an update and a terminate of a Rancher
// project (the direct path, without Keycloak) is what the run then does:
// the same Waldur changes and the same Rancher changes (the simulators'
// call logs).
func TestExplainListsTheCallsTheRunMakes(t *testing.T) {
	s := explainSite(t, false)

	peer := harness.ExplainPeer{Target: "rancher", Reset: s.Rancher.ResetCalls, Changes: func() []string {
		// The local login is no change.
		return harness.Changed(s.Rancher.Calls(), func(c ranchersim.Call) (string, string) { return c.Method, c.Path }, "/localProviders/local")
	}}
	explainThenRun := func(orderUUID, resUUID string, start func()) {
		t.Helper()
		// Run once the order is done: the project id is Rancher's.
		s.ExplainThenRun(t, orderUUID, resUUID, start, peer, func(l []string) []string {
			r, err := s.Admin.Resource(ctx(t), resUUID)
			if err != nil {
				t.Fatal(err)
			}
			return assigned(l, r.BackendID)
		})
	}

	s.ExplainLifecycle(t, explainThenRun)
}

// With keycloak_enabled a Rancher project's create and terminate are
// sagas: explain runs their steps dry, and the Keycloak and Rancher
// changes it lists under them are those the run then makes.
func TestExplainRunsTheProjectSagaAsTheRunDoes(t *testing.T) {
	s := explainSite(t, true)
	keycloak := harness.KeycloakPeer(s.Keycloak, "waldur")
	var resUUID string
	check := func(orderUUID, res string, start func()) *app.OrderExplanation {
		t.Helper()
		resUUID = res
		return s.ExplainThenRun(t, orderUUID, res, start, keycloak, func(l []string) []string {
			r, err := s.Admin.Resource(ctx(t), resUUID)
			if err != nil {
				t.Fatal(err)
			}
			return assigned(l, r.BackendID)
		})
	}
	created := harness.CreateOrderSilent(t, s.Admin, "explained", map[string]int{"cpu": 2, "ram": 4, "storage": 10})
	if ex := check(created.Order.UUID, created.Resource.UUID, func() { s.Start() }); ex.Saga == nil || ex.Saga.Definition != "rancher-project-create" {
		t.Fatalf("explain of a create with Keycloak: saga %+v", ex.Saga)
	}
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: created.Resource.UUID, Silent: true})
	if ex := check(term, created.Resource.UUID, func() {}); ex.Saga == nil || ex.Saga.Definition != "rancher-project-terminate" {
		t.Fatalf("explain of a terminate with Keycloak: saga %+v", ex.Saga)
	}
}
