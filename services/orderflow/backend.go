package orderflow

import (
	"context"
	"fmt"
	"math"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// This file is the Handler of the offerings whose platform objects are a
// backend.Backend (ManagedNamespace, Rancher projects, OKD projects):
// directly, or through a saga when the offering's access goes through
// Keycloak groups.

// Client is what the order service asks of and tells Waldur
// (waldur.Client).
type Client interface {
	Waldur
	GetResource(ctx context.Context, uuid string, fields ...string) (*waldur.Resource, error)
	SetResourceBackendID(ctx context.Context, uuid, backendID string) error
	SetResourceLimits(ctx context.Context, uuid string, limits map[string]int64) error
	SetResourceBackendMetadata(ctx context.Context, uuid string, metadata map[string]any) error
}

var _ Client = (*waldur.Client)(nil)

// sagaKind describes the sagas of one kind of offering: which definitions
// create and terminate its objects, and how their input names the groups.
// One function (backendHandler.saga) builds every input from it.
type sagaKind struct {
	create, terminate string
	// groups are the access groups of the resource's object.
	groups func(res *waldur.Resource) []contract.GroupSpec
	// byRole: the object names its groups by role (a ManagedNamespace's
	// access groups), so the create request carries them.
	byRole bool
	// bindLast: the last group is bound to the object (a Rancher
	// project's child group).
	bindLast bool
}

// kindOf is the saga kind of an offering, nil when its orders run
// directly.
func kindOf(o Offering) *sagaKind {
	switch {
	case o.Groups != nil:
		return &sagaKind{create: contract.NamespaceCreate, terminate: contract.NamespaceTerminate, byRole: true,
			groups: func(res *waldur.Resource) []contract.GroupSpec { return o.Groups(res.Slug) }}
	case o.ProjectGroups != nil:
		return &sagaKind{create: contract.RancherProjectCreate, terminate: contract.RancherProjectTerminate, bindLast: true,
			groups: func(res *waldur.Resource) []contract.GroupSpec { return o.ProjectGroups(res.ProjectSlug) }}
	}
	return nil
}

// teamSyncer has the membership service apply a resource's team.
type teamSyncer func(ctx context.Context, req *sitebusv1.SyncResourceRequest, key string) error

// backendHandler is the Handler of one backend offering.
type backendHandler struct {
	o    Offering
	kind *sagaKind
	sync teamSyncer
}

func (h *backendHandler) Create(ctx context.Context, o *Order) (*Saga, error) {
	if h.kind != nil {
		return h.saga(ctx, o, true)
	}
	if err := h.create(ctx, o); err != nil {
		return nil, err
	}
	if h.o.SyncTeam {
		return nil, h.syncTeam(ctx, o)
	}
	return nil, nil
}

func (h *backendHandler) Terminate(ctx context.Context, o *Order) (*Saga, error) {
	if h.kind != nil {
		return h.saga(ctx, o, false)
	}
	return nil, h.terminate(ctx, o)
}

// Update applies the order's limits through the quota service's handler:
// the quota service owns limits.
func (h *backendHandler) Update(ctx context.Context, o *Order) (*Saga, error) {
	if h.o.Update == nil {
		return nil, Unsupported(o, "")
	}
	return h.o.Update(ctx, o)
}

func (h *backendHandler) resource(ctx context.Context, o *Order) (*waldur.Resource, error) {
	res, err := h.o.Waldur.GetResource(ctx, o.ChangedResource())
	if err != nil {
		return nil, fmt.Errorf("get resource %s: %w", o.ChangedResource(), err)
	}
	return res, nil
}

// saga names the create or terminate saga of the order and builds its
// input.
func (h *backendHandler) saga(ctx context.Context, o *Order, create bool) (*Saga, error) {
	res, err := h.resource(ctx, o)
	if err != nil {
		return nil, err
	}
	groups := h.kind.groups(res)
	in := contract.NamespaceInput{OfferingUUID: o.OfferingUUID, OrderUUID: o.OrderHex(), ResourceUUID: res.UUID, Groups: groups}
	if h.kind.bindLast && len(groups) > 0 {
		in.Bind = groups[len(groups)-1].Name
	}
	if !create {
		in.BackendID = res.BackendID
		return &Saga{Definition: h.kind.terminate, Input: in}, nil
	}
	// An invalid name errs the order now, before any group is made.
	if _, err := h.o.Backend.BackendID(BackendResource(res)); err != nil {
		return nil, err
	}
	req := &sitebusv1.CreateObjectRequest{OfferingUuid: o.OfferingUUID, OrderUuid: o.OrderHex(), Limits: res.Limits,
		Resource: resourceRef(res, o.OfferingUUID)}
	if len(o.Limits) > 0 {
		req.Limits = o.Limits
	}
	if h.kind.byRole {
		req.AccessGroups = map[string]string{}
		for _, g := range groups {
			req.AccessGroups[g.Role] = g.Name
		}
	}
	created, err := contract.NewCreateInput(req, groups)
	if err != nil {
		return nil, err
	}
	created.Bind = in.Bind
	return &Saga{Definition: h.kind.create, Input: created}, nil
}

// create makes the backend object for a Create or Restore order and tells
// Waldur its id, limits and metadata. It is safe to repeat: an object the
// resource already has is left alone, and Create adopts one it made before
// a crash.
func (h *backendHandler) create(ctx context.Context, o *Order) error {
	w, b := h.o.Waldur, h.o.Backend
	res, err := h.resource(ctx, o)
	if err != nil {
		return err
	}
	if res.BackendID != "" {
		exists, err := b.Exists(ctx, res.BackendID)
		if err != nil {
			return fmt.Errorf("check %s %s: %w", b.Type(), res.BackendID, err)
		}
		if exists {
			o.Log.Info("resource already has its backend object; nothing to create", "backend_id", res.BackendID)
			return nil
		}
		o.Log.Info("resource's backend object is missing; creating it again", "backend_id", res.BackendID)
	}
	br := BackendResource(res)
	if len(o.Limits) > 0 {
		br.Limits = o.Limits
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
	o.Log.Info("backend object ready", "backend_id", created.BackendID, "existed", created.Existed)
	return nil
}

// syncTeam has the membership service apply the team to what create made
// before the order is done (backends that bind users themselves, as OKD's
// role bindings). The key is the order's, so a redelivered order does not
// sync twice. A team that cannot be applied (a foreign binding in the way)
// does not fail the order: the object is there, and membership events and
// the period retry.
func (h *backendHandler) syncTeam(ctx context.Context, o *Order) error {
	req := &sitebusv1.SyncResourceRequest{OfferingUuid: o.OfferingUUID, ResourceUuid: o.ChangedResource()}
	err := h.sync(ctx, req, "created:"+o.UUID)
	if fault.IsTerminal(err) {
		o.Log.Warn("team of the created resource not applied; membership retries", "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync team of resource %s: %w", o.ChangedResource(), err)
	}
	return nil
}

func (h *backendHandler) terminate(ctx context.Context, o *Order) error {
	res, err := h.resource(ctx, o)
	if err != nil {
		return err
	}
	if res.BackendID == "" {
		o.Log.Info("resource has no backend object; nothing to delete")
		return nil
	}
	if err := h.o.Backend.Delete(ctx, res.BackendID); err != nil {
		return fmt.Errorf("delete %s %s of resource %q: %w", h.o.Backend.Type(), res.BackendID, res.Name, err)
	}
	o.Log.Info("backend object deleted", "backend_id", res.BackendID)
	return nil
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

func resourceRef(r *waldur.Resource, offeringHex string) *sitebusv1.ResourceRef {
	return &sitebusv1.ResourceRef{
		ResourceUuid: r.UUID, OfferingUuid: offeringHex, Slug: r.Slug, Name: r.Name, BackendId: r.BackendID,
		ProjectUuid: r.ProjectUUID, ProjectSlug: r.ProjectSlug, ProjectName: r.ProjectName,
		CustomerUuid: r.CustomerUUID, CustomerSlug: r.CustomerSlug, CustomerName: r.CustomerName,
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
