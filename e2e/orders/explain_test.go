package orders_test

import (
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/services/app"
)

// explainThenRun explains the undelivered order, delivers it to the
// running sitebus and checks that the Waldur calls the run made that
// change something for the order or its resource (the simulator's call
// log) are exactly those explain listed, in order and with their bodies.
func (s *site) explainThenRun(orderUUID, resourceUUID string) *app.OrderExplanation {
	s.t.Helper()
	ex := s.Explain(s.t, orderUUID)
	s.runExplained(ex, orderUUID, resourceUUID, func() {})
	return ex
}

// runExplained checks ex as explainThenRun does; start starts sitebus
// when it is not running yet.
func (s *site) runExplained(ex *app.OrderExplanation, orderUUID, resourceUUID string, start func()) {
	s.t.Helper()
	if ex.Error != "" {
		s.t.Fatalf("explain says the order would fail: %s", ex.Error)
	}
	for _, c := range ex.Calls {
		if c.Changes() && c.Method == "GET" {
			s.t.Errorf("a read was not sent: %+v", c)
		}
	}
	if err := s.Admin.ResetCalls(ctx(s.t)); err != nil {
		s.t.Fatal(err)
	}
	start()
	s.Deliver(orderUUID)
	s.WaitOrder(orderUUID, "done")
	calls, err := s.Admin.Calls(ctx(s.t))
	if err != nil {
		s.t.Fatal(err)
	}
	want := harness.ExplainedChanges(ex, "waldur")
	if len(want) == 0 {
		s.t.Fatalf("explain lists no Waldur change for order %s: %+v", orderUUID, ex.Calls)
	}
	s.t.Logf("explain of %s %s lists the Waldur changes\n  %s", ex.Type, orderUUID, strings.Join(want, "\n  "))
	if got := harness.WaldurChanges(calls, orderUUID, resourceUUID); !slices.Equal(got, want) {
		s.t.Errorf("the run's Waldur changes\n  %s\nexplain listed\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// kubeChange is explain's one Kubernetes change of the order: its method,
// the object's name and the body it would send.
func kubeChange(t testing.TB, ex *app.OrderExplanation) (method, name string, body map[string]any) {
	t.Helper()
	var changes []string
	for _, c := range ex.Calls {
		if c.Target != "kubernetes" || !c.Changes() {
			continue
		}
		changes = append(changes, c.Method+" "+c.Path)
		method, name = c.Method, path.Base(c.Path)
		if c.Body != "" {
			if err := json.Unmarshal([]byte(c.Body), &body); err != nil {
				t.Fatalf("body of %s %s: %v", c.Method, c.Path, err)
			}
		}
	}
	if len(changes) != 1 {
		t.Fatalf("explain lists Kubernetes changes %v, want one", changes)
	}
	return method, name, body
}

// explain's listing of a create, an update and a terminate of a
// ManagedNamespace is what the run then does: the same Waldur calls (the
// simulator's log) and the Kubernetes object as explain said it would be
// sent.
func TestExplainListsTheCallsTheRunMakes(t *testing.T) {
	fx := harness.Fixture(t)
	fx.Orders = nil
	s := newSite(t, harness.WithFixture(fx), harness.WithoutStart(),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"order_process_period": "1h"}}))

	created := harness.CreateOrderSilent(t, s.Admin, "explained", map[string]int{"cpu": 2, "ram": 4, "storage": 10})
	orderUUID, resUUID := created.Order.UUID, created.Resource.UUID
	ex := s.Explain(t, orderUUID)
	method, _, body := kubeChange(t, ex)
	if method != "POST" || ex.Outcome != "done" {
		t.Fatalf("explain of a create: %s, outcome %q; want a POST, done", method, ex.Outcome)
	}
	name, _, _ := unstructured.NestedString(body, "metadata", "name")
	if _, err := s.cr(name); !apierrors.IsNotFound(err) {
		t.Fatalf("explain made ManagedNamespace %s (err %v)", name, err)
	}
	if o, err := s.Admin.Order(ctx(t), orderUUID); err != nil || o.State != "pending-provider" {
		t.Fatalf("explain changed the order: %+v, %v", o, err)
	}
	s.runExplained(ex, orderUUID, resUUID, func() { s.Start() })
	cr := s.mustCR(name)
	if want := body["spec"]; !reflect.DeepEqual(cr.Object["spec"], want) {
		t.Errorf("the run made spec %v; explain listed %v", cr.Object["spec"], want)
	}

	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 8, "ram": 16, "storage": 10}, Silent: true})
	ex = s.explainThenRun(upd, resUUID)
	method, _, patch := kubeChange(t, ex)
	if method != "PATCH" {
		t.Fatalf("explain of an update: %s, want a PATCH", method)
	}
	want, _, _ := unstructured.NestedStringMap(patch, "spec", "quota")
	got := quota(s.mustCR(name))
	for k, v := range want {
		if got[k] != v {
			t.Errorf("after the update spec.quota.%s is %q; explain's patch set %q", k, got[k], v)
		}
	}

	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID, Silent: true})
	ex = s.explainThenRun(term, resUUID)
	if method, target, _ := kubeChange(t, ex); method != "DELETE" || target != name {
		t.Fatalf("explain of a terminate: %s %s, want DELETE %s", method, target, name)
	}
	if cr, err := s.cr(name); err == nil && cr.GetDeletionTimestamp() == nil {
		t.Errorf("after the terminate ManagedNamespace %s is still there", name)
	}
}

// explain of an order that runs as a saga (a ManagedNamespace whose
// access goes through Keycloak groups) runs the saga's steps dry: the
// Keycloak changes it lists under the steps are those the run then makes
// (the simulator's call log), and so are the Waldur changes, the settle
// step's included. The team step lists the members it would put into
// the groups the first step would make (which the dry run finds though
// Keycloak does not have them), each added as the run then adds it.
func TestExplainRunsTheSagaStepsAsTheRunDoes(t *testing.T) {
	fx := harness.Fixture(t)
	fx.Orders = nil
	// Only the team step may fill the groups: no membership pass.
	s := newSite(t, harness.WithFixture(fx), harness.WithoutStart(), withKeycloak,
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"order_process_period": "1h", "membership_sync_period": "24h"}}))
	keycloak := harness.KeycloakPeer(s.Keycloak, "waldur")

	created := harness.CreateOrderSilent(t, s.Admin, "sagalab", map[string]int{"cpu": 2, "ram": 4, "storage": 10},
		member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER"))
	res := created.Resource.UUID
	text, code := s.Command(t, "orders", "explain", created.Order.UUID)
	if code != 0 {
		t.Fatalf("orders explain: exit %d\n%s", code, text)
	}
	t.Logf("orders explain %s:\n%s", created.Order.UUID, text)
	ex := s.ExplainThenRun(t, created.Order.UUID, res, func() { s.Start() }, keycloak, nil)
	if ex.Saga == nil || ex.Saga.Definition != "namespace-create" {
		t.Fatalf("explain of a create with Keycloak groups: saga %+v, want namespace-create", ex.Saga)
	}
	for _, st := range ex.Saga.Steps {
		t.Logf("step %s: commands %v, %d calls", st.Name, st.Commands, len(st.Calls))
	}
	if got := harness.ExplainedChanges(ex, "kubernetes"); len(got) != 1 || !strings.HasPrefix(got[0], "POST ") {
		t.Errorf("explain of the create lists the Kubernetes changes %v, want the ManagedNamespace's POST", got)
	}
	var added []string
	for _, st := range ex.Saga.Steps {
		for _, c := range st.Calls {
			if st.Name == "team" && c.Target == "keycloak" && c.Changes() {
				added = append(added, c.Method+" "+c.Path)
			}
		}
	}
	if len(added) != 2 || !strings.HasPrefix(added[0], "PUT ") || !strings.HasSuffix(added[0], "/groups/dry-run") {
		t.Errorf("the team step of the create's explain adds %v, want alice01 and bob01 put into the groups the first step makes", added)
	}
	waitMembers(t, s.Keycloak, "ns_sagalab_admin", "alice01")
	waitMembers(t, s.Keycloak, "ns_sagalab_readwrite", "bob01")

	// Waldur drops bob01 from the team without an event reaching
	// sitebus; an update's explain then lists what the team's sync would
	// move (bob01 out of the readwrite group), changing nothing, and the
	// sync a team event runs makes exactly those changes.
	if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: res, Member: member("bob01", "PROJECT.MEMBER"), Silent: true}); err != nil {
		t.Fatal(err)
	}
	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: res, Limits: map[string]int{"cpu": 4, "ram": 4, "storage": 10}, Silent: true})
	text, code = s.Command(t, "orders", "explain", upd)
	if code != 0 || !strings.Contains(text, "add 0, remove 1, leave 0 pending") {
		t.Errorf("orders explain of the update: exit %d, want the membership it would move:\n%s", code, text)
	}
	ex = s.Explain(t, upd)
	m := ex.Membership
	if m == nil || m.Error != "" || m.Added != 0 || m.Removed != 1 {
		t.Fatalf("explain of the update: membership %+v, want bob01 removed", m)
	}
	var moved []string
	for _, c := range m.Calls {
		if c.Target == "keycloak" && c.Changes() {
			moved = append(moved, c.Method+" "+c.Path)
		}
	}
	if got := harness.ExplainedChanges(ex, "keycloak"); len(got) != 0 {
		t.Errorf("the update's own calls change Keycloak: %v", got)
	}
	waitMembers(t, s.Keycloak, "ns_sagalab_readwrite", "bob01")
	// The update runs first: Waldur's role event syncs only resources that
	// are not being updated.
	keycloak.Reset()
	s.Deliver(upd)
	if o := s.WaitOrder(upd, "done", "erred"); o.State != "done" {
		t.Fatalf("update: %s (%s)", o.State, o.ErrorMessage)
	}
	if _, err := s.Admin.SetTeam(ctx(t), waldursim.TeamRequest{ResourceUUID: res, Member: member("bob01", "PROJECT.MEMBER")}); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, s.Keycloak, "ns_sagalab_readwrite")
	harness.SameChanges(t, "the update's run and the team's sync after the update's explain", keycloak.Changes(), moved)

	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: res, Silent: true})
	ex = s.ExplainThenRun(t, term, res, func() {}, keycloak, nil)
	if ex.Saga == nil || ex.Saga.Definition != "namespace-terminate" {
		t.Fatalf("explain of a terminate with Keycloak groups: saga %+v, want namespace-terminate", ex.Saga)
	}
}
