package provisioner

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/saga"
)

// stepAttempts is every step's MaxAttempts (definitions).
const stepAttempts = 5

// cleanupTimeout bounds an action's removal of what it made before it
// failed.
const cleanupTimeout = 10 * time.Minute

// failed is how an action returns its final error: the saga does not
// compensate a failed step, so when no attempt follows (the error is
// terminal or this was the last attempt) the action removes what it made
// itself, from the record it kept while going. A retryable error on an
// earlier attempt keeps everything: the next attempt adopts it.
func (r *run) failed(ctx context.Context, in saga.ActivityInput, err error, undo func(context.Context) error) error {
	if !bus.IsTerminal(err) && !fault.IsTerminal(err) && in.Attempt < stepAttempts {
		return err
	}
	// A cancelled context is this coordinator stopping (or losing the
	// saga's lease): the attempt is re-run elsewhere, not failed.
	if errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if uerr := undo(ctx); uerr != nil {
		r.log.Error("removing what the failed step made failed; the saga's compensation of the earlier steps and a terminate remove the rest", "err", uerr)
		return fmt.Errorf("%w (and removing what it made failed: %v)", err, uerr)
	}
	return err
}

// admin is the zone's client in its credentials' project.
func (r *run) admin(ctx context.Context, offeringUUID string) (Zone, ranchercluster.AZ, error) {
	az, ok := r.o.Settings.Offering(offeringUUID)
	if !ok {
		return nil, az, bus.Terminal(fmt.Errorf("availability zone %s of the plan is no longer in openstack_offering_uuid_list", offeringUUID))
	}
	key := offeringUUID + "/"
	r.mu.Lock()
	defer r.mu.Unlock()
	if z, ok := r.zones[key]; ok {
		return z, az, nil
	}
	z, err := r.o.Cloud.Connect(ctx, az)
	if err != nil {
		return nil, az, fmt.Errorf("zone %s: %w", az.Label(), err)
	}
	r.zones[key] = z
	return z, az, nil
}

// in is the zone's client acting in project (the admin's when project is
// the zero Project).
func (r *run) inProject(ctx context.Context, offeringUUID string, p openstack.Project) (Zone, ranchercluster.AZ, error) {
	z, az, err := r.admin(ctx, offeringUUID)
	if err != nil || p.ID == "" {
		return z, az, err
	}
	key := offeringUUID + "/" + p.ID
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.zones[key]; ok {
		return s, az, nil
	}
	s, err := r.o.Cloud.Scoped(ctx, z, p)
	if err != nil {
		return nil, az, fmt.Errorf("zone %s, project %s: %w", az.Label(), p.Name, err)
	}
	r.zones[key] = s
	return s, az, nil
}

// tenant is the record of a zone's tenant, if the create made one.
func (r *run) tenant(offeringUUID string) (TenantRecord, bool) {
	for _, t := range r.made.Tenants {
		if t.OfferingUUID == offeringUUID {
			return t, true
		}
	}
	return TenantRecord{}, false
}

// tenants makes each zone's project, user, quota, network, subnet, router
// and security groups (managed mode; self-managed plans have none).
func (a *activities) tenants(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	var out TenantsOutput
	for _, t := range r.plan.Tenants {
		out.Tenants = append(out.Tenants, TenantRecord{OfferingUUID: t.OfferingUUID})
		if err := r.ensureTenant(ctx, t, &out.Tenants[len(out.Tenants)-1]); err != nil {
			err = fmt.Errorf("zone %s: %w", t.OfferingSlug, err)
			return nil, r.failed(ctx, in, err, func(ctx context.Context) error { return r.removeTenants(ctx, out.Tenants) })
		}
	}
	return json.Marshal(out)
}

// zoneQuota is what the zone's tenant holds: its nodes and load balancer,
// with their volumes.
func (r *run) zoneQuota(offeringUUID string, lb ranchercluster.NodePlan) (instances, volumes int) {
	for _, n := range append(slices.Clone(r.plan.Nodes), lb) {
		if n.OfferingUUID == offeringUUID {
			instances++
			volumes += 1 + len(n.DataVolumes)
		}
	}
	return instances, volumes
}

func (r *run) ensureTenant(ctx context.Context, t ranchercluster.TenantPlan, rec *TenantRecord) error {
	admin, _, err := r.admin(ctx, t.OfferingUUID)
	if err != nil {
		return err
	}
	own := r.owner()
	if rec.Project, _, err = admin.EnsureProject(ctx, own, t.Name, t.Description); err != nil {
		return fmt.Errorf("project %s: %w", t.Name, err)
	}
	password, err := randomPassword()
	if err != nil {
		return err
	}
	u, _, err := admin.EnsureUser(ctx, own, t.UserName, password, rec.Project.ID)
	if err != nil {
		return fmt.Errorf("user %s: %w", t.UserName, err)
	}
	rec.UserID = u.ID
	instances, volumes := r.zoneQuota(t.OfferingUUID, t.LoadBalancer)
	if err := admin.SetQuota(ctx, rec.Project.ID, t.Quota, instances, volumes); err != nil {
		return fmt.Errorf("quota of %s: %w", t.Name, err)
	}
	z, _, err := r.inProject(ctx, t.OfferingUUID, rec.Project)
	if err != nil {
		return err
	}
	nw, _, err := z.EnsureNetwork(ctx, own, t.Network)
	if err != nil {
		return fmt.Errorf("network %s: %w", t.Network.Name, err)
	}
	rec.NetworkID = nw.ID
	sn, _, err := z.EnsureSubnet(ctx, own, nw.ID, t.Network.Subnet)
	if err != nil {
		return fmt.Errorf("subnet %s: %w", t.Network.Subnet.Name, err)
	}
	rec.SubnetID = sn.ID
	if t.Router != nil {
		rt, _, err := z.EnsureRouter(ctx, own, *t.Router, sn.ID)
		if err != nil {
			return fmt.Errorf("router %s: %w", t.Router.Name, err)
		}
		rec.RouterID = rt.ID
	}
	for _, sg := range t.SecurityGroups {
		g, _, err := z.EnsureSecurityGroup(ctx, own, sg)
		if err != nil {
			return fmt.Errorf("security group %s: %w", sg.Name, err)
		}
		rec.SecurityGroups = append(rec.SecurityGroups, NamedID{Name: sg.Name, ID: g.ID})
	}
	r.log.Info("tenant ready", "tenant", t.Name, "project_id", rec.Project.ID, "subnet_id", rec.SubnetID)
	return nil
}

// randomPassword is the tenant user's password: Waldur generates one
// too; sitebus never uses it, so it is not kept anywhere.
func randomPassword() (config.Secret, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return config.Secret(fmt.Sprintf("%x", b)), nil
}

// deleteTenants is the tenants step's compensation and terminate's last
// OpenStack step.
func (a *activities) deleteTenants(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil {
		return nil, err
	}
	return nil, r.removeTenants(ctx, r.made.Tenants)
}

// removeTenants removes, zones in reverse, what each record lists:
// security groups, router, subnet, network (in the project), then
// whatever else the project holds (EmptyProject: Neutron's default group,
// ports and volumes nobody recorded), then the user and the project.
// Deleting a Keystone project deletes nothing in Neutron, Cinder or Nova.
func (r *run) removeTenants(ctx context.Context, recs []TenantRecord) error {
	var errs []error
	for _, t := range slices.Backward(recs) {
		if err := r.removeTenant(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("tenant %s: %w", t.Project.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *run) removeTenant(ctx context.Context, t TenantRecord) error {
	own := r.owner()
	if t.Project.ID != "" {
		z, _, err := r.inProject(ctx, t.OfferingUUID, t.Project)
		if err != nil {
			return err
		}
		for _, sg := range slices.Backward(t.SecurityGroups) {
			if err := z.DeleteSecurityGroup(ctx, own, sg.ID); err != nil {
				return fmt.Errorf("security group %s: %w", sg.Name, err)
			}
		}
		for _, del := range []struct {
			what, id string
			fn       func(context.Context, openstack.Owner, string) error
		}{{"router", t.RouterID, z.DeleteRouter}, {"subnet", t.SubnetID, z.DeleteSubnet}, {"network", t.NetworkID, z.DeleteNetwork}} {
			if del.id == "" {
				continue
			}
			if err := del.fn(ctx, own, del.id); err != nil {
				return fmt.Errorf("%s %s: %w", del.what, del.id, err)
			}
		}
		emptied, err := z.EmptyProject(ctx, own, t.Project.ID)
		if err != nil {
			return fmt.Errorf("empty project %s: %w", t.Project.Name, err)
		}
		if len(emptied) > 0 {
			r.log.Info("objects nobody recorded removed with the tenant", "tenant", t.Project.Name, "removed", map[string]int(emptied))
		}
	}
	admin, _, err := r.admin(ctx, t.OfferingUUID)
	if err != nil {
		return err
	}
	if t.UserID != "" {
		if err := admin.DeleteUser(ctx, own, t.UserID); err != nil {
			return fmt.Errorf("user %s: %w", t.UserID, err)
		}
	}
	if t.Project.ID != "" {
		if err := admin.DeleteProject(ctx, own, t.Project.ID); err != nil {
			return fmt.Errorf("project %s: %w", t.Project.Name, err)
		}
		r.o.Cloud.Forget(t.Project.ID)
	}
	r.log.Info("tenant removed", "tenant", t.Project.Name)
	return nil
}

// lbUserData is the load balancer's cloud-init: Mastermind formats the
// template with subnet_3_oct, the first three octets of the subnet.
func lbUserData(tmpl, fixedIP string) []byte {
	ip := net.ParseIP(fixedIP).To4()
	if tmpl == "" || ip == nil {
		return []byte(tmpl)
	}
	return []byte(strings.ReplaceAll(tmpl, "{subnet_3_oct}", fmt.Sprintf("%d.%d.%d", ip[0], ip[1], ip[2])))
}

// loadBalancers makes each zone's load balancer VM at .10 and waits until
// it runs.
func (a *activities) loadBalancers(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil {
		return nil, err
	}
	var out ServersOutput
	undo := func(ctx context.Context) error { return r.removeServers(ctx, out.Servers) }
	lbs := make([]ranchercluster.NodePlan, 0, len(r.plan.Tenants))
	for _, t := range r.plan.Tenants {
		lbs = append(lbs, t.LoadBalancer)
	}
	out.Servers, err = r.makeVMs(ctx, "load balancer", lbs, func(_ context.Context, n ranchercluster.NodePlan) ([]byte, error) {
		return lbUserData(r.o.Settings.LoadBalancerCloudInitTemplate, n.FixedIP), nil
	}, nil)
	if err != nil {
		return nil, r.failed(ctx, in, err, undo)
	}
	for i := range out.Servers {
		if err := r.waitServer(ctx, &out.Servers[i]); err != nil {
			return nil, r.failed(ctx, in, err, undo)
		}
	}
	return json.Marshal(out)
}

func (a *activities) deleteLoadBalancers(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	r, err := a.start(in, true)
	if err != nil || r.plan == nil {
		return nil, err
	}
	return nil, r.removeServers(ctx, r.made.LoadBalancers)
}

// ensureServer makes n's volumes (the system one from the image), its
// port (at n.FixedIP when set), its floating IP when asked and the VM,
// recording each id in rec as it goes.
func (r *run) ensureServer(ctx context.Context, n ranchercluster.NodePlan, userData []byte, rec *ServerRecord) error {
	var project openstack.Project
	networkID, subnetID := "", n.SubnetID
	if n.Tenant != "" {
		t, ok := r.tenant(n.OfferingUUID)
		if !ok {
			return bus.Terminal(fmt.Errorf("no tenant was made in zone %s for %s", n.OfferingUUID, n.Name))
		}
		project, networkID, subnetID = t.Project, t.NetworkID, t.SubnetID
	}
	rec.ProjectID = project.ID
	z, az, err := r.inProject(ctx, n.OfferingUUID, project)
	if err != nil {
		return err
	}
	own := r.owner()
	image, err := r.imageID(ctx, z, n)
	if err != nil {
		return err
	}
	rec.VolumeIDs = rec.VolumeIDs[:0]
	for i, v := range append([]ranchercluster.VolumePlan{n.SystemVolume}, n.DataVolumes...) {
		spec := openstack.VolumeSpec{VolumePlan: v, AvailabilityZone: az.AvailabilityZone}
		if i == 0 {
			spec.ImageID = image
		}
		vol, _, err := z.EnsureVolume(ctx, own, spec)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		rec.VolumeIDs = append(rec.VolumeIDs, vol.ID)
	}
	port, _, err := z.EnsurePort(ctx, own, openstack.PortSpec{Name: n.Name, NetworkID: networkID, SubnetID: subnetID,
		FixedIP: n.FixedIP, SecurityGroups: n.SecurityGroups})
	if err != nil {
		return fmt.Errorf("port: %w", err)
	}
	rec.PortID = port.ID
	if n.FloatingIP {
		if az.ExternalNetworkID == "" {
			// The plan gives a floating IP only where there is one to
			// give: the zone's external network was removed since.
			return bus.Terminal(fmt.Errorf("floating IP: zone %s has no external_network_id any more", az.Label()))
		}
		fip, _, err := z.EnsureFloatingIP(ctx, own, az.ExternalNetworkID, port.ID)
		if err != nil {
			return fmt.Errorf("floating IP: %w", err)
		}
		rec.FloatingIPID, rec.FloatingIP = fip.ID, fip.Address
	}
	sv, created, err := z.EnsureServer(ctx, own, openstack.ServerSpec{Name: n.Name, Role: n.Role, FlavorID: n.Flavor.ID,
		AvailabilityZone: az.AvailabilityZone, VolumeIDs: rec.VolumeIDs, PortIDs: []string{port.ID}, UserData: userData})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	rec.ServerID = sv.ID
	r.log.Info("VM ready to boot", "vm", n.Name, "id", sv.ID, "role", n.Role, "created", created)
	return nil
}

// imageID is n's image in its zone, looked up once per activity.
func (r *run) imageID(ctx context.Context, z Zone, n ranchercluster.NodePlan) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := n.OfferingUUID + "/" + n.Image
	if image, ok := r.images[key]; ok {
		return image, nil
	}
	image, err := z.ImageID(ctx, n.Image)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", n.Image, err)
	}
	r.images[key] = image
	return image, nil
}

// waitServer waits until the VM is ACTIVE (bounded by the zone client's
// ServerTimeout; ERROR is terminal with Nova's fault) and records its
// addresses.
func (r *run) waitServer(ctx context.Context, rec *ServerRecord) error {
	z, _, err := r.inProject(ctx, rec.OfferingUUID, r.projectByID(rec.OfferingUUID, rec.ProjectID))
	if err != nil {
		return err
	}
	sv, err := z.WaitServerActive(ctx, rec.ServerID)
	if err != nil {
		return fmt.Errorf("VM %s: %w", rec.Name, err)
	}
	rec.Addresses = sv.Addresses
	return nil
}

func (r *run) projectByID(offeringUUID, id string) openstack.Project {
	if t, ok := r.tenant(offeringUUID); ok && t.Project.ID == id {
		return t.Project
	}
	return openstack.Project{}
}

// removeServers deletes VMs in reverse: the server (Nova and the client
// delete its volumes with it), its floating IP, its port and any volume
// left.
func (r *run) removeServers(ctx context.Context, recs []ServerRecord) error {
	var errs []error
	for _, s := range slices.Backward(recs) {
		if err := r.removeServer(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("VM %s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *run) removeServer(ctx context.Context, s ServerRecord) error {
	if s.ServerID == "" && s.PortID == "" && len(s.VolumeIDs) == 0 {
		return nil
	}
	z, _, err := r.inProject(ctx, s.OfferingUUID, r.projectByID(s.OfferingUUID, s.ProjectID))
	if err != nil {
		return err
	}
	own := r.owner()
	if s.ServerID != "" {
		if err := z.DeleteServer(ctx, own, s.ServerID); err != nil {
			return err
		}
	}
	if s.FloatingIPID != "" {
		if err := z.DeleteFloatingIP(ctx, own, s.FloatingIPID); err != nil {
			return fmt.Errorf("floating IP %s: %w", s.FloatingIP, err)
		}
	}
	if s.PortID != "" {
		if err := z.DeletePort(ctx, own, s.PortID); err != nil {
			return fmt.Errorf("port %s: %w", s.PortID, err)
		}
	}
	for _, v := range s.VolumeIDs {
		if err := z.DeleteVolume(ctx, own, v); err != nil {
			return fmt.Errorf("volume %s: %w", v, err)
		}
	}
	r.log.Info("VM removed", "vm", s.Name)
	return nil
}
