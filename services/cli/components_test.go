package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/services/app"
)

func TestComponentRequestIsThePythonPayload(t *testing.T) {
	eight := 8.0
	tests := map[string]struct {
		typ  string
		c    config.BackendComponent
		want string
	}{
		"a limit component": {
			typ:  "cpu",
			c:    config.BackendComponent{MeasuredUnit: "cores", AccountingType: "limit", Label: "CPU", Limit: &eight, UnitFactor: 1000},
			want: `{"billing_type":"limit","type":"cpu","name":"CPU","measured_unit":"cores","limit_amount":8}`,
		},
		"no limit is sent as null": {
			typ:  "storage",
			c:    config.BackendComponent{MeasuredUnit: "GiB", AccountingType: "usage", Label: "Storage"},
			want: `{"billing_type":"usage","type":"storage","name":"Storage","measured_unit":"GiB","limit_amount":null}`,
		},
		"a one-time component is prepaid unless configured": {
			typ:  "setup",
			c:    config.BackendComponent{MeasuredUnit: "units", AccountingType: "one", Label: "Setup"},
			want: `{"billing_type":"one","type":"setup","name":"Setup","measured_unit":"units","limit_amount":null,"is_prepaid":true}`,
		},
		"configured prepaid wins over the one-time default": {
			typ:  "setup",
			c:    config.BackendComponent{MeasuredUnit: "units", AccountingType: "one", Label: "Setup", Extra: map[string]any{"is_prepaid": false}},
			want: `{"billing_type":"one","type":"setup","name":"Setup","measured_unit":"units","limit_amount":null,"is_prepaid":false}`,
		},
		"optional fields pass through, the plugins' own do not": {
			typ: "gpu",
			c: config.BackendComponent{MeasuredUnit: "units", AccountingType: "limit", Label: "GPU",
				Extra: map[string]any{"type": "gpu", "k8s_resource": "nvidia.com/gpu", "description": "GPUs", "limit_period": "month", "max_value": 8, "article_code": nil}},
			want: `{"billing_type":"limit","type":"gpu","name":"GPU","measured_unit":"units","limit_amount":null,"description":"GPUs","limit_period":"month","max_value":8}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(componentRequest(tc.typ, tc.c))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonSame(t, string(got), tc.want) {
				t.Errorf("payload %s\nwant    %s", got, tc.want)
			}
		})
	}
}

func jsonSame(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// fakeComponents is a Waldur holding one offering's components; create and
// update change them as Waldur does (partial update by uuid).
type fakeComponents struct {
	mu    sync.Mutex
	comps []map[string]any
	posts []string // "create cpu", "update cpu"
	fail  string   // a component type whose create or update answers 400
}

func (f *fakeComponents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Token "+secretToken {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"detail":"Invalid token."}`)
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch {
	case r.Method == http.MethodGet:
		_ = json.NewEncoder(w).Encode(map[string]any{"components": f.comps})
	case strings.HasSuffix(r.URL.Path, "/create_offering_component/"):
		f.posts = append(f.posts, "create "+body["type"].(string))
		if body["type"] == f.fail {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"limit_amount":["A valid integer is required."]}`)
			return
		}
		body["uuid"] = "u-" + body["type"].(string)
		f.comps = append(f.comps, body)
		w.WriteHeader(http.StatusCreated)
	case strings.HasSuffix(r.URL.Path, "/update_offering_component/"):
		f.posts = append(f.posts, "update "+body["type"].(string))
		for _, c := range f.comps {
			if c["uuid"] == body["uuid"] {
				for k, v := range body {
					c[k] = v
				}
			}
		}
	}
}

func componentsConfig(t *testing.T, url string, comps ...string) *app.Plan {
	t.Helper()
	lines := []string{"offerings:",
		"  - name: k8s",
		"    waldur_api_url: " + url + "/api/",
		"    waldur_api_token: " + secretToken,
		"    waldur_offering_uuid: 7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8",
		"    backend_type: k8s-ut-namespace",
		"    backend_components:"}
	for _, c := range comps {
		lines = append(lines, "      "+c)
	}
	plan, err := app.LoadPlan(writeConfig(t, lines...))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestLoadComponentsCreatesUpdatesAndThenChangesNothing(t *testing.T) {
	f := &fakeComponents{comps: []map[string]any{
		{"uuid": "u-cpu", "type": "cpu", "name": "CPU", "billing_type": "limit", "measured_unit": "cores", "limit_amount": nil, "limit_period": "month", "description": "from the UI"},
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cpu := "cpu: {measured_unit: cores, accounting_type: limit, label: CPU}"
	ram := "ram: {measured_unit: GiB, accounting_type: limit, label: RAM, limit: 64}"
	run := func(plan *app.Plan) (string, error) {
		var out bytes.Buffer
		err := runLoadComponents(context.Background(), &out, plan)
		return out.String(), err
	}

	out, err := run(componentsConfig(t, srv.URL, cpu, ram))
	if err != nil || !strings.Contains(out, "cpu: unchanged") || !strings.Contains(out, "ram: created") || !strings.Contains(out, "1 created, 0 updated, 1 unchanged, 0 failed") {
		t.Fatalf("first run (err %v):\n%s", err, out)
	}
	out, err = run(componentsConfig(t, srv.URL, cpu, ram))
	if err != nil || !strings.Contains(out, "nothing to change: 2 component(s) as configured") {
		t.Errorf("second run (err %v):\n%s", err, out)
	}
	out, err = run(componentsConfig(t, srv.URL, "cpu: {measured_unit: vCPU, accounting_type: limit, label: Cores}", ram))
	if err != nil || !strings.Contains(out, "cpu: updated (measured_unit, name)") {
		t.Errorf("changed config (err %v):\n%s", err, out)
	}
	if want := []string{"create ram", "update cpu"}; strings.Join(f.posts, ",") != strings.Join(want, ",") {
		t.Errorf("calls %v, want %v", f.posts, want)
	}
	// The update kept Waldur's limit_period (not configured) and what it did not send.
	if c := f.comps[0]; c["limit_period"] != "month" || c["description"] != "from the UI" || c["name"] != "Cores" {
		t.Errorf("cpu after the update: %v", c)
	}
}

func TestLoadComponentsFailsOnARefusedComponentAndNamesIt(t *testing.T) {
	f := &fakeComponents{fail: "gpu"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	err := runLoadComponents(context.Background(), &out, componentsConfig(t, srv.URL,
		"gpu: {measured_unit: units, accounting_type: limit, label: GPU, limit: 0.5}",
		"cpu: {measured_unit: cores, accounting_type: limit, label: CPU}"))
	if err == nil || !strings.Contains(out.String(), `gpu: failed to create: `) || !strings.Contains(out.String(), "A valid integer is required.") ||
		!strings.Contains(out.String(), "cpu: created") {
		t.Errorf("err %v:\n%s", err, out.String())
	}
	if strings.Contains(out.String(), secretToken) {
		t.Error("the token is in the output")
	}
}

func TestLoadComponentsWithAWrongTokenFailsTheOffering(t *testing.T) {
	srv := httptest.NewServer(&fakeComponents{})
	t.Cleanup(srv.Close)
	plan := componentsConfig(t, srv.URL, "cpu: {measured_unit: cores, accounting_type: limit, label: CPU}")
	plan.Offerings[0].Waldur.Token = "wrong"
	var out bytes.Buffer
	err := runLoadComponents(context.Background(), &out, plan)
	if err == nil || !strings.Contains(out.String(), "401") {
		t.Errorf("err %v:\n%s", err, out.String())
	}
}
