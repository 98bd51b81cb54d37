package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/drift"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/quota"
)

// driftOfferings are the offerings the drift service compares, each with
// the checks of the services that own its objects.
func (d *deps) driftOfferings() ([]drift.Offering, error) {
	var out []drift.Offering
	for i := range d.plan.Offerings {
		op := &d.plan.Offerings[i]
		name := op.ObjectBackend()
		if name == "" {
			continue
		}
		objects, err := d.backends.get(i, name)
		if err != nil {
			return nil, err
		}
		var members backend.Backend
		if m := op.Config.MembershipSyncBackend; m != "" && !clusterBackend(m) {
			if members, err = d.backends.get(i, m); err != nil {
				return nil, err
			}
		}
		o, err := DriftOffering(op, d.offerings[i].Waldur, objects, members, d.bus, d.log, d.reg)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// DriftOffering builds the drift checks of one offering: quota's (limits
// and flags against the objects of the backend objects), the labels and
// annotations the backend writes (when it writes any: drift.Marks) and, when the
// offering's membership backend (members; nil: none) has Keycloak groups,
// membership's (the groups' members against the team), and when it binds
// users itself (OKD), the role bindings against the team, and when it
// binds Keycloak groups (Rancher), the child group's bindings against the
// teams. Each check is
// its service's own dry run, so the drift pass decides nothing that
// service would not, and each repair counts in that service's metrics
// (reg; nil: not exported). b carries membership's repairs (nil: they
// are reported, not repaired). `sitebus run` and `sitebus drift` both
// build the checks here.
func DriftOffering(op *OfferingPlan, w *waldur.Client, objects, members backend.Backend, b *bus.Bus, log *slog.Logger, reg prometheus.Registerer) (drift.Offering, error) {
	hex := op.Config.OfferingUUIDHex()
	o := drift.Offering{UUID: hex, Name: op.Config.Name}
	limits, err := quota.NewLimits([]quota.Offering{{Config: op.Config, Waldur: w, Backend: objects}}, log, reg)
	if err != nil {
		return o, err
	}
	q, err := limits.DriftCheck(hex)
	if err != nil {
		return o, err
	}
	o.Checks = append(o.Checks, q)
	if md, ok := objects.(drift.MarkBackend); ok {
		o.Checks = append(o.Checks, &drift.Marks{Backend: md, Repairs: drift.RepairsCounter(reg)})
	}
	if lk, ok := objects.(LimitRangeKeeper); ok {
		o.Checks = append(o.Checks, &LimitRangeDrift{Backend: lk, Repairs: drift.RepairsCounter(reg),
			Resources: func(ctx context.Context) ([]waldur.Resource, error) {
				return w.ListProviderResources(ctx, waldur.ResourceFilter{OfferingUUID: op.Config.WaldurOfferingUUID,
					States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}})
			}})
	}
	if members == nil || op.Config.MembershipSyncBackend == ranchercluster.Type {
		return o, nil
	}
	if vb, ok := members.(*vcluster.Backend); ok {
		return vclusterDrift(o, op, w, vb, b, log, reg)
	}
	mo := MembershipOffering(op.Config, w, members)
	svc, err := membership.New(nil, membership.Config{Offerings: []membership.Offering{mo}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return o, err
	}
	bindingsSync := func() ResourceSync {
		return ResourceSync{Offering: hex, Bus: b, Repairs: drift.RepairsCounter(reg), kind: contract.DriftBindings}
	}
	if bp, ok := members.(BindingPlanner); ok {
		o.Checks = append(o.Checks, &BindingsDrift{ResourceSync: bindingsSync(), Plan: svc.PlanBindings, Backend: bp})
	}
	if gp, ok := members.(GroupBindingPlanner); ok && mo.ProjectGroups != nil {
		o.Checks = append(o.Checks, &GroupBindingsDrift{ResourceSync: bindingsSync(), Plan: svc.PlanGroupBindings, Backend: gp})
	}
	if op.Keycloak == nil || (mo.Groups == nil && mo.ProjectGroups == nil) {
		return o, nil // no Keycloak groups (OKD binds users itself)
	}
	kcfg := *op.Keycloak
	kcfg.Logger = log
	kc, err := keycloak.New(kcfg)
	if err != nil {
		return o, err
	}
	o.Checks = append(o.Checks, &MembersDrift{ResourceSync: ResourceSync{Offering: hex, Bus: b}, Plan: svc.Plan, Keycloak: kc})
	return o, nil
}

// BindingPlanner is a backend that binds users itself (OKD) and tells the
// changes its SetRoleBindings would make.
type BindingPlanner interface {
	PlanRoleBindings(ctx context.Context, project string, users map[string]string) ([]okd.BindingChange, error)
}

var _ BindingPlanner = (*okd.Backend)(nil)

// BindingsDrift is the drift check of the role bindings a backend makes
// per user (OKD): the users membership's pass binds (PlanBindings)
// against the backend's dry run of SetRoleBindings. Only bindings and
// projects carrying sitebus's mark are compared. A repair asks the
// membership service to sync the resource (sync-resource), which sets the
// bindings; it counts in sitebus_drift_repairs_total{kind="bindings"}.
type BindingsDrift struct {
	ResourceSync
	Plan    func(ctx context.Context, offeringHex string) ([]membership.ResourceBindings, error)
	Backend BindingPlanner
}

// Find compares, changing nothing.
func (d *BindingsDrift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	d.startPass()
	plan, err := d.Plan(ctx, d.Offering)
	if err != nil {
		return nil, err
	}
	var out []contract.DriftFinding
	for _, rb := range plan {
		changes, err := d.Backend.PlanRoleBindings(ctx, rb.BackendID, rb.Users)
		if errors.Is(err, backend.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("compare the role bindings of %s: %w", rb.BackendID, err)
		}
		for _, c := range changes {
			f := contract.DriftFinding{Kind: contract.DriftBindings, Resource: rb.Resource, Object: rb.BackendID + "/" + okd.BindingPrefix + c.User,
				Want: c.User + " bound to " + c.Want, Have: c.User + " bound to " + c.Have}
			switch c.Action {
			case okd.BindingCreate:
				f.Have = "no binding"
			case okd.BindingDelete:
				f.Want = "no binding"
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// ResourceSync is the repair the members and bindings checks share: the
// membership service syncs the finding's resource (sync-resource), once a
// pass. sync-resource applies the resource's whole team, so the repair of
// its first finding puts back all of them; a sync per finding (one per
// user whose binding or membership drifted) would read the team, the
// groups and the bindings again for nothing, and after a failure wait out
// the same error once per finding. A check's Find starts a pass.
type ResourceSync struct {
	Offering string
	// Bus carries the repairs; nil: a repair errs (the drift command
	// without --nats-url).
	Bus *bus.Bus
	// Repairs counts each repair under kind in sitebus_drift_repairs_total
	// (nil: not counted, as members count in membership's own metric).
	Repairs *prometheus.CounterVec
	kind    string
	// synced holds this pass's outcomes by resource; nil (a Repair
	// without a Find) remembers nothing.
	synced map[string]error
}

func (r *ResourceSync) startPass() { r.synced = map[string]error{} }

// Repair has the membership service sync the finding's resource, once a
// pass.
func (r *ResourceSync) Repair(ctx context.Context, f contract.DriftFinding) error {
	err, ok := r.synced[f.Resource]
	if !ok {
		err = syncResource(ctx, r.Bus, r.Offering, f.Resource)
		if r.synced != nil {
			r.synced[f.Resource] = err
		}
	}
	if r.kind != "" {
		drift.CountRepair(r.Repairs, r.kind, err)
	}
	return err
}

// syncResource asks the membership service to apply the resource's team.
func syncResource(ctx context.Context, b *bus.Bus, offeringHex, resourceUUID string) error {
	if b == nil {
		return errors.New("no bus to reach the membership service (the drift command needs --nats-url of a running sitebus to repair this)")
	}
	_, err := contract.SyncResource.Call(ctx, b, &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resourceUUID})
	return err
}

// GroupBindingPlanner is a backend that binds Keycloak groups to its
// objects (Rancher) and tells whether its BindGroup would make a binding.
type GroupBindingPlanner interface {
	PlanGroupBinding(ctx context.Context, objectID, group string) (missing bool, err error)
}

var _ GroupBindingPlanner = (*rancher.Backend)(nil)

// GroupBindingsDrift is the drift check of the group bindings a backend
// makes (Rancher's project role template binding of the Waldur project's
// child group): the bindings membership's pass keeps (PlanGroupBindings)
// against BindGroup's dry run. Only a missing binding is drift: a binding
// sitebus did not make is never reported or removed, and a project sitebus
// does not manage is left out. A repair asks the membership service to sync
// the resource (sync-resource), which binds the group again; it counts in
// sitebus_drift_repairs_total{kind="bindings"}.
type GroupBindingsDrift struct {
	ResourceSync
	Plan    func(ctx context.Context, offeringHex string) ([]membership.ProjectGroupBinding, error)
	Backend GroupBindingPlanner
}

// Find compares, changing nothing.
func (d *GroupBindingsDrift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	d.startPass()
	plan, err := d.Plan(ctx, d.Offering)
	if err != nil {
		return nil, err
	}
	var out []contract.DriftFinding
	for _, pb := range plan {
		missing, err := d.Backend.PlanGroupBinding(ctx, pb.BackendID, pb.Group.Name)
		if errors.Is(err, backend.ErrNotFound) || errors.Is(err, backend.ErrNotManaged) {
			continue // no project, or not sitebus's: nothing to bind to
		}
		if err != nil {
			return nil, fmt.Errorf("compare the group bindings of %s: %w", pb.BackendID, err)
		}
		if missing {
			out = append(out, contract.DriftFinding{Kind: contract.DriftBindings, Resource: pb.Resource, Object: pb.BackendID + "/" + pb.Group.Name,
				Want: pb.Group.Name + " bound", Have: "no binding"})
		}
	}
	return out, nil
}

// MembersDrift is membership's drift check of one offering: the members
// the membership pass would set (its Plan) against Keycloak's, compared
// as set-group-members compares them (MembershipMoves). A group without
// the managed_by mark of sitebus or the Python agent is not sitebus's:
// it is neither reported nor touched. A repair asks the membership
// service to sync the resource (sync-resource), which puts the team back
// through keycloak-sync, Keycloak's only writer, and counts the change in
// sitebus_membership_changes_total by kind (added, removed).
type MembersDrift struct {
	ResourceSync
	Plan     func(ctx context.Context, offeringHex string) ([]membership.GroupMembers, error)
	Keycloak MemberReader
}

// Find compares, changing nothing.
func (m *MembersDrift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	m.startPass()
	plan, err := m.Plan(ctx, m.Offering)
	if err != nil {
		return nil, err
	}
	moves, groups, err := MembershipMoves(ctx, m.Keycloak, plan)
	if err != nil {
		return nil, err
	}
	var out []contract.DriftFinding
	for _, mv := range moves {
		if mv.Pending {
			continue // not in Keycloak yet: the pending retry adds them
		}
		f := contract.DriftFinding{Kind: contract.DriftMembers, Resource: mv.Resource}
		switch {
		case mv.From != "" && mv.To != "":
			f.Object, f.Want, f.Have = mv.To, mv.User+" in "+mv.To, mv.User+" in "+mv.From
		case mv.To != "":
			f.Object, f.Want, f.Have = mv.To, mv.User+" is a member", mv.User+" is not"
		default:
			f.Object, f.Want, f.Have = mv.From, mv.User+" is not a member", mv.User+" is"
		}
		out = append(out, f)
	}
	for _, g := range groups {
		if g.Action == "create" {
			out = append(out, contract.DriftFinding{Kind: contract.DriftMembers, Resource: g.Resource, Object: g.Group,
				Want: fmt.Sprintf("the group with %d member(s)", g.Members), Have: "no such group"})
		}
	}
	return out, nil
}
