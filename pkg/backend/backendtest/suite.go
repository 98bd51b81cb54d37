package backendtest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Run runs the conformance suite against the backend h makes. Subtests
// run one after another, each on a fresh Target.
func Run(t *testing.T, h Harness) {
	if h.Resource == nil {
		h.Resource = DefaultResource
	}
	if h.InvalidSlugs == nil {
		h.InvalidSlugs = DefaultInvalidSlugs
	}
	s := suite{h: h}
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"create is idempotent", s.createIsIdempotent},
		{"delete is idempotent", s.deleteIsIdempotent},
		{"limits round-trip", s.limitsRoundTrip},
		{"pause zeroes and restore brings back the previous limits", s.pauseAndRestore},
		{"downscale then restore", s.downscaleAndRestore},
		{"limits set while paused come back on restore", s.limitsWhilePaused},
		{"restore of an active object changes nothing", s.restoreActive},
		{"only what we manage is touched", s.onlyManagedIsTouched},
		{"an invalid slug is refused and creates nothing", s.invalidSlug},
		{"negative limits are refused and create nothing", s.negativeLimits},
		{"a missing object is not found", s.missingIsNotFound},
		{"metadata and usage answer", s.metadataAndUsage},
		{"ping and diagnostics answer", s.pingAndDiagnostics},
	} {
		t.Run(c.name, c.fn)
	}
}

type suite struct{ h Harness }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// create makes the resource slug on a fresh target and returns its id.
func (s suite) create(t *testing.T, tg Target, slug string) (string, backend.Resource) {
	t.Helper()
	r := s.h.Resource(slug)
	c, err := tg.Backend.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", slug, err)
	}
	return c.BackendID, r
}

func (s suite) createIsIdempotent(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	r := s.h.Resource("idem")
	want, err := b.BackendID(r)
	if err != nil {
		t.Fatalf("BackendID: %v", err)
	}
	first, err := b.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("first Create: %v", err)
	}
	if s.h.PlatformIDs {
		// The name and the platform's id name one object.
		if ok, err := b.Exists(ctx(t), want); err != nil || !ok {
			t.Errorf("Exists(%s) after Create = %v, %v; want true", want, ok, err)
		}
		if first.BackendID == "" {
			t.Fatalf("first Create = %+v, want a platform id", first)
		}
		want = first.BackendID
	}
	if first.BackendID != want || first.Existed {
		t.Fatalf("first Create = %+v, want BackendID %q and not Existed", first, want)
	}
	if !maps.Equal(first.Limits, r.Limits) {
		t.Errorf("first Create applied limits %v, want %v", first.Limits, r.Limits)
	}
	second, err := b.Create(ctx(t), r)
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	if second.BackendID != want || !second.Existed {
		t.Fatalf("second Create = %+v, want BackendID %q and Existed", second, want)
	}
	if !maps.Equal(second.Limits, r.Limits) {
		t.Errorf("second Create reports limits %v, want %v", second.Limits, r.Limits)
	}
	if ok, err := b.Exists(ctx(t), want); err != nil || !ok {
		t.Errorf("Exists = %v, %v; want true", ok, err)
	}
	expectList(t, b, map[string]backend.Status{want: backend.StatusActive})
}

func (s suite) deleteIsIdempotent(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, _ := s.create(t, tg, "gone")
	for i := range 2 {
		if err := b.Delete(ctx(t), id); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	eventuallyAbsent(t, b, id)
	never, err := b.BackendID(s.h.Resource("never-created"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx(t), never); err != nil {
		t.Errorf("Delete of an object never created: %v", err)
	}
	expectList(t, b, nil)
}

func (s suite) limitsRoundTrip(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, r := s.create(t, tg, "limits")
	expectLimits(t, b, id, r.Limits)
	changed, err := b.SetLimits(ctx(t), id, NewLimits)
	if err != nil || !changed {
		t.Fatalf("SetLimits(new) = %v, %v; want changed", changed, err)
	}
	expectLimits(t, b, id, NewLimits)
	changed, err = b.SetLimits(ctx(t), id, NewLimits)
	if err != nil || changed {
		t.Fatalf("SetLimits(same) = %v, %v; want unchanged", changed, err)
	}
	expectLimits(t, b, id, NewLimits)
}

func (s suite) pauseAndRestore(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, r := s.create(t, tg, "pause")
	for i := range 2 { // the second pause must not save the zero quota
		if err := b.Pause(ctx(t), id); err != nil {
			t.Fatalf("Pause #%d: %v", i+1, err)
		}
	}
	got := limits(t, b, id)
	for k := range r.Limits {
		if got[k] != 0 {
			t.Errorf("paused limit %s = %v, want 0 (limits %v)", k, got[k], got)
		}
	}
	expectList(t, b, map[string]backend.Status{id: backend.StatusPaused})
	for i := range 2 {
		if err := b.Restore(ctx(t), id); err != nil {
			t.Fatalf("Restore #%d: %v", i+1, err)
		}
		expectLimits(t, b, id, r.Limits)
	}
	expectList(t, b, map[string]backend.Status{id: backend.StatusActive})
}

func (s suite) downscaleAndRestore(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, r := s.create(t, tg, "downscale")
	if err := b.Downscale(ctx(t), id); err != nil {
		t.Fatalf("Downscale: %v", err)
	}
	got := limits(t, b, id)
	for k, v := range r.Limits {
		if got[k] <= 0 || got[k] >= v {
			t.Errorf("downscaled limit %s = %v, want a minimal non-zero value below %v", k, got[k], v)
		}
	}
	expectList(t, b, map[string]backend.Status{id: backend.StatusDownscaled})
	// Pausing a downscaled object still restores to the limits before both.
	if err := b.Pause(ctx(t), id); err != nil {
		t.Fatalf("Pause after Downscale: %v", err)
	}
	expectList(t, b, map[string]backend.Status{id: backend.StatusPaused})
	if err := b.Restore(ctx(t), id); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	expectLimits(t, b, id, r.Limits)
	expectList(t, b, map[string]backend.Status{id: backend.StatusActive})
}

func (s suite) limitsWhilePaused(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, _ := s.create(t, tg, "paused-limits")
	if err := b.Pause(ctx(t), id); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	paused := limits(t, b, id)
	changed, err := b.SetLimits(ctx(t), id, NewLimits)
	if err != nil || !changed {
		t.Fatalf("SetLimits while paused = %v, %v; want changed", changed, err)
	}
	expectLimits(t, b, id, paused) // the reduced quota stays in force
	if changed, err := b.SetLimits(ctx(t), id, NewLimits); err != nil || changed {
		t.Fatalf("SetLimits(same) while paused = %v, %v; want unchanged", changed, err)
	}
	if err := b.Restore(ctx(t), id); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	expectLimits(t, b, id, NewLimits)
}

func (s suite) restoreActive(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, r := s.create(t, tg, "active")
	if err := b.Restore(ctx(t), id); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	expectLimits(t, b, id, r.Limits)
	expectList(t, b, map[string]backend.Status{id: backend.StatusActive})
}

func (s suite) onlyManagedIsTouched(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	r := s.h.Resource("foreign")
	id, err := b.BackendID(r)
	if err != nil {
		t.Fatal(err)
	}
	untouched := tg.Foreign(t, id)
	refused := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, backend.ErrNotManaged) || !fault.IsTerminal(err) {
			t.Errorf("%s on a foreign object: err = %v, want terminal ErrNotManaged", op, err)
		}
	}
	_, err = b.Create(ctx(t), r)
	refused("Create", err)
	_, err = b.SetLimits(ctx(t), id, NewLimits)
	refused("SetLimits", err)
	refused("Pause", b.Pause(ctx(t), id))
	refused("Downscale", b.Downscale(ctx(t), id))
	refused("Restore", b.Restore(ctx(t), id))
	refused("Delete", b.Delete(ctx(t), id))
	untouched(t)
	if ok, err := b.Exists(ctx(t), id); err != nil || !ok {
		t.Errorf("Exists(foreign) = %v, %v; want true", ok, err)
	}
	expectList(t, b, nil)
}

func (s suite) invalidSlug(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	for _, slug := range s.h.InvalidSlugs {
		r := s.h.Resource(slug)
		if id, err := b.BackendID(r); !errors.Is(err, backend.ErrInvalid) || !fault.IsTerminal(err) {
			t.Errorf("BackendID(slug %q) = %q, %v; want terminal ErrInvalid", slug, id, err)
		}
		if c, err := b.Create(ctx(t), r); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("Create(slug %q) = %+v, %v; want ErrInvalid", slug, c, err)
		}
	}
	expectList(t, b, nil)
}

func (s suite) negativeLimits(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	r := s.h.Resource("negative")
	r.Limits = map[string]float64{"cpu": -1, "ram": 4, "storage": 10}
	if _, err := b.Create(ctx(t), r); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("Create with a negative limit: err = %v, want ErrInvalid", err)
	}
	expectList(t, b, nil)
	id, _ := s.create(t, tg, "negative-later")
	if _, err := b.SetLimits(ctx(t), id, map[string]float64{"cpu": -1}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("SetLimits with a negative limit: err = %v, want ErrInvalid", err)
	}
	expectLimits(t, b, id, BaseLimits)
}

func (s suite) missingIsNotFound(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, err := b.BackendID(s.h.Resource("missing"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx(t), id); err != nil || ok {
		t.Errorf("Exists = %v, %v; want false", ok, err)
	}
	notFound := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("%s of a missing object: err = %v, want ErrNotFound", op, err)
		}
	}
	_, err = b.Limits(ctx(t), id)
	notFound("Limits", err)
	_, err = b.SetLimits(ctx(t), id, NewLimits)
	notFound("SetLimits", err)
	notFound("Pause", b.Pause(ctx(t), id))
	notFound("Downscale", b.Downscale(ctx(t), id))
	notFound("Restore", b.Restore(ctx(t), id))
	_, err = b.Metadata(ctx(t), id)
	notFound("Metadata", err)
	expectList(t, b, nil)
}

func (s suite) metadataAndUsage(t *testing.T) {
	tg := s.h.New(t)
	b := tg.Backend
	id, _ := s.create(t, tg, "meta")
	md, err := b.Metadata(ctx(t), id)
	if err != nil || len(md) == 0 {
		t.Errorf("Metadata = %v, %v; want some", md, err)
	}
	if _, err := b.Usage(ctx(t), id); err != nil {
		t.Errorf("Usage: %v", err)
	}
}

func (s suite) pingAndDiagnostics(t *testing.T) {
	b := s.h.New(t).Backend
	if b.Type() == "" {
		t.Error("Type is empty")
	}
	if err := b.Ping(ctx(t)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	d, err := b.Diagnostics(ctx(t))
	if err != nil || len(d) == 0 {
		t.Errorf("Diagnostics = %v, %v; want some", d, err)
	}
}

func limits(t *testing.T, b backend.Backend, id string) map[string]float64 {
	t.Helper()
	got, err := b.Limits(ctx(t), id)
	if err != nil {
		t.Fatalf("Limits(%s): %v", id, err)
	}
	return got
}

func expectLimits(t *testing.T, b backend.Backend, id string, want map[string]float64) {
	t.Helper()
	if got := limits(t, b, id); !maps.Equal(got, want) {
		t.Errorf("Limits(%s) = %v, want %v", id, got, want)
	}
}

// expectList checks that List has exactly want (id → status).
func expectList(t *testing.T, b backend.Backend, want map[string]backend.Status) {
	t.Helper()
	objs, err := b.List(ctx(t))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got := make(map[string]backend.Status, len(objs))
	for _, o := range objs {
		if _, dup := got[o.BackendID]; dup {
			t.Errorf("List has %s twice", o.BackendID)
		}
		got[o.BackendID] = o.Status
	}
	if !maps.Equal(got, want) {
		t.Errorf("List = %v, want %v", sortedObjects(objs), want)
	}
}

func sortedObjects(objs []backend.Object) []backend.Object {
	objs = slices.Clone(objs)
	slices.SortFunc(objs, func(a, b backend.Object) int {
		switch {
		case a.BackendID < b.BackendID:
			return -1
		case a.BackendID > b.BackendID:
			return 1
		}
		return 0
	})
	return objs
}

// eventuallyAbsent waits for a deleted object to go: platforms may
// finalize deletions asynchronously.
func eventuallyAbsent(t *testing.T, b backend.Backend, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := b.Exists(ctx(t), id)
		if err == nil && !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists 30s after Delete (err %v)", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
