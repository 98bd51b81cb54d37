package harness

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/dryrun"
	"github.com/sitebus/sitebus/services/app"
)

// Explain runs `sitebus orders explain --json ORDER` against the site's
// configuration, as an operator would, and decodes its answer.
func (s *Site) Explain(t testing.TB, orderUUID string) *app.OrderExplanation {
	t.Helper()
	out, code := s.Command(t, "orders", "explain", "--json", orderUUID)
	if code != 0 {
		t.Fatalf("orders explain %s: exit %d:\n%s", orderUUID, code, out)
	}
	var ex app.OrderExplanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("orders explain %s: %v:\n%s", orderUUID, err, out)
	}
	return &ex
}

// ExplainedCalls are every call an explanation lists: the order
// handler's, then those of each saga step it ran, in order.
func ExplainedCalls(ex *app.OrderExplanation) []dryrun.Call {
	out := slices.Clone(ex.Calls)
	if ex.Saga != nil {
		for _, st := range ex.Saga.Steps {
			out = append(out, st.Calls...)
		}
	}
	return out
}

// ExplainedChanges are the calls to target an explanation lists as
// changes (not sent), each as "METHOD path body" with the body compacted.
func ExplainedChanges(ex *app.OrderExplanation, target string) []string {
	var out []string
	for _, c := range ExplainedCalls(ex) {
		if c.Target == target && c.Changes() {
			out = append(out, callLine(c.Method, c.Path, c.Body))
		}
	}
	return out
}

// WaldurChanges are the calls of the simulator's log that change
// something (not GET) and name one of uuids in their path, in the same
// form as ExplainedChanges.
func WaldurChanges(calls []waldursim.Call, uuids ...string) []string {
	var out []string
	for _, c := range calls {
		if c.Method == "GET" || c.Method == "HEAD" {
			continue
		}
		for _, u := range uuids {
			if strings.Contains(c.Path, u) {
				out = append(out, callLine(c.Method, c.Path, c.Body))
				break
			}
		}
	}
	return out
}

func callLine(method, path, body string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(body)) == nil {
		body = b.String()
	}
	return strings.TrimSpace(method + " " + path + " " + body)
}

// ExplainPeer is a platform simulator in an explain check: explain's name
// for it, and its call log.
type ExplainPeer struct {
	// Target is the peer's name in explain's calls ("rancher", "openshift").
	Target string
	// Reset empties the simulator's call log; Changes are the calls that
	// changed something since, as "METHOD path".
	Reset   func()
	Changes func() []string
}

// KeycloakPeer is the Keycloak simulator in an explain check: its
// changes, logins left out, with the id of each group the run made (not
// in realm before Reset) written as explain's placeholder for the id
// Keycloak would give (dry-run, the last segment of the Location dryrun
// answers a create with).
func KeycloakPeer(kc *keycloaksim.Server, realm string) ExplainPeer {
	var before map[string]bool
	return ExplainPeer{Target: "keycloak",
		Reset: func() {
			kc.ResetCalls()
			before = map[string]bool{}
			for _, g := range kc.Groups(realm) {
				before[g.ID] = true
			}
		},
		Changes: func() []string {
			var out []string
			for _, l := range Changed(kc.Calls(), func(c keycloaksim.Call) (string, string) { return c.Method, c.Path }, "/token") {
				parts := strings.Split(l, "/")
				for i := 1; i < len(parts); i++ {
					if parts[i-1] == "groups" && !before[parts[i]] {
						parts[i] = "dry-run"
					}
				}
				out = append(out, strings.Join(parts, "/"))
			}
			return out
		}}
}

// ExplainThenRun explains orderUUID, then runs it (start starts sitebus
// when it is not running yet) until it is done, and checks that peer's
// changes are what explain listed for it. It returns the explanation and
// the Waldur changes the run made to the order and resUUID; norm, when
// set, rewrites both Waldur lists before they are compared (what only the
// platform decides, such as a generated id).
func (s *Site) ExplainThenRun(t testing.TB, orderUUID, resUUID string, start func(), peer ExplainPeer, norm func([]string) []string) *app.OrderExplanation {
	t.Helper()
	ex := s.Explain(t, orderUUID)
	if ex.Error != "" {
		t.Fatalf("explain says the order would fail: %s", ex.Error)
	}
	if ex.Saga != nil {
		for _, st := range ex.Saga.Steps {
			if st.Error != "" || !st.Ran {
				t.Fatalf("explain says saga step %s would fail (ran %v): %s", st.Name, st.Ran, st.Error)
			}
		}
	}
	if err := s.Admin.ResetCalls(Context(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	peer.Reset()
	start()
	s.Deliver(orderUUID)
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("order %s: %s (%s)", orderUUID, o.State, o.ErrorMessage)
	}
	calls, err := s.Admin.Calls(Context(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if norm == nil {
		norm = func(l []string) []string { return l }
	}
	SameChanges(t, ex.Type+": Waldur", norm(WaldurChanges(calls, orderUUID, resUUID)), norm(ExplainedChanges(ex, "waldur")))
	var want []string
	for _, c := range ExplainedCalls(ex) {
		if c.Target == peer.Target && c.Changes() {
			want = append(want, c.Method+" "+c.Path)
		}
	}
	if len(want) == 0 {
		t.Errorf("%s: explain lists no %s change: %+v", ex.Type, peer.Target, ex.Calls)
	}
	t.Logf("explain of %s lists the %s changes\n  %s", ex.Type, peer.Target, strings.Join(want, "\n  "))
	SameChanges(t, ex.Type+": "+peer.Target, peer.Changes(), want)
	return ex
}

// SameChanges reports what a run changed (got) when it is not what
// explain listed (want), in order.
func SameChanges(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: the run's changes\n  %s\nexplain listed\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Changed keeps the calls of a simulator's log that change something
// (not GET or HEAD, and not a login, whose path ends in login), as
// "METHOD path".
func Changed[C any](calls []C, line func(C) (method, path string), login string) []string {
	var out []string
	for _, c := range calls {
		m, p := line(c)
		if m != "GET" && m != "HEAD" && !strings.HasSuffix(p, login) {
			out = append(out, m+" "+p)
		}
	}
	return out
}

// ExplainLifecycle places a create, an update and a terminate of one
// resource in turn and hands each order to check, which explains and runs
// it; check's start starts sitebus for the create and does nothing after.
func (s *Site) ExplainLifecycle(t testing.TB, check func(orderUUID, resUUID string, start func())) {
	t.Helper()
	created := CreateOrderSilent(t, s.Admin, "explained", map[string]int{"cpu": 2, "ram": 4, "storage": 10})
	res := created.Resource.UUID
	check(created.Order.UUID, res, func() { s.Start() })
	upd, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: res, Limits: map[string]int{"cpu": 8, "ram": 16, "storage": 10}, Silent: true})
	check(upd, res, func() {})
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: res, Silent: true})
	check(term, res, func() {})
}
