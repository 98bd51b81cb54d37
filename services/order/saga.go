package order

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/sagas"
)

// startCreateSaga hands a Create order of an offering with access groups to
// the saga coordinator; the order is settled from the saga's outcome.
func (p *processor) startCreateSaga(ctx context.Context, order *waldur.Order) error {
	res, err := p.o.Waldur.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	br := BackendResource(res)
	if _, err := p.o.Backend.BackendID(br); err != nil {
		return err // invalid name: err the order now, before any group is made
	}
	groups := p.o.Groups(res.Slug)
	access := map[string]string{}
	for _, g := range groups {
		access[g.Role] = g.Name
	}
	limits := res.Limits
	if len(order.Limits) > 0 {
		limits = order.Limits
	}
	in, err := sagas.NewCreateInput(&sitebusv1.CreateObjectRequest{
		OfferingUuid: p.o.Config.OfferingUUIDHex(), OrderUuid: events.HexUUID(p.orderUUID), Limits: limits,
		Resource: resourceRef(res, p.o.Config.OfferingUUIDHex()), AccessGroups: access,
	}, groups)
	if err != nil {
		return err
	}
	_, err = p.svc.coord.Start(ctx, sagas.NamespaceCreate, sagas.SagaID(events.HexUUID(p.orderUUID)), in)
	return err
}

func (p *processor) startTerminateSaga(ctx context.Context, order *waldur.Order) error {
	res, err := p.o.Waldur.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	slug := res.Slug
	in := sagas.NamespaceInput{
		OfferingUUID: p.o.Config.OfferingUUIDHex(), OrderUUID: events.HexUUID(p.orderUUID), ResourceUUID: res.UUID,
		BackendID: res.BackendID, Groups: p.o.Groups(slug),
	}
	_, err = p.svc.coord.Start(ctx, sagas.NamespaceTerminate, sagas.SagaID(events.HexUUID(p.orderUUID)), in)
	return err
}

// startRancherCreateSaga hands a Create order of a Rancher offering with
// Keycloak to the saga coordinator.
func (p *processor) startRancherCreateSaga(ctx context.Context, order *waldur.Order) error {
	res, err := p.o.Waldur.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	if _, err := p.o.Backend.BackendID(BackendResource(res)); err != nil {
		return err // invalid name or slugs: err the order before anything is made
	}
	groups := p.o.ProjectGroups(res.ProjectSlug)
	limits := res.Limits
	if len(order.Limits) > 0 {
		limits = order.Limits
	}
	in, err := sagas.NewCreateInput(&sitebusv1.CreateObjectRequest{
		OfferingUuid: p.o.Config.OfferingUUIDHex(), OrderUuid: events.HexUUID(p.orderUUID), Limits: limits,
		Resource: resourceRef(res, p.o.Config.OfferingUUIDHex()),
	}, groups)
	if err != nil {
		return err
	}
	in.Bind = groups[len(groups)-1].Name
	_, err = p.svc.coord.Start(ctx, sagas.RancherProjectCreate, sagas.SagaID(events.HexUUID(p.orderUUID)), in)
	return err
}

func (p *processor) startRancherTerminateSaga(ctx context.Context, order *waldur.Order) error {
	res, err := p.o.Waldur.GetResource(ctx, resourceUUID(order))
	if err != nil {
		return fmt.Errorf("get resource %s: %w", resourceUUID(order), err)
	}
	groups := p.o.ProjectGroups(res.ProjectSlug)
	in := sagas.NamespaceInput{
		OfferingUUID: p.o.Config.OfferingUUIDHex(), OrderUUID: events.HexUUID(p.orderUUID), ResourceUUID: res.UUID,
		BackendID: res.BackendID, Groups: groups, Bind: groups[len(groups)-1].Name,
	}
	_, err = p.svc.coord.Start(ctx, sagas.RancherProjectTerminate, sagas.SagaID(events.HexUUID(p.orderUUID)), in)
	return err
}

func resourceRef(r *waldur.Resource, offeringHex string) *sitebusv1.ResourceRef {
	return &sitebusv1.ResourceRef{
		ResourceUuid: r.UUID, OfferingUuid: offeringHex, Slug: r.Slug, Name: r.Name, BackendId: r.BackendID,
		ProjectUuid: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName,
		CustomerUuid: r.CustomerUUID, CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName,
	}
}

// serveCommands answers the saga steps this service owns: it alone changes
// platform objects and settles orders.
func (s *Service) serveCommands(ctx context.Context) ([]*bus.Subscription, error) {
	cfg := func(cmd string) bus.ServeConfig {
		return bus.ServeConfig{Service: Name, Command: cmd, Consumer: bus.ConsumerConfig{MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff}}
	}
	var subs []*bus.Subscription
	c, err := bus.Serve(ctx, s.bus, cfg(sagas.CmdCreateObject), s.createObject)
	if err != nil {
		return nil, err
	}
	subs = append(subs, c)
	d, err := bus.Serve(ctx, s.bus, cfg(sagas.CmdDeleteObject), s.deleteObject)
	if err != nil {
		return subs, err
	}
	subs = append(subs, d)
	st, err := bus.Serve(ctx, s.bus, cfg(sagas.CmdSettleOrder), s.settleOrder)
	if err != nil {
		return subs, err
	}
	subs = append(subs, st)
	bg, err := bus.Serve(ctx, s.bus, cfg(sagas.CmdBindGroup), s.bindGroup)
	if err != nil {
		return subs, err
	}
	subs = append(subs, bg)
	ug, err := bus.Serve(ctx, s.bus, cfg(sagas.CmdUnbindGroup), s.unbindGroup)
	if err != nil {
		return subs, err
	}
	return append(subs, ug), nil
}

func (s *Service) offering(hex string) (Offering, error) {
	o, ok := s.offerings[hex]
	if !ok {
		return Offering{}, bus.Terminal(fmt.Errorf("offering %s is not configured for orders here", hex))
	}
	return o, nil
}

// terminal marks backend errors that no retry can fix as the command's
// final answer.
func terminal(err error) error {
	if fault.IsTerminal(err) {
		return bus.Terminal(err)
	}
	return err
}

func (s *Service) createObject(ctx context.Context, req *sitebusv1.CreateObjectRequest) (*sitebusv1.CreateObjectResponse, error) {
	o, err := s.offering(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	ref := req.GetResource()
	br := backend.Resource{
		UUID: ref.GetResourceUuid(), Name: ref.GetName(), Slug: ref.GetSlug(), BackendID: ref.GetBackendId(),
		ProjectUUID: ref.GetProjectUuid(), ProjectSlug: ref.GetProjectSlug(), ProjectName: ref.GetProjectName(),
		CustomerUUID: ref.GetCustomerUuid(), CustomerSlug: ref.GetCustomerSlug(), CustomerName: ref.GetCustomerName(),
		Limits: req.Limits, AccessGroups: req.AccessGroups,
	}
	created, err := o.Backend.Create(ctx, br)
	if err != nil {
		return nil, terminal(fmt.Errorf("create %s for resource %q (%s): %w", o.Backend.Type(), ref.GetName(), ref.GetResourceUuid(), err))
	}
	md, err := structpb.NewStruct(created.Metadata)
	if err != nil {
		md = nil
	}
	return &sitebusv1.CreateObjectResponse{BackendId: created.BackendID, Existed: created.Existed, Limits: created.Limits, Metadata: md}, nil
}

func (s *Service) deleteObject(ctx context.Context, req *sitebusv1.DeleteObjectRequest) (*sitebusv1.DeleteObjectResponse, error) {
	o, err := s.offering(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	if err := o.Backend.Delete(ctx, req.BackendId); err != nil {
		return nil, terminal(fmt.Errorf("delete %s %s: %w", o.Backend.Type(), req.BackendId, err))
	}
	return &sitebusv1.DeleteObjectResponse{Deleted: true}, nil
}

// GroupBinder is a backend that grants access by binding an
// identity-provider group to its objects (Rancher's
// projectRoleTemplateBindings).
type GroupBinder interface {
	BindGroup(ctx context.Context, backendID, group string) (created bool, err error)
	UnbindGroup(ctx context.Context, backendID, group string) error
	// GroupBindings lists the objects the group is bound to.
	GroupBindings(ctx context.Context, group string) ([]string, error)
}

func (s *Service) binder(hex string) (GroupBinder, Offering, error) {
	o, err := s.offering(hex)
	if err != nil {
		return nil, o, err
	}
	b, ok := o.Backend.(GroupBinder)
	if !ok {
		return nil, o, bus.Terminal(fmt.Errorf("backend %s of offering %s binds no groups", o.Backend.Type(), o.Config.Name))
	}
	return b, o, nil
}

func (s *Service) bindGroup(ctx context.Context, req *sitebusv1.BindGroupRequest) (*sitebusv1.BindGroupResponse, error) {
	b, o, err := s.binder(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	created, err := b.BindGroup(ctx, req.BackendId, req.Group)
	if err != nil {
		return nil, terminal(fmt.Errorf("bind group %s to %s %s: %w", req.Group, o.Backend.Type(), req.BackendId, err))
	}
	return &sitebusv1.BindGroupResponse{Created: created}, nil
}

// unbindGroup removes the group's binding from one object and says how
// many others still have one, so the group is deleted only when unused.
func (s *Service) unbindGroup(ctx context.Context, req *sitebusv1.UnbindGroupRequest) (*sitebusv1.UnbindGroupResponse, error) {
	b, o, err := s.binder(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	if err := b.UnbindGroup(ctx, req.BackendId, req.Group); err != nil {
		return nil, terminal(fmt.Errorf("unbind group %s from %s %s: %w", req.Group, o.Backend.Type(), req.BackendId, err))
	}
	left, err := b.GroupBindings(ctx, req.Group)
	if err != nil {
		return nil, terminal(fmt.Errorf("list bindings of group %s: %w", req.Group, err))
	}
	return &sitebusv1.UnbindGroupResponse{StillBound: int32(len(left))}, nil
}

// settleOrder reports a finished saga to Waldur and marks the order done.
func (s *Service) settleOrder(ctx context.Context, req *sitebusv1.SettleOrderRequest) (*sitebusv1.SettleOrderResponse, error) {
	o, err := s.offering(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	w := o.Waldur
	if req.BackendId != "" {
		if err := w.SetResourceBackendID(ctx, req.ResourceUuid, req.BackendId); err != nil {
			return nil, fmt.Errorf("set_backend_id on resource %s: %w", req.ResourceUuid, err)
		}
		if len(req.Limits) > 0 {
			if err := w.SetResourceLimits(ctx, req.ResourceUuid, WaldurLimits(req.Limits)); err != nil {
				return nil, fmt.Errorf("set_limits on resource %s: %w", req.ResourceUuid, err)
			}
		}
		if md := req.GetMetadata().AsMap(); len(md) > 0 {
			if err := w.SetResourceBackendMetadata(ctx, req.ResourceUuid, md); err != nil {
				return nil, fmt.Errorf("set_backend_metadata on resource %s: %w", req.ResourceUuid, err)
			}
		}
	}
	if err := MarkDone(ctx, w, req.OrderUuid); err != nil {
		return nil, err
	}
	s.outcomes.WithLabelValues("saga", "done").Inc()
	return &sitebusv1.SettleOrderResponse{OrderState: waldur.OrderStateDone}, nil
}

// watchOutcomes marks an order erred when its saga did not succeed: the
// saga's error says which step failed and what the platform said.
func (s *Service) watchOutcomes(ctx context.Context) (*bus.Subscription, error) {
	var filters []string
	for _, def := range sagas.All {
		for _, st := range []saga.Status{saga.StatusCompensated, saga.StatusFailed, saga.StatusParked} {
			filters = append(filters, saga.OutcomeSubject(st, def))
		}
	}
	if err := s.coord.EnsureStream(ctx); err != nil {
		return nil, err
	}
	return bus.SubscribeRaw(ctx, s.bus, bus.ConsumerConfig{
		Name: "order-saga-outcomes", Stream: saga.Stream, FilterSubjects: filters,
		MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff,
		OrderingKey: outcomeOrderKey,
	}, s.onOutcome)
}

// outcomeOrderKey serialises a saga's outcome with the order's events and
// its settle command: all of them may settle the order.
func outcomeOrderKey(_ string, data []byte) string {
	var sg struct {
		Input struct {
			OrderUUID string `json:"order_uuid"`
		} `json:"input"`
	}
	if json.Unmarshal(data, &sg) != nil || !events.IsUUID(sg.Input.OrderUUID) {
		return ""
	}
	return events.OrderKey(sg.Input.OrderUUID)
}

func (s *Service) onOutcome(ctx context.Context, data []byte) error {
	var sg saga.Saga
	if err := json.Unmarshal(data, &sg); err != nil {
		return bus.Terminal(fmt.Errorf("saga outcome: %w", err))
	}
	var in sagas.NamespaceInput
	if err := json.Unmarshal(sg.Input, &in); err != nil {
		return bus.Terminal(fmt.Errorf("saga %s input: %w", sg.ID, err))
	}
	o, err := s.offering(in.OfferingUUID)
	if err != nil {
		return err
	}
	msg := sg.Error
	if sg.Status == saga.StatusParked {
		msg = fmt.Sprintf("%s; undoing it failed too and is parked for an operator (sitebus sagas show %s): %s", sg.Error, sg.ID, sg.ParkReason)
	}
	if msg == "" {
		msg = "saga " + sg.ID + " ended " + string(sg.Status)
	}
	if err := MarkErred(ctx, o.Waldur, in.OrderUUID, errors.New(msg), s.log.With("saga", sg.ID)); err != nil {
		return err
	}
	s.outcomes.WithLabelValues("saga", "erred").Inc()
	return nil
}
