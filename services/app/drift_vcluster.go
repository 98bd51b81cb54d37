package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/drift"
	"github.com/sitebus/sitebus/services/membership"
)

// vclusterDrift adds to o the drift checks of the members of a vcluster
// offering whose membership_sync_backend is vcluster, as the membership
// service keeps them (VClusterMembershipOffering): the imported cluster's
// role template bindings marked as the resource's against the member
// source, and with the waldur_team source the members of the role groups
// c_<uuid hex>_<role> against the team. Its host namespace's quota is
// compared by the quota check every offering has. A virtual cluster not
// imported into Rancher has no bindings or groups: nothing is added.
// Repairs ask the membership service to sync the resource, as for every
// backend.
func vclusterDrift(o drift.Offering, op *OfferingPlan, w *waldur.Client, vb *vcluster.Backend, b *bus.Bus, log *slog.Logger, reg prometheus.Registerer) (drift.Offering, error) {
	s := vb.Settings()
	if !s.ImportToRancher {
		return o, nil
	}
	rc, err := rancher.NewClusterClient(rancher.ClusterOptions{BackendURL: s.BackendURL, AccessKey: s.Username, SecretKey: s.Password,
		VerifyCert: s.VerifyCert, Logger: log})
	if err != nil {
		return o, fmt.Errorf("offering %q: %w", op.Config.Name, err)
	}
	hex := op.Config.OfferingUUIDHex()
	resources := func(ctx context.Context) ([]waldur.Resource, error) {
		return w.ListProviderResources(ctx, waldur.ResourceFilter{OfferingUUID: op.Config.WaldurOfferingUUID,
			States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}})
	}
	o.Checks = append(o.Checks, &VClusterBindingsDrift{
		ResourceSync: ResourceSync{Offering: hex, Bus: b, Repairs: drift.RepairsCounter(reg), kind: contract.DriftBindings},
		Resources:    resources,
		Access:       &vcluster.Access{Settings: s, Rancher: rc, Log: log, Project: vb.NamespaceProject}})
	mo := VClusterMembershipOffering(op.Config, w, vb, rc, log)
	if op.Keycloak == nil || mo.Groups == nil {
		return o, nil // rancher_project: the project's bindings are the members
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
	o.Checks = append(o.Checks, &MembersDrift{ResourceSync: ResourceSync{Offering: hex, Bus: b}, Plan: withHostNamespace(svc.Plan, resources, vb), Keycloak: kc})
	return o, nil
}

// namespaceLookup tells whether a host namespace exists (the vcluster
// backend's Exists).
type namespaceLookup interface {
	Exists(ctx context.Context, backendID string) (bool, error)
}

// withHostNamespace keeps of plan the groups of resources whose host
// namespace exists: membership makes a virtual cluster's missing role
// groups only then (there is nothing else they would grant access to), so
// the groups of a resource without one are no drift its repair could put
// back. It costs one listing of the resources and one read per resource.
func withHostNamespace(plan func(context.Context, string) ([]membership.GroupMembers, error),
	resources func(context.Context) ([]waldur.Resource, error), host namespaceLookup,
) func(context.Context, string) ([]membership.GroupMembers, error) {
	return func(ctx context.Context, offeringHex string) ([]membership.GroupMembers, error) {
		all, err := plan(ctx, offeringHex)
		if err != nil || len(all) == 0 {
			return all, err
		}
		rs, err := resources(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the offering's resources: %w", err)
		}
		ns := make(map[string]string, len(rs))
		for _, r := range rs {
			ns[r.UUID] = r.BackendID
		}
		exists := map[string]bool{}
		var out []membership.GroupMembers
		for _, gm := range all {
			e, seen := exists[gm.Resource]
			if !seen {
				if id := ns[gm.Resource]; id != "" {
					if e, err = host.Exists(ctx, id); err != nil {
						return nil, fmt.Errorf("look up host namespace %s: %w", id, err)
					}
				}
				exists[gm.Resource] = e
			}
			if e {
				out = append(out, gm)
			}
		}
		return out, nil
	}
}

// ClusterBindingPlanner tells what the member sync of a virtual cluster
// would bind and unbind (vcluster.Access.PlanSync).
type ClusterBindingPlanner interface {
	PlanSync(ctx context.Context, resourceUUID, ns string) (missing, stale []rancher.RoleBinding, err error)
}

var _ ClusterBindingPlanner = (*vcluster.Access)(nil)

// VClusterBindingsDrift is the drift check of the role template bindings
// of imported virtual clusters: per live resource with a host namespace,
// the bindings its member source wants and the cluster lacks, and those
// marked as the resource's (waldur/managed, sitebus.io/resource-uuid) it
// no longer wants. Bindings without those marks are never reported or
// touched, and a cluster that is not the resource's is left out. A repair
// asks the membership service to sync the resource, which rebinds; it
// counts in sitebus_drift_repairs_total{kind="bindings"}.
type VClusterBindingsDrift struct {
	ResourceSync
	Resources func(ctx context.Context) ([]waldur.Resource, error)
	Access    ClusterBindingPlanner
}

// Find compares, changing nothing.
func (d *VClusterBindingsDrift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	d.startPass()
	resources, err := d.Resources(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	var out []contract.DriftFinding
	for _, r := range resources {
		if r.BackendID == "" {
			continue // its create has not settled: no cluster to bind
		}
		missing, stale, err := d.Access.PlanSync(ctx, r.UUID, r.BackendID)
		if errors.Is(err, backend.ErrNotManaged) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("compare the bindings of virtual cluster %s: %w", r.BackendID, err)
		}
		object := func(rb rancher.RoleBinding) string {
			return vcluster.ClusterName(r.BackendID) + "/" + rb.RoleTemplateID + "/" + rb.Subject()
		}
		for _, m := range missing {
			out = append(out, contract.DriftFinding{Kind: contract.DriftBindings, Resource: r.UUID, Object: object(m),
				Want: m.Subject() + " bound as " + m.RoleTemplateID, Have: "no binding"})
		}
		for _, s := range stale {
			out = append(out, contract.DriftFinding{Kind: contract.DriftBindings, Resource: r.UUID, Object: object(s),
				Want: "no binding", Have: s.Subject() + " bound as " + s.RoleTemplateID + " (" + s.ID + ")"})
		}
	}
	return out, nil
}

// LimitRangeKeeper compares and puts back the LimitRange a backend makes
// in a resource's namespace (the vcluster backend's host namespace).
type LimitRangeKeeper interface {
	LimitRangeDrift(ctx context.Context, ns, resourceUUID string) (have string, err error)
	RepairLimitRange(ctx context.Context, ns, resourceUUID string) error
}

var _ LimitRangeKeeper = (*vcluster.Backend)(nil)

// LimitRangeDrift is the drift check of the LimitRange in each live
// resource's host namespace (the default requests the quota needs):
// deleted or edited by hand, it is reported and written back. One without
// sitebus's mark, or in a namespace that is not the resource's, is never
// reported or touched. Repairs count in
// sitebus_drift_repairs_total{kind="limits"}.
type LimitRangeDrift struct {
	Resources func(ctx context.Context) ([]waldur.Resource, error)
	Backend   LimitRangeKeeper
	Repairs   *prometheus.CounterVec
}

// Find compares, changing nothing.
func (d *LimitRangeDrift) Find(ctx context.Context) ([]contract.DriftFinding, error) {
	resources, err := d.Resources(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	var out []contract.DriftFinding
	for _, r := range resources {
		if r.BackendID == "" {
			continue
		}
		have, err := d.Backend.LimitRangeDrift(ctx, r.BackendID, r.UUID)
		if errors.Is(err, backend.ErrNotFound) || errors.Is(err, backend.ErrNotManaged) {
			continue // no namespace, or not the resource's
		}
		if err != nil {
			return nil, fmt.Errorf("compare the limit range of %s: %w", r.BackendID, err)
		}
		if have != "" {
			out = append(out, contract.DriftFinding{Kind: contract.DriftLimits, Resource: r.UUID,
				Object: r.BackendID + "/limitrange/" + vcluster.LimitRangeName, Want: "the default requests sitebus sets", Have: have})
		}
	}
	return out, nil
}

// Repair writes the finding's LimitRange back.
func (d *LimitRangeDrift) Repair(ctx context.Context, f contract.DriftFinding) error {
	ns, _, _ := strings.Cut(f.Object, "/")
	err := d.Backend.RepairLimitRange(ctx, ns, f.Resource)
	drift.CountRepair(d.Repairs, contract.DriftLimits, err)
	return err
}
