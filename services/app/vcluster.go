package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/membership"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
	"github.com/sitebus/sitebus/services/quota"
)

// sagaOrders reports whether the orders of backend name are the
// cluster-provisioner's sagas although the backend is a backend.Backend
// (vcluster): its limits, flags and usage go through the quota and usage
// services as for any backend, its creates and terminates do not take the
// order service's direct path.
func sagaOrders(name string) bool { return name == vcluster.Type }

// vclusterOfferings are the offerings whose order_processing_backend is
// vcluster, with the clients their sagas use.
func (d *deps) vclusterOfferings() (map[string]*provisioner.VClusterOffering, error) {
	out := map[string]*provisioner.VClusterOffering{}
	for i, o := range d.offerings {
		if o.Config.OrderProcessingBackend != vcluster.Type {
			continue
		}
		b, err := d.backends.get(i, vcluster.Type)
		if err != nil {
			return nil, err
		}
		host, ok := b.(*vcluster.Backend)
		if !ok {
			return nil, fmt.Errorf("offering %q: the vcluster backend is a %T", o.Config.Name, b)
		}
		s := host.Settings()
		vo := &provisioner.VClusterOffering{Name: o.Config.Name, Settings: s, Waldur: o.Waldur, Host: host,
			Virtual: provisioner.KubeVirtual{InsecureManifest: !s.VerifyCert}, MemberSync: o.Config.MembershipSyncBackend == vcluster.Type}
		switch s.Driver {
		case vcluster.DriverHelm:
			hd, err := host.HelmDriver()
			if err != nil {
				return nil, fmt.Errorf("offering %q: %w", o.Config.Name, err)
			}
			vo.Driver = hd
		case vcluster.DriverPlatform:
			pd, err := host.PlatformDriver()
			if err != nil {
				return nil, fmt.Errorf("offering %q: %w", o.Config.Name, err)
			}
			vo.Driver = pd
		}
		// With import_to_rancher off, a Rancher the settings still name is
		// kept to un-import what an earlier import made (the cluster pass).
		if s.ImportToRancher || (s.BackendURL != "" && s.Username != "" && s.Password != "") {
			rc, err := d.vclusterRancher(o.Config.Name, s)
			if err != nil {
				return nil, err
			}
			vo.Rancher = rc
		}
		out[o.Config.OfferingUUIDHex()] = vo
	}
	return out, nil
}

// vclusterLimits applies the Update orders of the vcluster offerings: the
// host namespace's ResourceQuota, through the quota service's code as for
// every backend.Backend (vcluster.Backend.SetLimits, which keeps the
// limits for later while the resource is paused or downscaled).
func (d *deps) vclusterLimits() (*quota.Limits, error) {
	var offerings []quota.Offering
	for i, o := range d.offerings {
		if o.Config.OrderProcessingBackend != vcluster.Type {
			continue
		}
		b, err := d.backends.get(i, vcluster.Type)
		if err != nil {
			return nil, err
		}
		offerings = append(offerings, quota.Offering{Config: o.Config, Waldur: o.Waldur, Backend: b})
	}
	return quota.NewLimits(offerings, d.log, d.reg)
}

// vclusterRancher is the Rancher client of a vcluster offering's import
// and member sync.
func (d *deps) vclusterRancher(offering string, s vcluster.Settings) (*rancher.ClusterClient, error) {
	rc, err := rancher.NewClusterClient(rancher.ClusterOptions{BackendURL: s.BackendURL, AccessKey: s.Username, SecretKey: s.Password,
		VerifyCert: s.VerifyCert, FleetWorkspace: s.FleetWorkspace, Logger: d.log.With("offering", offering, "backend", vcluster.Type),
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			rt = telemetry.InstrumentTransport(rt, "rancher", d.reg, d.tp)
			if d.transport != nil {
				rt = d.transport(rt, "rancher")
			}
			return rt
		}})
	if err != nil {
		return nil, fmt.Errorf("offering %q: %w", offering, err)
	}
	return rc, nil
}

// VClusterMembershipOffering is how the membership service sees a vcluster
// offering whose membership_sync_backend is vcluster: every sync keeps
// the imported cluster's role template bindings by member_source
// (vcluster.Access, through rc). With waldur_team the resource's team also
// goes into its role groups c_<uuid hex>_<role> under c_<uuid hex> (the
// rancher-cluster offering's names and role mapping rules), made when
// missing while the host namespace exists; with rancher_project the
// Rancher project's bindings are the members and Waldur's team is not
// used.
func VClusterMembershipOffering(cfg *config.Offering, w membership.Waldur, b *vcluster.Backend, rc vcluster.AccessRancher, log *slog.Logger) membership.Offering {
	s := b.Settings()
	mo := membership.Offering{Config: cfg, Waldur: w, Backend: b,
		Access: vclusterAccess{a: &vcluster.Access{Settings: s, Rancher: rc, Log: log, Project: b.NamespaceProject}}}
	if s.MemberSource != vcluster.MemberSourceWaldurTeam {
		return mo
	}
	mo.Roles, mo.RoleMapping = s.ClusterRoles(), maps.Clone(s.RoleMapping)
	mo.Groups = func(r *waldur.Resource) []contract.GroupSpec {
		parent, groups := s.RoleGroups(r.UUID)
		out := make([]contract.GroupSpec, 0, len(groups))
		for _, role := range mo.Roles {
			out = append(out, contract.GroupSpec{Role: role, Name: groups[role], Parent: parent})
		}
		return out
	}
	return mo
}

// vclusterAccess is vcluster.Access as membership calls it. A resource
// that Waldur knows no host namespace of yet is the create's own members
// step (settle tells Waldur the namespace after it): its cluster is the
// one of the name the create gives, and Access binds it only when the
// cluster carries the resource's marks; a slug that names no namespace has
// no cluster to bind.
type vclusterAccess struct{ a *vcluster.Access }

func (v vclusterAccess) SyncAccess(ctx context.Context, res *waldur.Resource) (added, removed int, err error) {
	ns := res.BackendID
	if ns == "" {
		if ns, err = vcluster.NamespaceName(backend.Resource{UUID: res.UUID, Slug: res.Slug}); err != nil {
			return 0, 0, nil
		}
	}
	return v.a.Sync(ctx, res.UUID, ns)
}

// vclusterMembership is the membership offering of offering i, a vcluster
// one; nil when it does not import into Rancher (nothing to bind).
func (d *deps) vclusterMembership(i int) (*membership.Offering, error) {
	o := d.offerings[i]
	b, err := d.backends.get(i, vcluster.Type)
	if err != nil {
		return nil, err
	}
	host, ok := b.(*vcluster.Backend)
	if !ok {
		return nil, fmt.Errorf("offering %q: the vcluster backend is a %T", o.Config.Name, b)
	}
	if !host.Settings().ImportToRancher {
		return nil, nil
	}
	rc, err := d.vclusterRancher(o.Config.Name, host.Settings())
	if err != nil {
		return nil, err
	}
	mo := VClusterMembershipOffering(o.Config, o.Waldur, host, rc, d.log.With("offering", o.Config.Name, "backend", vcluster.Type))
	return &mo, nil
}

// vclusterVerbs are the vcluster offering's verbs: create and terminate
// start their sagas; update sets the host namespace's quota through
// limits (the quota service's code, as for every backend.Backend), nil
// where the offering has none.
func vclusterVerbs(o *provisioner.VClusterOffering, offeringUUID string, limits *quota.Limits) orderflow.Verbs {
	start := func(def string) func(context.Context, *orderflow.Order) (*orderflow.Saga, error) {
		return func(ctx context.Context, ord *orderflow.Order) (*orderflow.Saga, error) {
			in, err := provisioner.VClusterInputOf(ctx, o, offeringUUID, ord.Order)
			if err != nil {
				return nil, err
			}
			return &orderflow.Saga{Definition: def, Input: in}, nil
		}
	}
	v := orderflow.Verbs{Kind: vcluster.Type, OnCreate: start(provisioner.VClusterCreate), OnTerminate: start(provisioner.VClusterTerminate)}
	if limits != nil {
		v.OnUpdate = func(ctx context.Context, ord *orderflow.Order) (*orderflow.Saga, error) {
			return nil, limits.Apply(ctx, offeringUUID, ord.ChangedResource(), ord.Limits)
		}
	}
	return v
}
