package ranchercluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/sitebus/sitebus/pkg/backend"
)

// ValidateSelfManaged checks a self-managed create order: read-only mode,
// the node roles, the tenant (the order's or each node's, one of the
// offering's zones, with an external network when every node gets a
// floating IP), the security groups in each zone, and each node's subnet,
// flavor, volumes and volume types in its zone. Problems of the order are *AttributeErrors (terminal); a failed
// catalog lookup is returned as it is (retryable).
func ValidateSelfManaged(ctx context.Context, s *Settings, a SelfManagedAttributes, cat Catalog) error {
	_, err := planSelfManaged(ctx, s, a, backend.Resource{}, cat, false)
	return err
}

// PlanSelfManaged validates a self-managed create order (as
// ValidateSelfManaged) and lays out its nodes: only VMs, in the order's
// subnets and security groups, named <name>-rancher-node-<n> as Mastermind
// names them; no tenant, network, group or load balancer is made.
func PlanSelfManaged(ctx context.Context, s *Settings, a SelfManagedAttributes, r backend.Resource, cat Catalog) (*Plan, error) {
	return planSelfManaged(ctx, s, a, r, cat, true)
}

func planSelfManaged(ctx context.Context, s *Settings, a SelfManagedAttributes, r backend.Resource, cat Catalog, plan bool) (*Plan, error) {
	if err := readOnly(s); err != nil {
		return nil, err
	}
	if s.Managed() {
		return nil, &AttributeError{Msg: "this offering's deployment_mode is managed, not self_managed"}
	}
	if plan {
		if err := checkResource(r, false); err != nil {
			return nil, err
		}
	}
	var errs []error
	bad := func(attr, format string, args ...any) {
		errs = append(errs, &AttributeError{Attribute: attr, Msg: fmt.Sprintf(format, args...)})
	}
	servers, agents := 0, 0
	for _, n := range a.Nodes {
		switch n.Role {
		case RoleServer:
			servers++
		case RoleAgent:
			agents++
		}
	}
	if servers != 1 && servers != 3 && servers != 5 {
		// Waldur prints the number of all nodes here; the servers' is meant.
		bad("nodes", msgServerCount, servers)
	}
	if agents == 0 {
		bad("nodes", msgAgentCount)
	}
	// The zone of each node: the order's tenant or the node's, never both.
	azOf := make([]AZ, len(a.Nodes))
	for i, n := range a.Nodes {
		t := a.Tenant
		if (a.Tenant == "") == (n.Tenant == "") {
			bad(fmt.Sprintf("nodes[%d].tenant", i), msgTenantEither)
			continue
		}
		if n.Tenant != "" {
			t = n.Tenant
		}
		attr := "tenant"
		if n.Tenant != "" {
			attr = fmt.Sprintf("nodes[%d].tenant", i)
		}
		az, ok := s.Offering(t)
		if !ok {
			bad(attr, msgUnavailable, t)
			continue
		}
		if s.AllocateFloatingIPToAllNodes && az.ExternalNetworkID == "" {
			// Mastermind's Waldur would make the node without the
			// floating IP it was told to give it; a node nobody can reach
			// is refused instead, before anything is made.
			bad(attr, "OpenStack offering %s has no external network (external_network_id), and this offering gives every node a floating IP (allocate_floating_ip_to_all_nodes).", az.Label())
		}
		azOf[i] = az
	}
	if err := joinAttr(dedupe(errs)); err != nil {
		return nil, err
	}

	// A zone's volume types are looked up when its storage is dynamic or
	// one of its nodes names a type.
	typed := map[string]bool{}
	for i, n := range a.Nodes {
		t := n.SystemVolumeType != "" || azOf[i].StorageMode == StorageDynamic
		for _, d := range n.DataVolumes {
			t = t || d.VolumeType != ""
		}
		typed[azOf[i].UUID] = typed[azOf[i].UUID] || t
	}
	zones := map[string]zone{}
	for i := range a.Nodes {
		az := azOf[i]
		if _, done := zones[az.UUID]; done {
			continue
		}
		z, err := lookup(ctx, cat, az, typed[az.UUID])
		if err != nil {
			return nil, err
		}
		zones[az.UUID] = z
	}

	groups := a.SecurityGroups
	if len(groups) == 0 {
		groups = []string{SecurityGroupDefault} // as Mastermind's expand_added_nodes
	}
	if err := checkNetworking(ctx, cat, a, azOf, groups, s.AllocateFloatingIPToAllNodes, bad); err != nil {
		return nil, err
	}

	p := common(s, r, ModeSelfManaged)
	p.Cluster = clusterSpec(s, a.Name, a.Name, a.Description)
	p.InstallLonghorn = a.InstallLonghorn
	for i, n := range a.Nodes {
		at := fmt.Sprintf("nodes[%d].", i)
		z := zones[azOf[i].UUID]
		var f Flavor
		var ok bool
		switch {
		case n.Flavor != "" && (n.CPU != 0 || n.MemoryMB != 0), n.Flavor == "" && (n.CPU == 0 || n.MemoryMB == 0):
			bad(at+"flavor", msgFlavorEither)
			continue
		case n.Flavor != "":
			f, ok = z.flavor(n.Flavor)
		default:
			f, ok = z.smallestFlavor(n.CPU, n.MemoryMB)
		}
		if !ok {
			bad(at+"flavor", msgNoFlavor)
			continue
		}
		if s.FlavorsRegex != nil && !s.FlavorsRegex.MatchString(f.Name) {
			bad(at+"flavor", "Flavor %s is not offered here (it does not match the offering's flavors_regex).", f.Name)
		}
		if msg := meetsRole(f, n.Role); msg != "" {
			bad(at+"flavor", "%s", msg)
		}
		typ := func(attr, nameOrID string) string {
			if nameOrID == "" {
				return ""
			}
			t, ok := z.volumeType(nameOrID)
			if !ok {
				bad(attr, msgTypeMissing, nameOrID, z.az.Label())
			}
			return t.Name
		}
		sys := VolumePlan{SizeGB: gbOf(n.SystemVolumeSizeMB), Type: typ(at+"system_volume_type", n.SystemVolumeType)}
		if n.SystemVolumeSizeMB == 0 {
			sys.SizeGB = f.DiskGB
			if sys.SizeGB == 0 {
				bad(at+"system_volume_size", "This field is required: flavor %s has no root disk to size the system volume by.", f.Name)
			}
		}
		spec := vmSpec{flavor: f, system: sys}
		for k, d := range n.DataVolumes {
			spec.data = append(spec.data, VolumePlan{
				SizeGB: gbOf(d.SizeMB), Type: typ(fmt.Sprintf("%sdata_volumes[%d].volume_type", at, k), d.VolumeType),
				Device: DataDevice(s.NodeDiskDriver, k+1), MountPoint: d.MountPoint, Filesystem: d.Filesystem,
			})
		}
		number := i + 1
		node := spec.node(NodeName(a.Name, number), number, n.Role, z.az)
		node.SubnetID, node.Image = n.Subnet, s.BaseImageName
		node.SecurityGroups = groups
		node.FloatingIP = s.AllocateFloatingIPToAllNodes
		node.SSHPublicKey = n.SSHPublicKey
		if node.SSHPublicKey == "" {
			node.SSHPublicKey = a.SSHPublicKey
		}
		p.Nodes = append(p.Nodes, node)
	}
	if err := joinAttr(dedupe(errs)); err != nil {
		return nil, err
	}
	return p, nil
}

// checkNetworking looks up, in each zone the order uses, its nodes' subnets
// and the order's security groups (names or ids), and reports each one
// the zone's credentials cannot use through bad. Mastermind's Waldur
// checked them as its own objects of the user's tenant; here they are the
// zone's, so an order can only name what the zone's project owns or what
// is shared with it. When the nodes get floating IPs, each subnet must
// also be routed to its zone's external network: Neutron refuses the
// floating IP of a port on a subnet no router connects to it, which would
// otherwise fail the order at the node step, after its VMs are made. A
// failed lookup is returned as it is (retryable).
func checkNetworking(ctx context.Context, cat Catalog, a SelfManagedAttributes, azOf []AZ, groups []string, floating bool,
	bad func(attr, format string, args ...any),
) error {
	listed := map[string][]SecurityGroup{} // by zone UUID
	usable := map[string]bool{}            // by zone UUID and subnet id
	routed := map[string]bool{}            // by zone UUID and subnet id
	for i, n := range a.Nodes {
		az := azOf[i]
		if _, done := listed[az.UUID]; !done {
			gs, err := cat.SecurityGroups(ctx, az)
			if err != nil {
				return fmt.Errorf("listing the security groups of %s: %w", az.Label(), err)
			}
			listed[az.UUID] = gs
			for k, g := range groups {
				if !slices.ContainsFunc(gs, func(sg SecurityGroup) bool { return sg.ID == g || sg.Name == g }) {
					attr := fmt.Sprintf("security_groups[%d]", k)
					if len(a.SecurityGroups) == 0 {
						attr = "security_groups"
					}
					bad(attr, "There is no security group %s in OpenStack offering %s.", g, az.Label())
				}
			}
		}
		key := az.UUID + "/" + n.Subnet
		ok, seen := usable[key]
		if !seen {
			var err error
			if _, ok, err = cat.Subnet(ctx, az, n.Subnet); err != nil {
				return fmt.Errorf("looking up subnet %s in %s: %w", n.Subnet, az.Label(), err)
			}
			usable[key] = ok
		}
		if !ok {
			bad(fmt.Sprintf("nodes[%d].subnet", i), "There is no subnet %s in OpenStack offering %s that its nodes may use (one of its project's, or on a shared network).", n.Subnet, az.Label())
			continue
		}
		if !floating || az.ExternalNetworkID == "" {
			continue // a zone without one is refused with the tenant
		}
		reaches, seen := routed[key]
		if !seen {
			var err error
			if reaches, err = cat.SubnetReaches(ctx, az, n.Subnet, az.ExternalNetworkID); err != nil {
				return fmt.Errorf("looking up the routers of subnet %s in %s: %w", n.Subnet, az.Label(), err)
			}
			routed[key] = reaches
		}
		if !reaches {
			bad(fmt.Sprintf("nodes[%d].subnet", i), "Subnet %s has no router to the external network %s of OpenStack offering %s, so its nodes cannot have the floating IPs this offering gives them (allocate_floating_ip_to_all_nodes).", n.Subnet, az.ExternalNetworkID, az.Label())
		}
	}
	return nil
}
