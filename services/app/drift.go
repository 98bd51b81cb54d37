package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
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
// membership's (the groups' members against the team). Each check is
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
	if members == nil || op.Keycloak == nil || op.Config.MembershipSyncBackend == ranchercluster.Type {
		return o, nil
	}
	mo := MembershipOffering(op.Config, w, members)
	if mo.Groups == nil && mo.ProjectGroups == nil {
		return o, nil // no Keycloak groups (OKD binds users itself)
	}
	svc, err := membership.New(nil, membership.Config{Offerings: []membership.Offering{mo}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return o, err
	}
	kcfg := *op.Keycloak
	kcfg.Logger = log
	kc, err := keycloak.New(kcfg)
	if err != nil {
		return o, err
	}
	o.Checks = append(o.Checks, &MembersDrift{Offering: hex, Plan: svc.Plan, Keycloak: kc, Bus: b})
	return o, nil
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
	Offering string
	Plan     func(ctx context.Context, offeringHex string) ([]membership.GroupMembers, error)
	Keycloak MemberReader
	// Bus carries the repairs; nil: a repair errs (the drift command
	// without --nats).
	Bus *bus.Bus
}

// Find compares, changing nothing.
func (m *MembersDrift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
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

// Repair has the membership service sync the finding's resource.
func (m *MembersDrift) Repair(ctx context.Context, f contract.DriftFinding) error {
	if m.Bus == nil {
		return errors.New("no bus to reach the membership service (the drift command needs --nats of a running sitebus to repair members)")
	}
	_, err := contract.SyncResource.Call(ctx, m.Bus, &sitebusv1.SyncResourceRequest{OfferingUuid: m.Offering, ResourceUuid: f.Resource})
	return err
}
