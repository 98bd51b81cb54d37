package orderflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
)

// Explained is what handling one order did when its clients run dry (see
// package dryrun): the lifecycle's decision, the saga it would start and
// the requests it would send other services on the bus. The platform
// calls are in the clients' recorder.
type Explained struct {
	// Type is the order's type; Outcome what the lifecycle would do with
	// it: done (the verb finished it), delegated (a saga finishes it),
	// skipped (nothing for the site to do, e.g. already done).
	Type, Outcome string
	// Saga is the saga the verb would start, nil when it finishes the
	// order itself.
	Saga *StartedSaga
	// Requests are the bus requests the verb would send (the membership
	// service's sync-resource after a direct create, for OKD).
	Requests []string
	// Err is why the order would fail (the run marks it erred when the
	// failure is terminal, and retries otherwise).
	Err error
}

// StartedSaga is a saga a verb would start.
type StartedSaga struct {
	Definition string
	ID         string
	Input      any
}

// Explain handles the order orderUUID of the offering offeringHex (in
// hex) once, exactly as an order event would (read, approve, dispatch by
// type, start the saga or settle): only the saga starter and the bus
// request to the membership service are replaced by recorders, and the
// offerings' clients are expected to run dry. When steps is not nil, the
// service's saga-step commands (create-object, settle, …) for the same
// offerings are handled on it, so the saga's steps can be run next.
func Explain(ctx context.Context, cfg Config, offeringHex, orderUUID string, steps *contract.Local) (Explained, error) {
	if err := cfg.Validate(); err != nil {
		return Explained{}, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rec := &explainRecorder{}
	f := explainFlow(flowConfig(cfg, rec.sync), rec)
	if steps != nil {
		s := &Service{Flow: f, cfg: cfg, backends: map[string]Offering{}}
		for _, o := range cfg.Offerings {
			s.backends[o.Config.OfferingUUIDHex()] = o
		}
		s.Handle(steps)
	}
	return explainOrder(ctx, f, rec, offeringHex, orderUUID)
}

// ExplainFlow is Explain for a lifecycle of another service (the
// cluster-provisioner's, whose verbs start its sagas): fc's offerings and
// verbs handle the order, and the saga it would start is recorded.
func ExplainFlow(ctx context.Context, fc FlowConfig, offeringHex, orderUUID string) (Explained, error) {
	if fc.Logger == nil {
		fc.Logger = slog.New(slog.DiscardHandler)
	}
	rec := &explainRecorder{}
	return explainOrder(ctx, explainFlow(fc, rec), rec, offeringHex, orderUUID)
}

func explainFlow(fc FlowConfig, rec *explainRecorder) *Flow {
	fc.Starter = rec
	fc.setDefaults()
	return newFlow(fc)
}

func explainOrder(ctx context.Context, f *Flow, rec *explainRecorder, offeringHex, orderUUID string) (Explained, error) {
	o, ok := f.offerings[offeringHex]
	if !ok {
		return Explained{}, fmt.Errorf("offering %s has no order_processing_backend here", offeringHex)
	}
	typ, outcome, err := f.process(ctx, o, orderUUID, f.log.With("offering", o.Name, "order", orderUUID))
	return Explained{Type: typ, Outcome: outcome, Saga: rec.saga, Requests: rec.requests, Err: err}, nil
}

// explainRecorder stands in for the saga coordinator and the membership
// service.
type explainRecorder struct {
	mu       sync.Mutex
	saga     *StartedSaga
	requests []string
}

func (r *explainRecorder) Start(_ context.Context, def, id string, input any) (saga.Saga, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.saga = &StartedSaga{Definition: def, ID: id, Input: input}
	return saga.Saga{}, nil
}

func (r *explainRecorder) EnsureStream(context.Context) error { return nil }

func (r *explainRecorder) sync(_ context.Context, req *sitebusv1.SyncResourceRequest, key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, fmt.Sprintf("%s to the membership service for resource %s (idempotency key %s)",
		contract.CmdSyncResource, req.GetResourceUuid(), key))
	return nil
}
