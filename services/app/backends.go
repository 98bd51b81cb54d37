package app

import (
	"context"
	"net/http"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/keycloaksync"
	"github.com/sitebus/sitebus/services/membership"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
	"github.com/sitebus/sitebus/services/quota"
	"github.com/sitebus/sitebus/services/usage"
)

// The OKD backend binds users itself; membership reaches it through this.
var _ membership.RoleBinder = (*okd.Backend)(nil)

// backends builds each offering's platform backend once, on first use, so
// a process that runs only the STOMP bridge needs no platform credentials.
type backends struct {
	d     *deps
	built map[string]backend.Backend
}

// get builds offering i's backend name from the settings the plan parsed
// (NewPlan has refused names sitebus does not implement).
func (bs *backends) get(i int, name string) (backend.Backend, error) {
	op := &bs.d.plan.Offerings[i]
	o := op.Config
	key := o.WaldurOfferingUUID + "/" + name
	if b, ok := bs.built[key]; ok {
		return b, nil
	}
	b, err := op.NewBackend(name, BackendOptions{
		Logger: bs.d.log.With("offering", o.Name, "backend", name),
		WrapTransport: func(rt http.RoundTripper, target string) http.RoundTripper {
			rt = telemetry.InstrumentTransport(rt, target, bs.d.reg, bs.d.tp)
			if bs.d.transport != nil {
				rt = bs.d.transport(rt, target)
			}
			return rt
		},
		Resources:  waldurResources{w: bs.d.offerings[i].Waldur, offering: o.WaldurOfferingUUID},
		Registerer: bs.d.reg,
	})
	if err != nil {
		return nil, err
	}
	if bs.built == nil {
		bs.built = map[string]backend.Backend{}
	}
	bs.built[key] = b
	return b, nil
}

// orderOfferings are the offerings with an order_processing_backend.
func (d *deps) orderOfferings() ([]orderflow.Offering, error) {
	var out []orderflow.Offering
	var limits []quota.Offering
	for i, o := range d.offerings {
		if o.Config.OrderProcessingBackend == "" || clusterBackend(o.Config.OrderProcessingBackend) || sagaOrders(o.Config.OrderProcessingBackend) {
			continue
		}
		b, err := d.backends.get(i, o.Config.OrderProcessingBackend)
		if err != nil {
			return nil, err
		}
		// The membership service binds a RoleBinder's users; with it
		// configured, a direct create asks it to bind the team at once.
		_, binds := b.(membership.RoleBinder)
		out = append(out, orderflow.Offering{Config: o.Config, Waldur: o.Waldur, Backend: b, Groups: accessGroups(b), ProjectGroups: projectGroups(b),
			SyncTeam: binds && o.Config.MembershipSyncBackend != ""})
		limits = append(limits, quota.Offering{Config: o.Config, Waldur: o.Waldur, Backend: b})
	}
	// Update orders change limits: the quota service's code does that, in
	// this process, as the order lifecycle's Update verb.
	l, err := quota.NewLimits(limits, d.log, d.reg)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Update = func(ctx context.Context, o *orderflow.Order) (*orderflow.Saga, error) {
			return nil, l.Apply(ctx, o.OfferingUUID, o.ChangedResource(), o.Limits)
		}
	}
	return out, nil
}

// accessGroups names a backend's identity-provider groups when its
// offering has Keycloak enabled (nil otherwise: no groups, no sagas).
func accessGroups(b backend.Backend) func(slug string) []contract.GroupSpec {
	mns, ok := b.(*managedns.Backend)
	if !ok || !mns.Settings().KeycloakEnabled {
		return nil
	}
	return func(slug string) []contract.GroupSpec {
		out := make([]contract.GroupSpec, 0, len(backend.Roles))
		for _, r := range backend.Roles {
			out = append(out, contract.GroupSpec{Role: r, Name: managedns.GroupName(slug, r), Description: managedns.GroupDescription(slug, r)})
		}
		return out
	}
}

// membershipOfferings are the offerings with a membership_sync_backend.
func (d *deps) membershipOfferings() ([]membership.Offering, error) {
	var out []membership.Offering
	for i, o := range d.offerings {
		name := o.Config.MembershipSyncBackend
		if name == "" {
			continue
		}
		if clusterBackend(name) {
			if mo, ok := ClusterMembershipOffering(&d.plan.Offerings[i], o.Waldur); ok {
				out = append(out, mo)
			}
			continue
		}
		if name == vcluster.Type {
			mo, err := d.vclusterMembership(i)
			if err != nil {
				return nil, err
			}
			if mo != nil {
				out = append(out, *mo)
			}
			continue
		}
		b, err := d.backends.get(i, name)
		if err != nil {
			return nil, err
		}
		out = append(out, MembershipOffering(o.Config, o.Waldur, b))
	}
	return out, nil
}

// MembershipOffering is how the membership service sees an offering
// whose membership_sync_backend is b: its access groups, role mapping and
// user identity, from b's settings. run and sitebus migrate both build it
// here, so migrate's plan is the pass's.
func MembershipOffering(cfg *config.Offering, w membership.Waldur, b backend.Backend) membership.Offering {
	mo := membership.Offering{Config: cfg, Waldur: w, Backend: b, Groups: bySlug(accessGroups(b)), ProjectGroups: projectGroups(b)}
	if byID, ok := usersByID(b); ok {
		mo.UsersByID = byID
	}
	if mns, ok := b.(*managedns.Backend); ok {
		st := mns.Settings()
		mo.RoleMapping, mo.DefaultRole, mo.UsersByID = st.RoleMapping, st.DefaultRole, st.KeycloakUseUserID
		mo.SyncUsersToCR, mo.IdentityField, mo.IdentityLowercase = st.SyncUsersToCR, st.CRUserIdentityField, st.CRUserIdentityLowercase
	}
	return mo
}

// bySlug names a resource's groups by its slug (nil stays nil).
func bySlug(groups func(slug string) []contract.GroupSpec) func(*waldur.Resource) []contract.GroupSpec {
	if groups == nil {
		return nil
	}
	return func(r *waldur.Resource) []contract.GroupSpec { return groups(r.Slug) }
}

// quotaOfferings are the offerings whose limits and flags sitebus manages:
// those with an order or a membership backend (the Python agent applies
// flags in membership sync, limits in order processing).
func (d *deps) quotaOfferings() ([]quota.Offering, error) {
	var out []quota.Offering
	for i, o := range d.offerings {
		name := d.plan.Offerings[i].ObjectBackend()
		if name == "" {
			continue
		}
		b, err := d.backends.get(i, name)
		if err != nil {
			return nil, err
		}
		out = append(out, quota.Offering{Config: o.Config, Waldur: o.Waldur, Backend: b})
	}
	return out, nil
}

// keycloakOfferings are the offerings with backend_settings.keycloak_enabled;
// with none, the keycloak-sync service idles.
func (d *deps) keycloakOfferings() ([]keycloaksync.Offering, error) {
	var out []keycloaksync.Offering
	for i, o := range d.offerings {
		op := &d.plan.Offerings[i]
		ko, ok, err := KeycloakOffering(op, o.Waldur, func(name string) (backend.Backend, error) { return d.backends.get(i, name) })
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		ko.Keycloak.Logger = d.log.With("offering", o.Config.Name)
		ko.Keycloak.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			rt = telemetry.InstrumentTransport(rt, "keycloak", d.reg, d.tp)
			if d.transport != nil {
				rt = d.transport(rt, "keycloak")
			}
			return rt
		}
		out = append(out, ko)
	}
	return out, nil
}

// KeycloakOffering is how keycloak-sync sees an offering (ok false when
// its Keycloak is not enabled): the groups its resources use and, for
// Rancher, their bindings, for the leftover cleanup. backendFor builds the
// offering's backend of a name. run and sitebus migrate both build it
// here, so migrate's cleanup plan is the cleanup's.
func KeycloakOffering(op *OfferingPlan, w keycloaksync.Waldur, backendFor func(name string) (backend.Backend, error)) (keycloaksync.Offering, bool, error) {
	if op.Keycloak == nil {
		return keycloaksync.Offering{}, false, nil
	}
	ko := keycloaksync.Offering{Config: op.Config, Waldur: w, Keycloak: *op.Keycloak}
	name := op.Config.OrderProcessingBackend
	if name == "" {
		name = op.Config.MembershipSyncBackend
	}
	switch {
	case name == "":
	case clusterBackend(name) || name == vcluster.Type:
		// A virtual cluster's role groups are named as a cluster's.
		ko.Names = clusterGroupNames
	default:
		b, err := backendFor(name)
		if err != nil {
			return keycloaksync.Offering{}, false, err
		}
		if names, bindings := rancherGroupNames(b); names != nil {
			ko.Names, ko.Bindings = names, bindings
		}
	}
	return ko, true, nil
}

// usageOfferings are the offerings with a reporting_backend (the Python
// agent's report mode reports every offering that has one).
func (d *deps) usageOfferings() ([]usage.Offering, error) {
	var out []usage.Offering
	for i, o := range d.offerings {
		name := o.Config.ReportingBackend
		if name == "" {
			continue
		}
		if clusterBackend(name) {
			// Its clusters' usage is read from OpenStack, by the records
			// the cluster-provisioner keeps on the bus.
			s := &d.plan.Offerings[i].RancherCluster
			log := d.log.With("offering", o.Config.Name)
			cloud := provisioner.NewOpenStack(s, func(c *openstack.Config) { c.Logger = log })
			out = append(out, usage.Offering{Config: o.Config, Waldur: o.Waldur,
				Backend: provisioner.NewUsageMeter(d.bus.JetStream(), s, cloud, log)})
			continue
		}
		b, err := d.backends.get(i, name)
		if err != nil {
			return nil, err
		}
		out = append(out, usage.Offering{Config: o.Config, Waldur: o.Waldur, Backend: b})
	}
	return out, nil
}
