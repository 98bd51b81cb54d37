package usage

import (
	"context"
	"encoding/json"

	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// fakeWaldur keeps component usages as Waldur does: set_usage creates or
// updates the named components of the month and leaves the others.
type fakeWaldur struct {
	mu         sync.Mutex
	components []string
	resources  []waldur.Resource
	usages     map[string]map[string]float64 // resource/month → type → usage
	sets       []waldur.SetUsageRequest
	failFor    string // resource UUID whose set_usage fails
}

func key(res string, month time.Time) string { return res + "/" + month.Format("2006-01") }

func (f *fakeWaldur) GetOffering(_ context.Context, uuid string, _ ...string) (*waldur.Offering, error) {
	o := &waldur.Offering{UUID: uuid}
	for _, c := range f.components {
		o.Components = append(o.Components, waldur.OfferingComponent{Type: c, Name: c})
	}
	return o, nil
}

func (f *fakeWaldur) ListProviderResources(context.Context, waldur.ResourceFilter) ([]waldur.Resource, error) {
	return f.resources, nil
}

func (f *fakeWaldur) ListOfferingComponentUsages(_ context.Context, _ string, month time.Time) ([]waldur.ComponentUsageRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []waldur.ComponentUsageRecord
	for _, r := range f.resources {
		for typ, v := range f.usages[key(r.UUID, month)] {
			out = append(out, waldur.ComponentUsageRecord{ResourceUUID: r.UUID, Type: typ, Usage: json.Number(fmt.Sprintf("%.2f", v))})
		}
	}
	return out, nil
}

func (f *fakeWaldur) SetUsage(_ context.Context, req waldur.SetUsageRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Resource == f.failFor {
		return &waldur.APIError{Method: "POST", Path: "/api/marketplace-component-usages/set_usage/", StatusCode: 503}
	}
	f.sets = append(f.sets, req)
	if f.usages == nil {
		f.usages = map[string]map[string]float64{}
	}
	k := key(req.Resource, req.Date)
	if f.usages[k] == nil {
		f.usages[k] = map[string]float64{}
	}
	for _, u := range req.Usages {
		f.usages[k][u.Type] = u.Amount
	}
	return nil
}

func (f *fakeWaldur) takeSets() []waldur.SetUsageRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sets
	f.sets = nil
	return s
}

// platform is a backend whose objects' usage the test sets.
type platform struct {
	backend.Backend // only Type and UsageAll are called
	mu              sync.Mutex
	usage           map[string]map[string]float64
	calls           int
}

func (p *platform) Type() string { return "test" }

func (p *platform) UsageAll(_ context.Context, ids []string) (map[string]map[string]float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	out := map[string]map[string]float64{}
	for _, id := range ids {
		if u, ok := p.usage[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

func (p *platform) set(id string, u map[string]float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.usage[id] = u
}

type fixture struct {
	w   *fakeWaldur
	p   *platform
	svc *Service
	reg *prometheus.Registry
	now time.Time
}

func newFixture(t *testing.T, now time.Time) *fixture {
	t.Helper()
	f := &fixture{
		w: &fakeWaldur{components: []string{"cpu", "ram", "storage"}, resources: []waldur.Resource{
			{UUID: "r1", Name: "one", BackendID: "waldur-one"},
			{UUID: "r2", Name: "two", BackendID: "waldur-two"},
		}},
		p:   &platform{usage: map[string]map[string]float64{}},
		reg: prometheus.NewRegistry(),
		now: now,
	}
	cfg := &config.Offering{Name: "k8s", WaldurOfferingUUID: "o1", BackendComponents: map[string]config.BackendComponent{
		"cpu": {UnitFactor: 1}, "ram": {UnitFactor: 1}, "storage": {UnitFactor: 1}, "gpu": {UnitFactor: 1},
	}}
	svc, err := New(Config{
		Offerings: []Offering{{Config: cfg, Waldur: f.w, Backend: f.p}},
		Now:       func() time.Time { return f.now },
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: f.reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

var midMay = time.Date(2026, 5, 15, 12, 0, 0, 0, time.UTC)

func TestCycle(t *testing.T) {
	t.Run("the usage submitted is the backend's, one call per resource, only offered components", func(t *testing.T) {
		f := newFixture(t, midMay)
		f.p.set("waldur-one", map[string]float64{"cpu": 1.5, "ram": 2.25, "storage": 10, "gpu": 1})
		f.p.set("waldur-two", map[string]float64{"cpu": 0.1, "ram": 0.5, "storage": 0, "gpu": 0})
		f.svc.Cycle(t.Context())
		sets := f.w.takeSets()
		if len(sets) != 2 {
			t.Fatalf("%d set_usage calls, want 2: %+v", len(sets), sets)
		}
		got := map[string]string{}
		for _, s := range sets {
			b, _ := json.Marshal(s.Usages)
			got[s.Resource] = string(b)
			if !s.Date.Equal(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("date %v, want the first of May", s.Date)
			}
		}
		want := map[string]string{
			"r1": `[{"type":"cpu","amount":"1.50"},{"type":"ram","amount":"2.25"},{"type":"storage","amount":"10.00"}]`,
			"r2": `[{"type":"cpu","amount":"0.10"},{"type":"ram","amount":"0.50"},{"type":"storage","amount":"0.00"}]`,
		}
		for r, w := range want {
			if got[r] != w {
				t.Errorf("%s usages %s, want %s", r, got[r], w)
			}
		}
		if f.p.calls != 1 {
			t.Errorf("%d backend usage calls, want 1 for the whole offering", f.p.calls)
		}
	})

	t.Run("unchanged usage is not re-sent", func(t *testing.T) {
		f := newFixture(t, midMay)
		f.p.set("waldur-one", map[string]float64{"cpu": 1, "ram": 2, "storage": 3})
		f.p.set("waldur-two", map[string]float64{"cpu": 1, "ram": 2, "storage": 3})
		f.svc.Cycle(t.Context())
		f.w.takeSets()
		f.svc.Cycle(t.Context())
		if sets := f.w.takeSets(); len(sets) != 0 {
			t.Errorf("second cycle sent %+v, want nothing", sets)
		}
		if got := testutil.ToFloat64(f.svc.reports.WithLabelValues("k8s", "unchanged")); got != 2 {
			t.Errorf("unchanged reports = %v, want 2", got)
		}
	})

	t.Run("a lower value is refused and counted", func(t *testing.T) {
		f := newFixture(t, midMay)
		f.p.set("waldur-one", map[string]float64{"cpu": 4, "ram": 8, "storage": 3})
		f.p.set("waldur-two", map[string]float64{"cpu": 1, "ram": 1, "storage": 1})
		f.svc.Cycle(t.Context())
		f.w.takeSets()
		f.p.set("waldur-one", map[string]float64{"cpu": 2, "ram": 16, "storage": 3})
		f.svc.Cycle(t.Context())
		sets := f.w.takeSets()
		if len(sets) != 1 || sets[0].Resource != "r1" || len(sets[0].Usages) != 1 || sets[0].Usages[0] != (waldur.ComponentUsage{Type: "ram", Amount: 16}) {
			t.Errorf("sets = %+v, want only r1's grown ram", sets)
		}
		if got := f.w.usages[key("r1", midMay)]["cpu"]; got != 4 {
			t.Errorf("Waldur's cpu = %v, want 4 kept", got)
		}
		if got := testutil.ToFloat64(f.svc.anomalies.WithLabelValues("k8s", "cpu")); got != 1 {
			t.Errorf("anomalies{cpu} = %v, want 1", got)
		}
	})

	t.Run("previous month reported in the first cycle of a month", func(t *testing.T) {
		f := newFixture(t, time.Date(2026, 6, 1, 0, 5, 0, 0, time.UTC))
		f.p.set("waldur-one", map[string]float64{"cpu": 1, "ram": 2, "storage": 3})
		f.w.resources = f.w.resources[:1]
		f.svc.Cycle(t.Context())
		var months []string
		for _, s := range f.w.takeSets() {
			months = append(months, s.Date.Format("2006-01-02"))
		}
		if strings.Join(months, ",") != "2026-05-01,2026-06-01" {
			t.Errorf("months reported %v, want May then June", months)
		}
	})

	t.Run("a failing resource does not stop the cycle and is retried by the next", func(t *testing.T) {
		f := newFixture(t, midMay)
		f.p.set("waldur-one", map[string]float64{"cpu": 1})
		f.p.set("waldur-two", map[string]float64{"cpu": 2})
		f.w.failFor = "r1"
		f.svc.Cycle(t.Context())
		if sets := f.w.takeSets(); len(sets) != 1 || sets[0].Resource != "r2" {
			t.Errorf("sets = %+v, want r2's", sets)
		}
		if got := testutil.ToFloat64(f.svc.cycles.WithLabelValues("k8s", "partial")); got != 1 {
			t.Errorf("partial cycles = %v, want 1", got)
		}
		f.w.failFor = ""
		f.svc.Cycle(t.Context())
		if sets := f.w.takeSets(); len(sets) != 1 || sets[0].Resource != "r1" {
			t.Errorf("retry sets = %+v, want r1's", sets)
		}
	})

	t.Run("a resource without a platform object is counted as missing", func(t *testing.T) {
		f := newFixture(t, midMay)
		f.p.set("waldur-two", map[string]float64{"cpu": 2})
		f.svc.Cycle(t.Context())
		if got := testutil.ToFloat64(f.svc.reports.WithLabelValues("k8s", "missing")); got != 1 {
			t.Errorf("missing = %v, want 1", got)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	tests := map[string]struct {
		cfg  Config
		want string
	}{
		"defaults are valid":         {cfg: Config{}},
		"reporting periods above 12": {cfg: Config{ReportingPeriods: 13}, want: "reporting_periods 13"},
		"negative period":            {cfg: Config{Period: -time.Second}, want: "period must be positive"},
		"offering without backend":   {cfg: Config{Offerings: []Offering{{Config: &config.Offering{}}}}, want: "offering 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.cfg.setDefaults()
			err := tc.cfg.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
