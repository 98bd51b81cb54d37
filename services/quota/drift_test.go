package quota

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// TestDriftFindsAndRepairsQuota: a quota edited by hand and a status
// flipped by hand are found and put back; an object sitebus does not list
// (not its own) is neither.
func TestDriftFindsAndRepairsQuota(t *testing.T) {
	tests := map[string]struct {
		res      waldur.Resource
		limits   map[string]float64 // on the object
		status   backend.Status
		want     []contract.DriftFinding
		after    map[string]float64
		afterSt  backend.Status
		repaired string // kind counted
	}{
		"a quota edited by hand": {
			res:    waldur.Resource{Limits: map[string]float64{"cpu": 4, "ram": 8}},
			limits: map[string]float64{"cpu": 40, "ram": 8},
			want:   []contract.DriftFinding{{Kind: contract.DriftLimits, Want: "cpu=4", Have: "cpu=40"}},
			after:  map[string]float64{"cpu": 4, "ram": 8}, afterSt: backend.StatusActive, repaired: "limits",
		},
		"a paused resource whose quota was restored by hand": {
			res:    waldur.Resource{Paused: true, Limits: map[string]float64{"cpu": 4}},
			limits: map[string]float64{"cpu": 4},
			want:   []contract.DriftFinding{{Kind: contract.DriftFlags, Want: "paused", Have: "active"}},
			after:  map[string]float64{"cpu": 4}, afterSt: backend.StatusPaused, repaired: "pause",
		},
		"a paused resource's reduced quota is not limits drift": {
			res: waldur.Resource{Paused: true, Limits: map[string]float64{"cpu": 4}}, limits: map[string]float64{"cpu": 0}, status: backend.StatusPaused,
			after: map[string]float64{"cpu": 0}, afterSt: backend.StatusPaused,
		},
		"a component the quota does not hold is not drift": {
			res: waldur.Resource{Limits: map[string]float64{"cpu": 4, "gpu_hours": 10}}, limits: map[string]float64{"cpu": 4},
			after: map[string]float64{"cpu": 4}, afterSt: backend.StatusActive,
		},
		"equal limits are no drift": {
			res: waldur.Resource{Limits: map[string]float64{"cpu": 4}}, limits: map[string]float64{"cpu": 4},
			after: map[string]float64{"cpu": 4}, afterSt: backend.StatusActive,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := tc.res
			res.UUID, res.BackendID, res.State = resUUID, "ns-alpha", waldur.ResourceStateOK
			s, _, b := newTest(t, &res)
			b.limits["ns-alpha"] = tc.limits
			// An object of the same platform that sitebus does not list.
			unmanaged := &waldur.Resource{UUID: "0c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f", BackendID: "ns-foreign", State: waldur.ResourceStateOK, Paused: true, Limits: map[string]float64{"cpu": 1}}
			s.offerings[offeringHex].Waldur.(*fakeWaldur).resources[unmanaged.UUID] = unmanaged
			if tc.status != "" {
				b.status["ns-alpha"] = tc.status
			}
			d, err := s.DriftCheck(offeringHex)
			if err != nil {
				t.Fatal(err)
			}
			found, err := d.Find(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				tc.want[i].Resource, tc.want[i].Object = resUUID, "ns-alpha"
			}
			if fmt.Sprint(found) != fmt.Sprint(tc.want) {
				t.Fatalf("found %+v, want %+v", found, tc.want)
			}
			for _, f := range found {
				if err := d.Repair(t.Context(), f); err != nil {
					t.Fatal(err)
				}
			}
			if fmt.Sprint(b.limits["ns-alpha"]) != fmt.Sprint(tc.after) || cmpStatus(b.status["ns-alpha"]) != tc.afterSt {
				t.Errorf("after repair: limits %v status %q, want %v %q", b.limits["ns-alpha"], b.status["ns-alpha"], tc.after, tc.afterSt)
			}
			if tc.repaired != "" {
				if n := testutil.ToFloat64(s.applied.WithLabelValues(tc.repaired, "repaired")); n != 1 {
					t.Errorf("sitebus_quota_changes_total{kind=%q,outcome=repaired} = %v, want 1", tc.repaired, n)
				}
			}
			if again, _ := d.Find(t.Context()); len(again) != 0 {
				t.Errorf("after repair found %+v", again)
			}
		})
	}
}

func cmpStatus(s backend.Status) backend.Status {
	if s == "" {
		return backend.StatusActive
	}
	return s
}

// countingBackend counts the platform calls the drift check makes.
type countingBackend struct {
	*fakeBackend
	calls int
	// listsLimits: List carries each object's limits, as ManagedNamespace's
	// does.
	listsLimits bool
}

func (b *countingBackend) List(ctx context.Context) ([]backend.Object, error) {
	b.calls++
	objs, err := b.fakeBackend.List(ctx)
	for i := range objs {
		if b.listsLimits {
			objs[i].Limits = b.limits[objs[i].BackendID]
		}
	}
	return objs, err
}

func (b *countingBackend) Limits(ctx context.Context, id string) (map[string]float64, error) {
	b.calls++
	return b.fakeBackend.Limits(ctx, id)
}

// BenchmarkDriftFind1000 measures one comparison of 1,000 resources
// against fakes and reports the platform calls it takes (Waldur: one
// listing), with a listing that carries the limits (ManagedNamespace) and
// with one that does not (one read per object).
func BenchmarkDriftFind1000(b *testing.B) {
	for _, lists := range []bool{true, false} {
		b.Run(map[bool]string{true: "listing-carries-limits", false: "read-per-object"}[lists], func(b *testing.B) { benchDrift(b, lists) })
	}
}

func benchDrift(b *testing.B, listsLimits bool) {
	w := &fakeWaldur{resources: map[string]*waldur.Resource{}}
	fb := &fakeBackend{limits: map[string]map[string]float64{}, status: map[string]backend.Status{}}
	for i := range 1000 {
		id := fmt.Sprintf("ns-%04d", i)
		w.resources[id] = &waldur.Resource{UUID: id, BackendID: id, State: waldur.ResourceStateOK, Limits: map[string]float64{"cpu": 4, "ram": 8}}
		fb.limits[id] = map[string]float64{"cpu": 4, "ram": 8}
	}
	cb := &countingBackend{fakeBackend: fb, listsLimits: listsLimits}
	l, err := NewLimits([]Offering{{Config: &config.Offering{Name: "bench", WaldurOfferingUUID: offeringUUID}, Waldur: w, Backend: cb}},
		slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	d, _ := l.DriftCheck(offeringHex)
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Find(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cb.calls)/float64(b.N), "platform-calls/pass")
}
