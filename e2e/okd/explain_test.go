package okd_test

import (
	"testing"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/okdsim"
)

// explain's listing of a create, an update and a terminate of an OKD
// project is what the run then does: the same Waldur changes and the same
// OpenShift changes (the simulators' call logs).
func TestExplainListsTheCallsTheRunMakes(t *testing.T) {
	fx := harness.Fixture(t)
	fx.Orders = nil
	s := newSite(t, harness.WithFixture(fx), harness.WithoutStart(),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"order_process_period": "1h"}}))

	peer := harness.ExplainPeer{Target: "openshift", Reset: s.OKD.ResetCalls, Changes: func() []string {
		// Token requests are logins, not changes.
		return harness.Changed(s.OKD.Calls(), func(c okdsim.Call) (string, string) { return c.Method, c.Path }, "/token")
	}}
	explainThenRun := func(orderUUID, resUUID string, start func()) {
		t.Helper()
		s.ExplainThenRun(t, orderUUID, resUUID, start, peer, nil)
	}

	s.ExplainLifecycle(t, explainThenRun)
}
