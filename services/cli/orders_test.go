package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/dryrun"
	"github.com/sitebus/sitebus/services/app"
)

const (
	explainOffering = "7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8"
	knownOrder      = "11111111-2222-4333-8444-555555555555"
	foreignOrder    = "66666666-7777-4888-9999-000000000000"
)

// orderWaldur is a Waldur that knows two orders: one of the configured
// offering, one of an offering the configuration does not name.
func orderWaldur(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/marketplace-orders/" + foreignOrder + "/":
			_ = json.NewEncoder(w).Encode(map[string]any{"uuid": foreignOrder, "type": "Create", "state": "executing",
				"offering_uuid": "0000aaaa-0000-4000-8000-00000000bbbb", "offering_name": "HPC"})
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"detail":"Not found."}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestOrdersExplainRefusesWhatItCannotExplain(t *testing.T) {
	url := orderWaldur(t)
	cfg := writeConfig(t, "offerings:",
		"  - name: k8s",
		"    waldur_api_url: "+url+"/api/",
		"    waldur_api_token: "+secretToken,
		"    waldur_offering_uuid: "+explainOffering,
		"    backend_type: k8s-ut-namespace",
		"    order_processing_backend: k8s-ut-namespace")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no order named", args: []string{"orders", "explain", "-c", cfg}, want: "accepts 1 arg(s), received 0"},
		{name: "not a UUID", args: []string{"orders", "explain", "-c", cfg, "web-1"}, want: `"web-1" is not an order UUID`},
		{name: "an order Waldur does not know", args: []string{"orders", "explain", "-c", cfg, knownOrder},
			want: "order " + knownOrder + ": no Waldur of this configuration knows the order (asked " + url + "/api/)"},
		{name: "an order of an offering the configuration does not serve", args: []string{"orders", "explain", "-c", cfg, foreignOrder},
			want: `order ` + foreignOrder + ` is of offering "HPC" (0000aaaa-0000-4000-8000-00000000bbbb), which this configuration does not serve (it serves "k8s" (` + explainOffering + `))`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := execute(t, tc.args...)
			if err == nil {
				t.Fatalf("explain succeeded:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretToken) {
				t.Errorf("error shows the token: %v", err)
			}
		})
	}
}

func TestOrdersExplainPrintsReadsChangesAndSagaSteps(t *testing.T) {
	ex := &app.OrderExplanation{
		Order: knownOrder, Type: "Create", State: "pending-provider", Offering: "k8s (" + explainOffering + ")",
		Backend: "k8s-ut-namespace", Resource: "r-1", Outcome: "delegated",
		Calls: []dryrun.Call{
			{Target: "waldur", Method: "GET", Path: "/api/marketplace-orders/" + knownOrder + "/", Sent: true, Status: 200},
			{Target: "waldur", Method: "POST", Path: "/api/marketplace-orders/" + knownOrder + "/approve_by_provider/", Body: "{}"},
			{Target: "kubernetes", Method: "POST", Path: "/apis/x/v1/managednamespaces", Body: strings.Repeat("x", 400)},
		},
		Saga: &app.ExplainedSaga{Definition: "namespace-create", ID: "order-1", Steps: []app.ExplainedStep{
			{Name: "groups", Action: "ensure-groups", Compensation: "delete-created-groups", Ran: true,
				Commands: []string{"keycloak-sync.ensure-groups"},
				Calls:    []dryrun.Call{{Target: "keycloak", Method: "POST", Path: "/admin/realms/waldur/groups", Body: `{"name":"ns_lab_admin"}`}}},
			{Name: "team", Action: "sync-resource", Ran: true, Error: "no such project"},
			{Name: "settle", Action: "settle"},
		}},
	}
	var b bytes.Buffer
	printExplain(&b, ex)
	out := b.String()
	for _, want := range []string{
		"order " + knownOrder + ": Create, pending-provider\n",
		"  read    waldur GET /api/marketplace-orders/" + knownOrder + "/ -> 200\n",
		"  CHANGE  waldur POST /api/marketplace-orders/" + knownOrder + "/approve_by_provider/ {}\n",
		"  CHANGE  kubernetes POST /apis/x/v1/managednamespaces " + strings.Repeat("x", maxBody) + "…\n",
		"  1. groups: ensure-groups (undone by delete-created-groups, not run)\n",
		"       command keycloak-sync.ensure-groups (in this process, not on the bus)\n",
		"       CHANGE  keycloak POST /admin/realms/waldur/groups {\"name\":\"ns_lab_admin\"}\n",
		"  2. team: sync-resource (nothing to undo)\n       FAILS: no such project\n",
		"  3. settle: settle (nothing to undo)\n       not run: a step before it would fail\n",
		"outcome: delegated (the saga above settles the order)\n",
		"3 change(s); nothing was changed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A cluster saga is planned, not run: each step says what it would do.
	ex.Saga = &app.ExplainedSaga{Definition: "rancher-cluster-create", ID: "order-1", NotRun: "a dry run cannot make VMs",
		Steps: []app.ExplainedStep{{Name: "plan", Action: "plan", Ran: true, Does: "plans cluster k8s-lab"},
			{Name: "cluster", Action: "cluster", Compensation: "delete-cluster", Does: "makes Rancher cluster k8s-lab"}}}
	b.Reset()
	printExplain(&b, ex)
	for _, want := range []string{
		"(not run: a dry run cannot make VMs)\n",
		"  1. plan: plan (nothing to undo)\n       plans cluster k8s-lab\n",
		"  2. cluster: cluster (undone by delete-cluster, not run)\n       makes Rancher cluster k8s-lab\noutcome",
		"2 change(s) listed, and the saga's steps above; nothing was changed\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}

	ex.Saga, ex.Outcome, ex.Error = nil, "", "create k8s-ut-namespace: refused (terminal: the run marks the order erred)"
	b.Reset()
	printExplain(&b, ex)
	if want := "the order would fail: create k8s-ut-namespace: refused (terminal: the run marks the order erred)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}
