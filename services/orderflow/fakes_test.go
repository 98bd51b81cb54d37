package orderflow

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

const (
	offeringHex = "5a1f2c3d4e5f60718293a4b5c6d7e8f9"
	orderUUID   = "0b6f1a7e-3c2d-4e5f-8a9b-1c2d3e4f5a6b"
	resUUID     = "7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
)

// fakeWaldur keeps one site's orders and resources as Waldur would, and
// fails a call when told to.
type fakeWaldur struct {
	mu        sync.Mutex
	orders    map[string]*waldur.Order
	resources map[string]*waldur.Resource
	// fail makes a call fail: by method name.
	fail map[string]error
	// approvedBy is the state another actor moved the order to when the
	// approval answers 409.
	approvedBy string
	erred      string // the message of set_state_erred
	calls      map[string]int
	limitsSet  map[string]int64
	metadata   map[string]any
	// settled, when set, receives each state the order is set to.
	settled chan string
}

func (w *fakeWaldur) notify(state string) {
	if w.settled != nil {
		w.settled <- state
	}
}

func newFakeWaldur(o *waldur.Order, r *waldur.Resource) *fakeWaldur {
	w := &fakeWaldur{orders: map[string]*waldur.Order{}, resources: map[string]*waldur.Resource{}, fail: map[string]error{}, calls: map[string]int{}}
	if o != nil {
		w.orders[o.UUID] = o
	}
	if r != nil {
		w.resources[r.UUID] = r
	}
	return w
}

func (w *fakeWaldur) call(name string) error {
	w.calls[name]++
	return w.fail[name]
}

func (w *fakeWaldur) state(uuid string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.orders[uuid]; ok {
		return o.State
	}
	return ""
}

func (w *fakeWaldur) GetOrder(_ context.Context, uuid string, _ ...string) (*waldur.Order, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("GetOrder"); err != nil {
		return nil, err
	}
	o, ok := w.orders[uuid]
	if !ok {
		return nil, fault.Errorf(fault.NotFound, "order %s: 404", uuid)
	}
	c := *o
	return &c, nil
}

func (w *fakeWaldur) ApproveOrderByProvider(_ context.Context, uuid string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("Approve"); err != nil {
		if w.approvedBy != "" {
			w.orders[uuid].State = w.approvedBy
		}
		return err
	}
	w.orders[uuid].State = waldur.OrderStateExecuting
	return nil
}

func (w *fakeWaldur) SetOrderStateDone(_ context.Context, uuid string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("Done"); err != nil {
		return err
	}
	w.orders[uuid].State = waldur.OrderStateDone
	w.notify(waldur.OrderStateDone)
	return nil
}

func (w *fakeWaldur) SetOrderStateErred(_ context.Context, uuid, msg, _ string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("Erred"); err != nil {
		return err
	}
	w.orders[uuid].State, w.erred = waldur.OrderStateErred, msg
	w.notify(waldur.OrderStateErred)
	return nil
}

func (w *fakeWaldur) GetResource(_ context.Context, uuid string, _ ...string) (*waldur.Resource, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("GetResource"); err != nil {
		return nil, err
	}
	r, ok := w.resources[uuid]
	if !ok {
		return nil, fault.Errorf(fault.NotFound, "resource %s: 404", uuid)
	}
	c := *r
	return &c, nil
}

func (w *fakeWaldur) SetResourceBackendID(_ context.Context, uuid, id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.call("SetBackendID"); err != nil {
		return err
	}
	w.resources[uuid].BackendID = id
	return nil
}

func (w *fakeWaldur) SetResourceLimits(_ context.Context, _ string, limits map[string]int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limitsSet = maps.Clone(limits)
	return w.call("SetLimits")
}

func (w *fakeWaldur) SetResourceBackendMetadata(_ context.Context, _ string, md map[string]any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.metadata = md
	return w.call("SetMetadata")
}

// fakeBackend is a platform with one kind of object, named by slug.
// Methods the lifecycle does not use are left to the embedded nil
// interface (calling one panics: the test then names what it missed).
type fakeBackend struct {
	backend.Backend
	mu      sync.Mutex
	objects map[string]map[string]float64
	fail    map[string]error
	created []backend.Resource
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{objects: map[string]map[string]float64{}, fail: map[string]error{}}
}

func (b *fakeBackend) Type() string { return "fake" }

func (b *fakeBackend) BackendID(r backend.Resource) (string, error) {
	if r.Slug == "" || r.Slug == "Bad Name" {
		return "", fault.Errorf(fault.Invalid, "name %q is not a DNS label", r.Slug)
	}
	return "ns-" + r.Slug, nil
}

func (b *fakeBackend) Create(_ context.Context, r backend.Resource) (backend.Created, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail["Create"]; err != nil {
		return backend.Created{}, err
	}
	id, err := b.BackendID(r)
	if err != nil {
		return backend.Created{}, err
	}
	b.created = append(b.created, r)
	_, existed := b.objects[id]
	b.objects[id] = maps.Clone(r.Limits)
	return backend.Created{BackendID: id, Limits: r.Limits, Metadata: map[string]any{"namespace": id}, Existed: existed}, nil
}

func (b *fakeBackend) Exists(_ context.Context, id string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.objects[id]
	return ok, b.fail["Exists"]
}

func (b *fakeBackend) Delete(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail["Delete"]; err != nil {
		return err
	}
	delete(b.objects, id)
	return nil
}

func (b *fakeBackend) exists(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.objects[id]
	return ok
}

// fakeStarter records the sagas the lifecycle starts.
type fakeStarter struct {
	mu      sync.Mutex
	started []saga.Saga
	inputs  []any
	fail    error
}

func (s *fakeStarter) Start(_ context.Context, def, id string, input any) (saga.Saga, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return saga.Saga{}, s.fail
	}
	sg := saga.Saga{ID: id, Definition: def, Status: saga.StatusRunning}
	s.started = append(s.started, sg)
	s.inputs = append(s.inputs, input)
	return sg, nil
}

func (s *fakeStarter) EnsureStream(context.Context) error { return nil }

// fakeSync is the membership service's sync-resource.
type fakeSync struct {
	err   error
	calls []*sitebusv1.SyncResourceRequest
	keys  []string
}

func (f *fakeSync) sync(_ context.Context, req *sitebusv1.SyncResourceRequest, key string) error {
	f.calls = append(f.calls, req)
	f.keys = append(f.keys, key)
	return f.err
}

// testFlow is a Flow over one offering with handler h, without a bus.
func testFlow(t *testing.T, w Waldur, h Handler, starter SagaStarter) *Flow {
	t.Helper()
	cfg := FlowConfig{Name: "order", Offerings: []FlowOffering{{UUID: offeringHex, Name: "test", Waldur: w, Handler: h}},
		Starter: starter, Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return newFlow(cfg)
}

func order(typ, state string) *waldur.Order {
	return &waldur.Order{UUID: orderUUID, Type: typ, State: state, MarketplaceResourceUUID: resUUID}
}

func resource(slug string) *waldur.Resource {
	return &waldur.Resource{UUID: resUUID, Name: "Res " + slug, Slug: slug, ProjectSlug: "proj", CustomerSlug: "cust",
		Limits: map[string]float64{"cpu": 1}}
}

func event(state string) *sitebusv1.WaldurEvent {
	return &sitebusv1.WaldurEvent{OfferingUuid: offeringHex,
		Body: fmt.Appendf(nil, `{"order_uuid": %q, "order_state": %q}`, orderUUID, state)}
}
