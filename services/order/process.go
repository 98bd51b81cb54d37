package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/failpoint"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keylock"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/sagas"
)

// processor handles one order event.
type processor struct {
	svc       *Service
	o         Offering
	orderUUID string
	log       *slog.Logger
}

const (
	outcomeDone      = "done"
	outcomeSkipped   = "skipped"
	outcomeDelegated = "delegated"
)

func (p *processor) process(ctx context.Context) (typ, outcome string, err error) {
	w := p.o.Waldur
	order, err := w.GetOrder(ctx, p.orderUUID)
	if waldur.IsNotFound(err) {
		p.log.Warn("order event for an order Waldur does not know; skipped")
		return "unknown", outcomeSkipped, nil
	}
	if err != nil {
		return "unknown", "", fmt.Errorf("get order: %w", err)
	}
	typ = order.Type
	if order.State == waldur.OrderStatePendingProvider {
		// The Python agent's default decision is to accept; so is ours.
		err := w.ApproveOrderByProvider(ctx, p.orderUUID)
		switch {
		case err == nil:
			// Approval moves the order to executing: no need to ask.
			order.State = waldur.OrderStateExecuting
		case waldur.IsConflict(err):
			// Someone else decided first: see what they decided.
			if order, err = w.GetOrder(ctx, p.orderUUID); err != nil {
				return typ, "", fmt.Errorf("get order after approval: %w", err)
			}
		default:
			return typ, "", fmt.Errorf("approve order: %w", err)
		}
	}
	if order.State != waldur.OrderStateExecuting {
		p.log.Debug("order needs nothing from the site", "state", order.State)
		return typ, outcomeSkipped, nil
	}
	switch {
	case p.o.Groups != nil && (order.Type == waldur.OrderTypeCreate || order.Type == waldur.OrderTypeRestore):
		return typ, outcomeDelegated, p.startCreateSaga(ctx, order)
	case p.o.Groups != nil && order.Type == waldur.OrderTypeTerminate:
		return typ, outcomeDelegated, p.startTerminateSaga(ctx, order)
	case p.o.ProjectGroups != nil && (order.Type == waldur.OrderTypeCreate || order.Type == waldur.OrderTypeRestore):
		return typ, outcomeDelegated, p.startRancherCreateSaga(ctx, order)
	case p.o.ProjectGroups != nil && order.Type == waldur.OrderTypeTerminate:
		return typ, outcomeDelegated, p.startRancherTerminateSaga(ctx, order)
	}
	switch order.Type {
	case waldur.OrderTypeCreate, waldur.OrderTypeRestore:
		err = p.holdingResource(ctx, order, p.create)
		if err == nil && p.o.SyncTeam {
			err = p.syncTeam(ctx, order)
		}
	case waldur.OrderTypeTerminate:
		err = p.holdingResource(ctx, order, p.terminate)
	case waldur.OrderTypeUpdate:
		return typ, outcomeDelegated, p.delegateUpdate(ctx, order)
	default:
		err = fault.Errorf(fault.Invalid, "order type %q is not supported", order.Type)
	}
	if err != nil {
		return typ, "", err
	}
	if err := failpoint.Inject(ctx, "order/before-done"); err != nil {
		return typ, "", err
	}
	return typ, outcomeDone, p.markDone(ctx)
}

// markDone sets the order done. This run read it executing while holding
// the order's ordering key, so no other handler here settled it since; a
// run after a crash reads it again first and skips it once it is done.
// Anyone else settling it meanwhile gets us a 409, which is fine.
func (p *processor) markDone(ctx context.Context) error {
	if err := p.o.Waldur.SetOrderStateDone(ctx, p.orderUUID); err != nil && !waldur.IsConflict(err) {
		return fmt.Errorf("set_state_done: %w", err)
	}
	return nil
}

// holdingResource runs fn while nothing else about the order's resource
// is handled (here, and in cluster ordering mode by any replica): the
// event held the order's key, and only the order says which resource it
// changes.
func (p *processor) holdingResource(ctx context.Context, order *waldur.Order, fn func(context.Context, *waldur.Order) error) error {
	uuid := resourceUUID(order)
	if uuid == "" {
		return fn(ctx, order)
	}
	return keylock.Do(ctx, p.svc.resourceLocker(), events.ResourceKey(uuid), func(ctx context.Context) error { return fn(ctx, order) })
}

func resourceUUID(o *waldur.Order) string {
	if o.MarketplaceResourceUUID != "" {
		return o.MarketplaceResourceUUID
	}
	return o.ResourceUUID
}

// create makes the backend object for a Create or Restore order and tells
// Waldur its id, limits and metadata. It is safe to repeat: an object the
// resource already has is left alone, and Create adopts one it made before
// a crash.
func (p *processor) create(ctx context.Context, order *waldur.Order) error {
	w, b := p.o.Waldur, p.o.Backend
	res, err := w.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	if res.BackendID != "" {
		exists, err := b.Exists(ctx, res.BackendID)
		if err != nil {
			return fmt.Errorf("check %s %s: %w", b.Type(), res.BackendID, err)
		}
		if exists {
			p.log.Info("resource already has its backend object; nothing to create", "backend_id", res.BackendID)
			return nil
		}
		p.log.Info("resource's backend object is missing; creating it again", "backend_id", res.BackendID)
	}
	br := BackendResource(res)
	if len(order.Limits) > 0 {
		br.Limits = order.Limits
	}
	created, err := b.Create(ctx, br)
	if err != nil {
		return fmt.Errorf("create %s for resource %q (%s): %w", b.Type(), res.Name, res.UUID, err)
	}
	if created.BackendID != res.BackendID {
		if err := w.SetResourceBackendID(ctx, res.UUID, created.BackendID); err != nil {
			return fmt.Errorf("set_backend_id %s on resource %s: %w", created.BackendID, res.UUID, err)
		}
	}
	if len(created.Limits) > 0 {
		if err := w.SetResourceLimits(ctx, res.UUID, WaldurLimits(created.Limits)); err != nil {
			return fmt.Errorf("set_limits on resource %s: %w", res.UUID, err)
		}
	}
	if len(created.Metadata) > 0 {
		if err := w.SetResourceBackendMetadata(ctx, res.UUID, created.Metadata); err != nil {
			return fmt.Errorf("set_backend_metadata on resource %s: %w", res.UUID, err)
		}
	}
	p.log.Info("backend object ready", "backend_id", created.BackendID, "existed", created.Existed)
	return nil
}

// syncTeam has the membership service apply the team to what create made,
// outside the resource's lock (membership takes what it needs). The key is
// the order's, so a redelivered order does not sync twice. A team that
// cannot be applied (a foreign binding in the way) does not fail the
// order: the object is there, and membership events and the period retry.
func (p *processor) syncTeam(ctx context.Context, order *waldur.Order) error {
	req := &sitebusv1.SyncResourceRequest{OfferingUuid: p.o.Config.OfferingUUIDHex(), ResourceUuid: resourceUUID(order)}
	err := p.svc.bus.Call(ctx, membership.Name, sagas.CmdSyncResource, req, &sitebusv1.SyncResourceResponse{}, bus.WithKey("created:"+p.orderUUID))
	if bus.IsTerminal(err) {
		p.log.Warn("team of the created resource not applied; membership retries", "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync team of resource %s: %w", resourceUUID(order), err)
	}
	return nil
}

func (p *processor) terminate(ctx context.Context, order *waldur.Order) error {
	res, err := p.o.Waldur.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	if res.BackendID == "" {
		p.log.Info("resource has no backend object; nothing to delete")
		return nil
	}
	if err := p.o.Backend.Delete(ctx, res.BackendID); err != nil {
		return fmt.Errorf("delete %s %s of resource %q: %w", p.o.Backend.Type(), res.BackendID, res.Name, err)
	}
	p.log.Info("backend object deleted", "backend_id", res.BackendID)
	return nil
}

// delegateUpdate hands an Update order to the quota service, which owns
// limits and settles the order.
func (p *processor) delegateUpdate(ctx context.Context, order *waldur.Order) error {
	res, err := p.o.Waldur.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	cmd := &sitebusv1.ProvisionCommand{
		OrderUuid: p.orderUUID, OrderType: sitebusv1.OrderType_ORDER_TYPE_UPDATE, Limits: order.Limits, Step: "update-limits",
		Resource: &sitebusv1.ResourceRef{
			ResourceUuid: res.UUID, OfferingUuid: p.o.Config.OfferingUUIDHex(), Slug: res.Slug, Name: res.Name, BackendId: res.BackendID,
			ProjectUuid: res.ProjectUUID, ProjectSlug: res.ProjectSlug, CustomerUuid: res.CustomerUUID, CustomerSlug: res.CustomerSlug,
		},
	}
	key := events.ResourceKey(res.UUID)
	_, err = p.svc.bus.Publish(ctx, QuotaCommandSubject(p.o.Config.OfferingUUIDHex(), key), cmd,
		bus.WithMsgID("order:"+events.HexUUID(p.orderUUID)+":update-limits"), bus.WithOrderingKey(key))
	return err
}

// QuotaCommandSubject is where limit commands for an offering go:
// cmd.quota.<offering>.<partition of the resource key>, so the quota
// service takes one resource's commands in order (bus.ConsumerConfig.Partitioned).
func QuotaCommandSubject(offeringHex, resourceKey string) string {
	return bus.PartitionedSubject("cmd."+QuotaCommandService+"."+offeringHex, resourceKey)
}

// QuotaCommandFilter is the partitioned filter base of every offering's
// limit commands (and of cmd.quota.<offering>, as published before the
// partition was added).
const QuotaCommandFilter = "cmd." + QuotaCommandService + ".*"

// MarkDone sets an order done if it is still executing, as the Python agent
// does (another actor may have settled it meanwhile).
func MarkDone(ctx context.Context, w *waldur.Client, orderUUID string) error {
	order, err := w.GetOrder(ctx, orderUUID, "uuid", "state")
	if err != nil {
		return fmt.Errorf("get order state: %w", err)
	}
	if order.State != waldur.OrderStateExecuting {
		return nil
	}
	if err := w.SetOrderStateDone(ctx, orderUUID); err != nil && !waldur.IsConflict(err) {
		return fmt.Errorf("set_state_done: %w", err)
	}
	return nil
}

func (p *processor) markErred(ctx context.Context, cause error) error {
	return MarkErred(ctx, p.o.Waldur, p.orderUUID, cause, p.log)
}

// MarkErred tells Waldur why an order failed, unless Waldur shows it
// settled already (a run before a crash, or another actor, did): each order
// gets one terminal transition. A Waldur that cannot be reached is an error
// to retry.
func MarkErred(ctx context.Context, w *waldur.Client, orderUUID string, cause error, log *slog.Logger) error {
	msg := cause.Error()
	log.Warn("order failed", "err", msg)
	order, err := w.GetOrder(ctx, orderUUID, "uuid", "state")
	if err != nil && !waldur.IsNotFound(err) {
		return fmt.Errorf("get order state: %w", err)
	}
	if err == nil && terminalOrderState(order.State) {
		log.Info("order is settled in Waldur already; not marking it erred", "state", order.State)
		return nil
	}
	if waldur.IsNotFound(err) {
		return nil
	}
	err = w.SetOrderStateErred(ctx, orderUUID, msg, "")
	if err != nil && !waldur.IsConflict(err) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("set_state_erred: %w", err)
	}
	return nil
}

func terminalOrderState(s string) bool {
	switch s {
	case waldur.OrderStateDone, waldur.OrderStateErred, waldur.OrderStateCanceled, waldur.OrderStateRejected:
		return true
	}
	return false
}

// BackendResource is the backend's view of a Waldur resource.
func BackendResource(r *waldur.Resource) backend.Resource {
	return backend.Resource{
		UUID: r.UUID, Name: r.Name, Slug: r.Slug, BackendID: r.BackendID,
		ProjectUUID: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName,
		CustomerUUID: r.CustomerUUID, CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName,
		Limits: r.Limits,
	}
}

// WaldurLimits rounds limits to the integers set_limits takes.
func WaldurLimits(l map[string]float64) map[string]int64 {
	out := make(map[string]int64, len(l))
	for k, v := range l {
		out[k] = int64(math.Round(v))
	}
	return out
}

// resourceLocker is the Locker of resource keys; before Run (tests that
// drive a processor directly) the bus's own.
func (s *Service) resourceLocker() keylock.Locker {
	if s.resources != nil {
		return s.resources
	}
	return s.bus.Locker()
}
