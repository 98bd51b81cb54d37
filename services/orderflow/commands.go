package orderflow

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// serveCommands answers the saga steps this service owns: it alone changes
// platform objects and settles orders.
func (s *Service) serveCommands(ctx context.Context) ([]*bus.Subscription, error) {
	cc := bus.ConsumerConfig{MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff}
	starts := []func() (*bus.Subscription, error){
		func() (*bus.Subscription, error) {
			return contract.Serve(ctx, s.bus, contract.CreateObject, cc, s.createObject)
		},
		func() (*bus.Subscription, error) {
			return contract.Serve(ctx, s.bus, contract.DeleteObject, cc, s.deleteObject)
		},
		func() (*bus.Subscription, error) {
			return contract.Serve(ctx, s.bus, contract.SettleOrder, cc, s.settleOrder)
		},
		func() (*bus.Subscription, error) {
			return contract.Serve(ctx, s.bus, contract.BindGroup, cc, s.bindGroup)
		},
		func() (*bus.Subscription, error) {
			return contract.Serve(ctx, s.bus, contract.UnbindGroup, cc, s.unbindGroup)
		},
	}
	var subs []*bus.Subscription
	for _, start := range starts {
		sub, err := start()
		if err != nil {
			return subs, err
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

func (s *Service) offering(hex string) (Offering, error) {
	o, ok := s.backends[hex]
	if !ok {
		return Offering{}, fault.Terminal(fmt.Errorf("offering %s is not configured for orders here", hex))
	}
	return o, nil
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
		return nil, fmt.Errorf("create %s for resource %q (%s): %w", o.Backend.Type(), ref.GetName(), ref.GetResourceUuid(), err)
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
		return nil, fmt.Errorf("delete %s %s: %w", o.Backend.Type(), req.BackendId, err)
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
		return nil, o, fault.Terminal(fmt.Errorf("backend %s of offering %s binds no groups", o.Backend.Type(), hex))
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
		return nil, fmt.Errorf("bind group %s to %s %s: %w", req.Group, o.Backend.Type(), req.BackendId, err)
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
		return nil, fmt.Errorf("unbind group %s from %s %s: %w", req.Group, o.Backend.Type(), req.BackendId, err)
	}
	left, err := b.GroupBindings(ctx, req.Group)
	if err != nil {
		return nil, fmt.Errorf("list bindings of group %s: %w", req.Group, err)
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
	if err := s.MarkDone(ctx, req.OfferingUuid, req.OrderUuid); err != nil {
		return nil, err
	}
	return &sitebusv1.SettleOrderResponse{OrderState: waldur.OrderStateDone}, nil
}

// Handle has l answer the saga steps this service owns: sitebus orders
// explain runs them this way, without the bus.
func (s *Service) Handle(l *contract.Local) {
	contract.Handle(l, contract.CreateObject, s.createObject)
	contract.Handle(l, contract.DeleteObject, s.deleteObject)
	contract.Handle(l, contract.SettleOrder, s.settleOrder)
	contract.Handle(l, contract.BindGroup, s.bindGroup)
	contract.Handle(l, contract.UnbindGroup, s.unbindGroup)
}
