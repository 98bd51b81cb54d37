package ranchercluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
)

// roleRequirement is WALDUR_RANCHER["ROLE_REQUIREMENT"]: the least a
// node's flavor must have.
var roleRequirement = map[string]struct{ CPU, RAMMB int }{
	RoleServer: {2, 4096},
	RoleAgent:  {1, 1024},
}

// MinSystemVolumeMB is WALDUR_RANCHER["SYSTEM_VOLUME_MIN_SIZE"], which
// Waldur applies to the system_volume_size attribute (MB).
const MinSystemVolumeMB = 64

// Waldur's messages (marketplace_rancher/processors.py, waldur_rancher).
const (
	msgReadOnly       = "Rancher integration is in read-only mode."
	msgNoOffering     = "Please select at least one OpenStack offering."
	msgOddOfferings   = "Number of selected OpenStack offerings should be odd (1, 3, 5)"
	msgUnavailable    = "These OpenStack offerings are not available: %s"
	msgFlavorMissing  = "Flavor is not available in OpenStack offering '%s': %s"
	msgTypeMissing    = "Volume type %s is not available in OpenStack offering %s"
	msgLimit          = "The requested total %s limit %d %s exceeds the maximum allowed %d for tenants."
	msgCPURequirement = "Flavor %s does not meet requirements. CPU requirement is %d"
	msgRAMRequirement = "Flavor %s does not meet requirements. RAM requirement is %d"
	msgServerCount    = "Total count of server nodes must be 1, 3 or 5. You have got %d nodes."
	msgAgentCount     = "Count of agent nodes must be min 1."
	msgTenantEither   = "Either cluster or node tenant should be specified."
	msgFlavorEither   = "Either flavor or cpu and memory should be specified."
	msgNoFlavor       = "No matching flavor found."
)

func readOnly(s *Settings) error {
	if s.ReadOnlyMode {
		return &AttributeError{Msg: msgReadOnly}
	}
	return nil
}

// settingKey names an offering setting in a message about an order: the
// customer sees that the offering, not the order, lacks something.
func settingKey(k string) string { return settingsPrefix + k }

// ValidateManaged checks a managed create order: read-only mode, the
// selected zones, the flavors and volume types in each, and the totals
// against the tenant maxima. Problems of the order are *AttributeErrors
// (terminal); a failed catalog lookup is returned as it is (retryable).
func ValidateManaged(ctx context.Context, s *Settings, a ManagedAttributes, cat Catalog) error {
	_, err := checkManaged(ctx, s, a, cat)
	return err
}

func checkManaged(ctx context.Context, s *Settings, a ManagedAttributes, cat Catalog) ([]zone, error) {
	if err := readOnly(s); err != nil {
		return nil, err
	}
	if !s.Managed() {
		return nil, &AttributeError{Msg: "this offering's deployment_mode is " + s.DeploymentMode + ", not managed"}
	}
	azs, err := selectedZones(s, a.OpenStackOfferingUUIDs)
	if err != nil {
		return nil, err
	}
	zones := make([]zone, 0, len(azs))
	for _, az := range azs {
		z, err := lookup(ctx, cat, az, az.StorageMode == StorageDynamic)
		if err != nil {
			return nil, err
		}
		zones = append(zones, z)
	}
	var errs []error
	bad := func(attr, format string, args ...any) {
		errs = append(errs, &AttributeError{Attribute: attr, Msg: fmt.Sprintf(format, args...)})
	}
	if s.FlavorsRegex != nil && !s.FlavorsRegex.MatchString(a.WorkerNodesFlavorName) {
		bad("worker_nodes_flavor_name", "Flavor %s is not offered here (it does not match the offering's flavors_regex).", a.WorkerNodesFlavorName)
	}
	flavors := []struct{ attr, name, role string }{
		{"worker_nodes_flavor_name", a.WorkerNodesFlavorName, RoleAgent},
		{settingKey("managed_rancher_server_flavor_name"), s.Server.FlavorName, RoleServer},
		{settingKey("managed_rancher_load_balancer_flavor_name"), s.LoadBalancer.FlavorName, ""},
	}
	types := []struct{ attr, name string }{
		{settingKey("managed_rancher_server_system_volume_type_name"), s.Server.SystemVolumeTypeName},
		{settingKey("managed_rancher_server_data_volume_type_name"), s.Server.DataVolumeTypeName},
		{settingKey("managed_rancher_worker_system_volume_type_name"), s.Worker.SystemVolumeTypeName},
		{"worker_nodes_data_volume_type_name", a.WorkerNodesDataVolumeTypeName},
		{settingKey("managed_rancher_load_balancer_system_volume_type_name"), s.LoadBalancer.SystemVolumeTypeName},
		{settingKey("managed_rancher_load_balancer_data_volume_type_name"), s.LoadBalancer.DataVolumeTypeName},
	}
	if a.InstallLonghorn {
		types = append(types, struct{ attr, name string }{"worker_nodes_longhorn_volume_type_name", a.WorkerNodesLonghornVolumeTypeName})
	}
	for _, z := range zones {
		for _, f := range flavors {
			fl, ok := z.flavor(f.name)
			if !ok {
				bad(f.attr, msgFlavorMissing, z.az.Label(), f.name)
				continue
			}
			if err := meetsRole(fl, f.role); err != "" {
				bad(f.attr, "%s", err)
			}
		}
		if z.az.StorageMode != StorageDynamic {
			continue
		}
		for _, t := range types {
			if t.name == "" {
				continue
			}
			if _, ok := z.volumeType(t.name); !ok {
				bad(t.attr, msgTypeMissing, t.name, z.az.Label())
			}
		}
	}
	if err := joinAttr(dedupe(errs)); err != nil {
		return nil, err
	}
	var total Quota
	for _, z := range zones {
		total = total.Add(managedSpecs(s, a, z).quota(a.WorkerNodesCount))
	}
	if err := checkMax(s.TenantMax, total); err != nil {
		return nil, err
	}
	return zones, nil
}

// dedupe drops repeated problems (one flavor missing in two zones is two
// problems; the same flavor named twice in one zone is one).
func dedupe(errs []error) []error {
	seen := map[string]bool{}
	out := errs[:0]
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

// selectedZones checks openstack_offering_uuid_list as Mastermind's
// validate_openstack_offerings does (available, non-empty, odd) and also
// refuses a zone selected twice, which Mastermind counts once for the odd
// rule but makes two tenants of the same name for.
func selectedZones(s *Settings, uuids []string) ([]AZ, error) {
	const attr = "openstack_offering_uuid_list"
	var unavailable []string
	var azs []AZ
	seen := map[string]bool{}
	for _, u := range uuids {
		az, ok := s.Offering(u)
		if !ok {
			unavailable = append(unavailable, u)
			continue
		}
		h := hexUUID(az.UUID)
		if seen[h] {
			return nil, &AttributeError{Attribute: attr, Msg: fmt.Sprintf("OpenStack offering %s is selected more than once.", u)}
		}
		seen[h] = true
		azs = append(azs, az)
	}
	switch {
	case len(unavailable) > 0:
		return nil, &AttributeError{Attribute: attr, Msg: fmt.Sprintf(msgUnavailable, strings.Join(unavailable, ", "))}
	case len(azs) == 0:
		return nil, &AttributeError{Attribute: attr, Msg: msgNoOffering}
	case len(azs)%2 == 0:
		return nil, &AttributeError{Attribute: attr, Msg: msgOddOfferings}
	}
	return azs, nil
}

// meetsRole checks a flavor against the role's requirement ("" passes).
func meetsRole(f Flavor, role string) string {
	req, ok := roleRequirement[role]
	switch {
	case !ok:
		return ""
	case f.VCPUs < req.CPU:
		return fmt.Sprintf(msgCPURequirement, f.Name, req.CPU)
	case f.RAMMB < req.RAMMB:
		return fmt.Sprintf(msgRAMRequirement, f.Name, req.RAMMB)
	}
	return ""
}

// checkMax compares a cluster's totals over all its tenants with the
// offering's maxima, as Mastermind's validate_limits: cores as they are,
// RAM and storage in MB against the GB maxima ×1024.
func checkMax(m TenantMax, total Quota) error {
	var errs []error
	for _, c := range []struct {
		kind     string
		got, max int
		unit     string
	}{
		{"cores", total.Cores, m.CPU, "cores"},
		{"ram", total.RAMMB, m.RAMGB * 1024, "MB"},
		{"storage", total.Gigabytes * 1024, m.DiskGB * 1024, "MB"},
	} {
		if c.max > 0 && c.got > c.max {
			// Named by the attribute the customer can lower (the maximum
			// is the offering's managed_rancher_tenant_max_*).
			errs = append(errs, &AttributeError{Attribute: "worker_nodes_count", Msg: fmt.Sprintf(msgLimit, c.kind, c.got, c.unit, c.max)})
		}
	}
	return joinAttr(errs)
}

// vmSpec is one kind of VM of a zone, before it is named.
type vmSpec struct {
	flavor Flavor
	system VolumePlan
	data   []VolumePlan
}

func (v vmSpec) quota(dynamic bool) Quota {
	q := Quota{Cores: v.flavor.VCPUs, RAMMB: v.flavor.RAMMB}
	for _, vol := range append([]VolumePlan{v.system}, v.data...) {
		q.Gigabytes += vol.SizeGB
		if dynamic && vol.Type != "" {
			if q.GigabytesByType == nil {
				q.GigabytesByType = map[string]int{}
			}
			q.GigabytesByType[vol.Type] += vol.SizeGB
		}
	}
	return q
}

// node names a spec's VM and its volumes.
func (v vmSpec) node(name string, number int, role string, az AZ) NodePlan {
	n := NodePlan{Name: name, Number: number, Role: role, OfferingUUID: az.UUID, Flavor: flavorRef(v.flavor)}
	n.SystemVolume = v.system
	n.SystemVolume.Name = VolumeName(name, 0)
	for i, d := range v.data {
		d.Name = VolumeName(name, i+1)
		n.DataVolumes = append(n.DataVolumes, d)
	}
	return n
}

// zoneSpecs are a managed zone's three kinds of VM.
type zoneSpecs struct {
	dynamic            bool
	server, worker, lb vmSpec
}

// quota is get_tenant_limits: 3 servers, workers agents and 1 load balancer.
func (z zoneSpecs) quota(workers int) Quota {
	return z.server.quota(z.dynamic).Times(ServersPerAZ).
		Add(z.worker.quota(z.dynamic).Times(workers)).
		Add(z.lb.quota(z.dynamic))
}

// managedSpecs lays out a zone's VMs from the settings and the order:
// sizes the settings give in GB and the order in MB, volume types only in
// dynamic storage mode (as Mastermind's format_node), the servers' data
// volume in GB×1024 (Mastermind passes the GB number as MB there, a 1024
// times too small a volume).
func managedSpecs(s *Settings, a ManagedAttributes, z zone) zoneSpecs {
	dynamic := z.az.StorageMode == StorageDynamic
	typ := func(name string) string {
		if !dynamic || name == "" {
			return ""
		}
		if t, ok := z.volumeType(name); ok {
			return t.Name
		}
		return ""
	}
	data := func(i, sizeGB int, typeName, mount string) VolumePlan {
		v := VolumePlan{SizeGB: sizeGB, Type: typ(typeName), Device: DataDevice(s.NodeDiskDriver, i), MountPoint: mount}
		if mount != "" {
			v.Filesystem = DataFilesystem
		}
		return v
	}
	sf, _ := z.flavor(s.Server.FlavorName)
	wf, _ := z.flavor(a.WorkerNodesFlavorName)
	lf, _ := z.flavor(s.LoadBalancer.FlavorName)
	out := zoneSpecs{dynamic: dynamic}
	out.server = vmSpec{flavor: sf,
		system: VolumePlan{SizeGB: s.Server.SystemVolumeSizeGB, Type: typ(s.Server.SystemVolumeTypeName)},
		data:   []VolumePlan{data(1, s.Server.DataVolumeSizeGB, s.Server.DataVolumeTypeName, RKE2StorageMount)}}
	out.worker = vmSpec{flavor: wf,
		system: VolumePlan{SizeGB: s.Worker.SystemVolumeSizeGB, Type: typ(s.Worker.SystemVolumeTypeName)},
		data:   []VolumePlan{data(1, gbOf(a.WorkerNodesDataVolumeSizeMB), a.WorkerNodesDataVolumeTypeName, RKE2StorageMount)}}
	if a.InstallLonghorn {
		out.worker.data = append(out.worker.data,
			data(2, gbOf(a.WorkerNodesLonghornVolumeSizeMB), a.WorkerNodesLonghornVolumeTypeName, LonghornMount))
	}
	out.lb = vmSpec{flavor: lf,
		system: VolumePlan{SizeGB: s.LoadBalancer.SystemVolumeSizeGB, Type: typ(s.LoadBalancer.SystemVolumeTypeName)}}
	if s.LoadBalancer.DataVolumeSizeGB > 0 {
		// The load balancer's own cloud-init decides what to do with it.
		out.lb.data = []VolumePlan{data(1, s.LoadBalancer.DataVolumeSizeGB, s.LoadBalancer.DataVolumeTypeName, "")}
	}
	return out
}

// PlanManaged validates a managed create order (as ValidateManaged) and
// lays out everything it makes. The resource gives the names: its slug the
// cluster's (k8s-<slug>), its project's and its own the tenants'
// (VMProjectSlug), its UUID the Keycloak, Vault and ArgoCD objects'.
func PlanManaged(ctx context.Context, s *Settings, a ManagedAttributes, r backend.Resource, cat Catalog) (*Plan, error) {
	if err := readOnly(s); err != nil {
		return nil, err
	}
	if err := checkResource(r, true); err != nil {
		return nil, err
	}
	zones, err := checkManaged(ctx, s, a, cat)
	if err != nil {
		return nil, err
	}
	p := common(s, r, ModeManaged)
	cluster := ClusterName(r.Slug)
	p.Cluster = clusterSpec(s, cluster, a.Name, "")
	p.InstallLonghorn = a.InstallLonghorn
	p.WorkersPerZone = a.WorkerNodesCount
	vm := VMProjectSlug(r)
	number := 0
	for _, z := range zones {
		specs := managedSpecs(s, a, z)
		tenant := TenantName(vm, z.az.Slug)
		subnet, lbIP, err := subnetPlan(tenant, z.az)
		if err != nil {
			return nil, err
		}
		tp := TenantPlan{
			OfferingUUID: z.az.UUID, OfferingSlug: z.az.Slug, AvailabilityZone: z.az.AvailabilityZone, Region: z.az.Region,
			Name:           tenant,
			Description:    fmt.Sprintf("Rancher cluster %s (Waldur resource %s)", cluster, r.UUID),
			UserName:       TenantUserName(tenant),
			Quota:          specs.quota(a.WorkerNodesCount),
			Network:        NetworkPlan{Name: NetworkName(tenant), Subnet: subnet},
			SecurityGroups: securityGroups(s.AdminAllowedCIDRs),
		}
		if z.az.ExternalNetworkID != "" {
			tp.Router = &RouterPlan{Name: RouterName(tenant), ExternalNetworkID: z.az.ExternalNetworkID}
		}
		lb := specs.lb.node(LoadBalancerName(r.Slug), 0, RoleLoadBalancer, z.az)
		lb.Tenant, lb.FixedIP, lb.Image = tenant, lbIP, s.BaseImageName
		lb.SecurityGroups = []string{SecurityGroupAdmin, SecurityGroupPublic, SecurityGroupDefault}
		// The load balancer is the cluster's way in: it gets a floating IP
		// wherever there is an external network to take it from.
		lb.FloatingIP = z.az.ExternalNetworkID != ""
		tp.LoadBalancer = lb
		p.Tenants = append(p.Tenants, tp)
		add := func(spec vmSpec, role string) {
			number++
			n := spec.node(NodeName(cluster, number), number, role, z.az)
			n.Tenant, n.Image = tenant, s.BaseImageName
			n.SecurityGroups = []string{SecurityGroupDefault}
			n.FloatingIP = s.AllocateFloatingIPToAllNodes && z.az.ExternalNetworkID != ""
			p.Nodes = append(p.Nodes, n)
		}
		for range ServersPerAZ {
			add(specs.server, RoleServer)
		}
		for range a.WorkerNodesCount {
			add(specs.worker, RoleAgent)
		}
	}
	return p, nil
}
