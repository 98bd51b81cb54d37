package quota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

const (
	offeringUUID = "5a1f2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
	offeringHex  = "5a1f2c3d4e5f60718293a4b5c6d7e8f9"
	resUUID      = "7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
)

type fakeWaldur struct {
	resources map[string]*waldur.Resource
	fail      error
}

func (w *fakeWaldur) GetResource(_ context.Context, uuid string, _ ...string) (*waldur.Resource, error) {
	if w.fail != nil {
		return nil, w.fail
	}
	r, ok := w.resources[uuid]
	if !ok {
		return nil, fault.Errorf(fault.NotFound, "resource %s: 404", uuid)
	}
	c := *r
	return &c, nil
}

func (w *fakeWaldur) ListProviderResources(context.Context, waldur.ResourceFilter) ([]waldur.Resource, error) {
	var out []waldur.Resource
	for _, r := range w.resources {
		out = append(out, *r)
	}
	return out, w.fail
}

// fakeBackend keeps each object's limits and quota status. Methods quota
// does not use are left to the embedded nil interface.
type fakeBackend struct {
	backend.Backend
	limits map[string]map[string]float64
	status map[string]backend.Status
	fail   error
	// applied, when set, receives each status set.
	applied chan backend.Status
}

func (b *fakeBackend) Type() string { return "fake" }

func (b *fakeBackend) SetLimits(_ context.Context, id string, l map[string]float64) (bool, error) {
	if b.fail != nil {
		return false, b.fail
	}
	if _, ok := b.limits[id]; !ok {
		return false, fmt.Errorf("object %s: %w", id, backend.ErrNotFound)
	}
	changed := !maps.Equal(b.limits[id], l)
	b.limits[id] = maps.Clone(l)
	return changed, nil
}

func (b *fakeBackend) set(id string, st backend.Status) error {
	if b.fail != nil {
		return b.fail
	}
	if _, ok := b.limits[id]; !ok {
		return fmt.Errorf("object %s: %w", id, backend.ErrNotFound)
	}
	b.status[id] = st
	if b.applied != nil {
		b.applied <- st
	}
	return nil
}

func (b *fakeBackend) Pause(_ context.Context, id string) error {
	return b.set(id, backend.StatusPaused)
}

func (b *fakeBackend) Downscale(_ context.Context, id string) error {
	return b.set(id, backend.StatusDownscaled)
}

func (b *fakeBackend) Restore(_ context.Context, id string) error {
	return b.set(id, backend.StatusActive)
}

// List lists every object with its status (active when never set).
func (b *fakeBackend) List(context.Context) ([]backend.Object, error) {
	var out []backend.Object
	for id := range b.limits {
		out = append(out, backend.Object{BackendID: id, Status: cmp.Or(b.status[id], backend.StatusActive)})
	}
	return out, b.fail
}

func (b *fakeBackend) Limits(_ context.Context, id string) (map[string]float64, error) {
	l, ok := b.limits[id]
	if !ok {
		return nil, fmt.Errorf("object %s: %w", id, backend.ErrNotFound)
	}
	return maps.Clone(l), nil
}

func newTest(t *testing.T, res *waldur.Resource) (*Service, *fakeWaldur, *fakeBackend) {
	t.Helper()
	w := &fakeWaldur{resources: map[string]*waldur.Resource{}}
	if res != nil {
		w.resources[res.UUID] = res
	}
	b := &fakeBackend{limits: map[string]map[string]float64{"ns-alpha": {"cpu": 1}}, status: map[string]backend.Status{}}
	l, err := NewLimits([]Offering{{Config: &config.Offering{Name: "test", WaldurOfferingUUID: offeringUUID}, Waldur: w, Backend: b}},
		slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Limits: l, tracer: noop.NewTracerProvider().Tracer("test")}, w, b
}

// TestUpdateOrdersSetLimits: Limits.Apply is the Update verb of the order
// lifecycle; the lifecycle settles the order from its error.
func TestUpdateOrdersSetLimits(t *testing.T) {
	tests := map[string]struct {
		res        *waldur.Resource
		offering   string
		waldurDown bool
		platform   error
		wantLimits map[string]float64
		wantErr    func(error) bool
	}{
		"the order's limits reach the object": {
			res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha"}, wantLimits: map[string]float64{"cpu": 4},
			wantErr: func(err error) bool { return err == nil },
		},
		"a resource without an object can never get limits: invalid, erred at once": {
			res: &waldur.Resource{UUID: resUUID, Name: "alpha"}, wantLimits: map[string]float64{"cpu": 1},
			wantErr: func(err error) bool { return errors.Is(err, fault.Invalid) && fault.IsTerminal(err) },
		},
		"an offering not configured here: final": {
			res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha"}, offering: "ffff", wantLimits: map[string]float64{"cpu": 1},
			wantErr: fault.IsTerminal,
		},
		"Waldur away: retried": {
			res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha"}, waldurDown: true, wantLimits: map[string]float64{"cpu": 1},
			wantErr: func(err error) bool { return err != nil && !fault.IsTerminal(err) },
		},
		"the platform away: retried": {
			res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha"}, platform: fault.Errorf(fault.Unavailable, "503"), wantLimits: map[string]float64{"cpu": 1},
			wantErr: func(err error) bool { return err != nil && !fault.IsTerminal(err) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, w, b := newTest(t, tc.res)
			if tc.waldurDown {
				w.fail = fault.Errorf(fault.Unavailable, "502")
			}
			b.fail = tc.platform
			offering := offeringHex
			if tc.offering != "" {
				offering = tc.offering
			}
			err := s.Apply(context.Background(), offering, resUUID, map[string]float64{"cpu": 4})
			if !tc.wantErr(err) {
				t.Errorf("Apply = %v", err)
			}
			if !maps.Equal(b.limits["ns-alpha"], tc.wantLimits) {
				t.Errorf("object limits %v, want %v", b.limits["ns-alpha"], tc.wantLimits)
			}
		})
	}
}

// TestResourceFlagsSetTheQuota: paused → zero quota, downscaled → minimal,
// neither → the limits from before, read from Waldur on every event.
func TestResourceFlagsSetTheQuota(t *testing.T) {
	tests := map[string]struct {
		res     *waldur.Resource
		want    backend.Status
		wantErr func(error) bool
	}{
		"paused": {res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Paused: true},
			want: backend.StatusPaused},
		"downscaled": {res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Downscaled: true},
			want: backend.StatusDownscaled},
		"neither: restored": {res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateErred},
			want: backend.StatusActive},
		"a resource being created is left to the order":    {res: &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: "Creating", Paused: true}},
		"a resource without an object is left alone":       {res: &waldur.Resource{UUID: resUUID, State: waldur.ResourceStateOK, Paused: true}},
		"an object gone from the platform is not an error": {res: &waldur.Resource{UUID: resUUID, BackendID: "ns-gone", State: waldur.ResourceStateOK, Paused: true}},
		"a resource Waldur no longer has is not an error":  {res: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _, b := newTest(t, tc.res)
			ev := &sitebusv1.WaldurEvent{OfferingUuid: offeringHex, Body: []byte(`{"resource_uuid": "` + resUUID + `"}`)}
			if err := s.handleResourceEvent(context.Background(), ev); err != nil {
				t.Fatalf("handleResourceEvent = %v", err)
			}
			if got := b.status["ns-alpha"]; got != tc.want {
				t.Errorf("status %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResourceEventErrors(t *testing.T) {
	res := &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Paused: true}
	tests := map[string]struct {
		offering, body string
		waldur, plat   error
		terminal       bool
	}{
		"an offering not configured here is parked":    {offering: "ffff", body: `{"resource_uuid": "` + resUUID + `"}`, terminal: true},
		"a body without a resource uuid is parked":     {offering: offeringHex, body: `{}`, terminal: true},
		"Waldur away is retried":                       {offering: offeringHex, body: `{"resource_uuid": "` + resUUID + `"}`, waldur: errors.New("connection refused")},
		"the platform away is retried":                 {offering: offeringHex, body: `{"resource_uuid": "` + resUUID + `"}`, plat: fault.Errorf(fault.Unavailable, "503")},
		"a platform that refuses the object is parked": {offering: offeringHex, body: `{"resource_uuid": "` + resUUID + `"}`, plat: fault.Errorf(fault.NotManaged, "not ours"), terminal: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, w, b := newTest(t, res)
			w.fail, b.fail = tc.waldur, tc.plat
			err := s.handleResourceEvent(context.Background(), &sitebusv1.WaldurEvent{OfferingUuid: tc.offering, Body: []byte(tc.body)})
			if err == nil || fault.IsTerminal(err) != tc.terminal {
				t.Errorf("handleResourceEvent = %v, want an error, terminal: %v", err, tc.terminal)
			}
		})
	}
}

// TestPeriodicReconcileAppliesEveryResourcesFlags: one pass over the
// offering's resources; a failing one does not stop the others.
func TestPeriodicReconcileAppliesEveryResourcesFlags(t *testing.T) {
	s, w, b := newTest(t, &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Downscaled: true})
	w.resources["other"] = &waldur.Resource{UUID: "other", BackendID: "ns-gone", State: waldur.ResourceStateOK, Paused: true}
	for _, o := range s.offerings {
		s.syncOffering(context.Background(), o)
	}
	if b.status["ns-alpha"] != backend.StatusDownscaled {
		t.Errorf("status %q, want downscaled", b.status["ns-alpha"])
	}
}

// TestQuotaServiceOnTheBus runs the service on an embedded NATS server: a
// resource event on the events stream applies the resource's flags.
func TestQuotaServiceOnTheBus(t *testing.T) {
	b := bustest.New(t, bus.Config{})
	w := &fakeWaldur{resources: map[string]*waldur.Resource{resUUID: {UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Paused: true}}}
	fb := &fakeBackend{limits: map[string]map[string]float64{"ns-alpha": {"cpu": 1}}, status: map[string]backend.Status{}, applied: make(chan backend.Status, 1)}
	s, err := New(b, Config{Offerings: []Offering{{Config: &config.Offering{Name: "test", WaldurOfferingUUID: offeringUUID}, Waldur: w, Backend: fb}},
		Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	}()
	subject, err := bus.EventSubject(offeringHex, events.Resource, events.ResourceKey(resUUID))
	if err != nil {
		t.Fatal(err)
	}
	ev := &sitebusv1.WaldurEvent{OfferingUuid: offeringHex, Body: []byte(`{"resource_uuid": "` + resUUID + `"}`)}
	if _, err := b.Publish(t.Context(), subject, ev); err != nil {
		t.Fatal(err)
	}
	if got := <-fb.applied; got != backend.StatusPaused {
		t.Errorf("status %q, want paused", got)
	}
}

// TestPlanFlagsIsTheDryRunOfTheFlagPass: the plan lists what the pass
// would change (a status that differs, with the limits it takes away),
// and the pass, run after it, makes exactly those changes.
func TestPlanFlagsIsTheDryRunOfTheFlagPass(t *testing.T) {
	tests := map[string]struct {
		res        waldur.Resource
		statusNow  backend.Status
		wantAction string
		wantFrom   backend.Status
	}{
		"a paused resource whose object is active drops to zero quota": {
			res:        waldur.Resource{UUID: resUUID, Name: "alpha", BackendID: "ns-alpha", State: waldur.ResourceStateOK, Paused: true},
			wantAction: "pause", wantFrom: backend.StatusActive,
		},
		"a downscaled resource whose object is active is downscaled": {
			res:        waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateErred, Downscaled: true},
			wantAction: "downscale", wantFrom: backend.StatusActive,
		},
		"an unflagged resource whose object is paused is restored": {
			res: waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK}, statusNow: backend.StatusPaused,
			wantAction: "restore", wantFrom: backend.StatusPaused,
		},
		"a paused resource whose object is paused is no change": {
			res: waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Paused: true}, statusNow: backend.StatusPaused,
		},
		"an unflagged resource whose object is active is no change": {
			res: waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK},
		},
		"a resource being created is left to the order": {
			res: waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: "Creating", Paused: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := tc.res
			s, _, b := newTest(t, &res)
			if tc.statusNow != "" {
				b.status["ns-alpha"] = tc.statusNow
			}
			plan, err := s.PlanFlags(context.Background(), offeringHex)
			if err != nil {
				t.Fatal(err)
			}
			if b.status["ns-alpha"] != tc.statusNow {
				t.Fatalf("planning changed the status to %q", b.status["ns-alpha"])
			}
			if tc.wantAction == "" {
				if len(plan) != 0 {
					t.Errorf("plan = %+v, want no change", plan)
				}
				return
			}
			if len(plan) != 1 || plan[0].Action != tc.wantAction || plan[0].From != tc.wantFrom || plan[0].BackendID != "ns-alpha" ||
				plan[0].Limits["cpu"] != 1 {
				t.Fatalf("plan = %+v, want %s from %s with the limits before", plan, tc.wantAction, tc.wantFrom)
			}
			for _, o := range s.offerings {
				s.syncOffering(context.Background(), o)
			}
			if got := cmp.Or(b.status["ns-alpha"], backend.StatusActive); got != plan[0].To {
				t.Errorf("the pass set %q, the plan said %q", got, plan[0].To)
			}
		})
	}
}

func TestPlanFlagsErrors(t *testing.T) {
	res := &waldur.Resource{UUID: resUUID, BackendID: "ns-alpha", State: waldur.ResourceStateOK, Paused: true}
	tests := map[string]struct {
		offering     string
		waldur, plat error
	}{
		"an offering not configured here": {offering: "ffff"},
		"Waldur away":                     {offering: offeringHex, waldur: errors.New("connection refused")},
		"the platform away":               {offering: offeringHex, plat: fault.Errorf(fault.Unavailable, "503")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, w, b := newTest(t, res)
			w.fail, b.fail = tc.waldur, tc.plat
			if _, err := s.PlanFlags(context.Background(), tc.offering); err == nil {
				t.Error("PlanFlags = nil error, want one")
			}
		})
	}
}
