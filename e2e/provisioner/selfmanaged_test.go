package provisioner_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/vmboot"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

const (
	orderKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOrderKeyOfTheCluster alice@lab"
	nodeKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINodeKeyOfOneAgent bob@lab"
)

// userNetwork is what the user of a self-managed order made in the zone's
// project before ordering: a network and subnet routed to the external
// network, and a security group for the nodes; unrouted is a subnet of
// the project that no router connects to the external network;
// otherSubnet is a subnet of another project, which the order must not be
// able to use.
type userNetwork struct {
	subnet, group, unrouted, otherSubnet string
}

// adminClients are gophercloud's Neutron and Keystone clients as the
// simulator's admin, who acts at the API as a user of the zone's project
// would (or as an operator deleting things by hand).
func adminClients(t *testing.T, s *site) (network, identity *gophercloud.ServiceClient) {
	t.Helper()
	o := s.OpenStack.Options()
	provider, err := gopenstack.AuthenticatedClient(ctx(t), gophercloud.AuthOptions{
		IdentityEndpoint: s.OpenStack.AuthURL(), Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if network, err = gopenstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: "RegionOne"}); err != nil {
		t.Fatal(err)
	}
	if identity, err = gopenstack.NewIdentityV3(provider, gophercloud.EndpointOpts{Region: "RegionOne"}); err != nil {
		t.Fatal(err)
	}
	return network, identity
}

// makeUserNetwork makes the user's objects with gophercloud as the
// simulator's admin, as a user of the zone's project would.
func makeUserNetwork(t *testing.T, s *site) userNetwork {
	t.Helper()
	nc, ic := adminClients(t, s)
	subnetIn := func(project, name, cidr string) string {
		n, err := networks.Create(ctx(t), nc, networks.CreateOpts{Name: name, ProjectID: project}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		sn, err := subnets.Create(ctx(t), nc, subnets.CreateOpts{NetworkID: n.ID, Name: name + "-subnet", CIDR: cidr,
			IPVersion: gophercloud.IPv4, ProjectID: project}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		return sn.ID
	}
	var u userNetwork
	u.subnet = subnetIn("", "lab-net", "10.20.0.0/24")
	rt, err := routers.Create(ctx(t), nc, routers.CreateOpts{Name: "lab-router",
		GatewayInfo: &routers.GatewayInfo{NetworkID: extNetworkID}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routers.AddInterface(ctx(t), nc, rt.ID, routers.AddInterfaceOpts{SubnetID: u.subnet}).Extract(); err != nil {
		t.Fatal(err)
	}
	g, err := groups.Create(ctx(t), nc, groups.CreateOpts{Name: "lab-nodes", Description: "the lab's cluster nodes"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	u.group = g.ID
	u.unrouted = subnetIn("", "lab-isolated", "10.21.0.0/24")
	other, err := projects.Create(ctx(t), ic, projects.CreateOpts{Name: "someone-else", DomainID: openstacksim.DefaultDomainID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	u.otherSubnet = subnetIn(other.ID, "someone-elses-net", "10.30.0.0/24")
	return u
}

// selfManagedAttributes are a self-managed order in the first zone: one
// server and two agents on the user's subnet and group, the order's SSH
// key but for the second agent, which has its own.
func selfManagedAttributes(name string, u userNetwork) map[string]any {
	node := func(role, flavor string) map[string]any {
		return map[string]any{
			"role": role, "flavor": flavor, "subnet": u.subnet, "system_volume_size": 40960,
			"data_volumes": []any{map[string]any{"size": 20480, "mount_point": "/opt/rke2_storage", "filesystem": "btrfs"}},
		}
	}
	agent := node("agent", "m1.large")
	agent["ssh_public_key"] = nodeKey
	return map[string]any{
		"name": name, "tenant": zones[0].uuid, "install_longhorn": false,
		"nodes":           []any{node("server", "m1.large"), node("agent", "m1.large"), agent},
		"security_groups": []any{"lab-nodes"},
		"ssh_public_key":  orderKey,
	}
}

// ids are an inventory's object ids by kind, for a before-and-after
// comparison.
func ids(inv openstacksim.Inventory) map[string][]string {
	out := map[string][]string{}
	add := func(kind string, n int, id func(i int) string) {
		for i := range n {
			out[kind] = append(out[kind], id(i))
		}
	}
	add("project", len(inv.Projects), func(i int) string { return inv.Projects[i].ID })
	add("user", len(inv.Users), func(i int) string { return inv.Users[i].ID })
	add("server", len(inv.Servers), func(i int) string { return inv.Servers[i].ID })
	add("volume", len(inv.Volumes), func(i int) string { return inv.Volumes[i].ID })
	add("network", len(inv.Networks), func(i int) string { return inv.Networks[i].ID })
	add("subnet", len(inv.Subnets), func(i int) string { return inv.Subnets[i].ID })
	add("port", len(inv.Ports), func(i int) string { return inv.Ports[i].ID })
	add("router", len(inv.Routers), func(i int) string { return inv.Routers[i].ID })
	add("security group", len(inv.SecurityGroups), func(i int) string { return inv.SecurityGroups[i].ID })
	add("floating IP", len(inv.FloatingIPs), func(i int) string { return inv.FloatingIPs[i].ID })
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// wantInventory fails t unless OpenStack holds exactly the objects of
// before. (wantNothingLeft's check of the tenants does not fit here: the
// user's router has a gateway port of no project, and another project's
// subnet is part of the setup.)
func wantInventory(t *testing.T, s *site, before map[string][]string, when string) {
	t.Helper()
	after := ids(s.OpenStack.Inventory(""))
	if !maps.EqualFunc(before, after, slices.Equal) {
		t.Errorf("OpenStack %s differs from before the order:\nbefore %v\nafter  %v", when, before, after)
	}
}

func TestSelfManagedOrders(t *testing.T) {
	s := newSiteWith(t, siteOptions{selfManaged: true})
	u := makeUserNetwork(t, s)
	before := ids(s.OpenStack.Inventory(""))

	t.Run("refused before anything is made", func(t *testing.T) {
		tests := map[string]struct {
			mutate func(m map[string]any)
			want   string
		}{
			"a subnet the zone does not have": {
				mutate: func(m map[string]any) { nodeAt(m, 1)["subnet"] = "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d" },
				want:   "nodes[1].subnet: There is no subnet 6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d in OpenStack offering Zone a",
			},
			"another project's subnet": {
				mutate: func(m map[string]any) { nodeAt(m, 0)["subnet"] = u.otherSubnet },
				want:   "nodes[0].subnet: There is no subnet " + u.otherSubnet + " in OpenStack offering Zone a",
			},
			"a security group the zone does not have": {
				mutate: func(m map[string]any) { m["security_groups"] = []any{"lab-nodes", "web"} },
				want:   "security_groups[1]: There is no security group web in OpenStack offering Zone a.",
			},
			"a floating IP on a subnet no router connects to the external network": {
				mutate: func(m map[string]any) { nodeAt(m, 2)["subnet"] = u.unrouted },
				want:   "nodes[2].subnet: Subnet " + u.unrouted + " has no router to the external network " + extNetworkID + " of OpenStack offering Zone a",
			},
			"a zone without an external network": {
				mutate: func(m map[string]any) { m["tenant"] = zones[2].uuid },
				want:   "tenant: OpenStack offering Zone c has no external network (external_network_id)",
			},
		}
		i := 0
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				i++
				cluster := fmt.Sprintf("refused-%d", i)
				attrs := selfManagedAttributes(cluster, u)
				tc.mutate(attrs)
				resUUID := s.wantRefused(t, cluster, attrs, tc.want)
				wantInventory(t, s, before, "after the refusal")
				s.wantNothingLeftButOpenStack(resUUID)
			})
		}
	})

	t.Run("create then terminate leaves only the user's objects", func(t *testing.T) {
		name := "lab-cluster"
		start := time.Now()
		resUUID := s.orderDone(t, "self-managed create", waldursim.CreateOrderRequest{ResourceName: name, Attributes: selfManagedAttributes(name, u)})
		t.Logf("self-managed create (3 nodes): %s from order to done", time.Since(start).Round(time.Millisecond))

		// OpenStack: no tenant, network or group of sitebus's; the order's
		// three nodes in the zone's project, on the user's subnet and
		// group, each with a floating IP and the SSH key.
		inv := s.OpenStack.Inventory("")
		made := ids(inv)
		for _, kind := range []string{"project", "user", "network", "subnet", "router", "security group"} {
			if !slices.Equal(made[kind], before[kind]) {
				t.Errorf("a self-managed create made a %s: %v, before %v", kind, made[kind], before[kind])
			}
		}
		portByID := map[string]openstacksim.Port{}
		for _, p := range inv.Ports {
			portByID[p.ID] = p
		}
		wantKeys := map[string]string{name + "-rancher-node-1": orderKey, name + "-rancher-node-2": orderKey, name + "-rancher-node-3": nodeKey}
		for _, sv := range inv.Servers {
			want, ok := wantKeys[sv.Name]
			if !ok {
				t.Errorf("unexpected VM %s", sv.Name)
				continue
			}
			delete(wantKeys, sv.Name)
			if sv.Status != "ACTIVE" || sv.ProjectID != s.OpenStack.AdminProjectID() || sv.AvailabilityZone != zones[0].az {
				t.Errorf("VM %s is %s in project %s, zone %s", sv.Name, sv.Status, sv.ProjectID, sv.AvailabilityZone)
			}
			if len(sv.FloatingIPs) != 1 {
				t.Errorf("VM %s has floating IPs %v, want one", sv.Name, sv.FloatingIPs)
			}
			for _, pid := range sv.Ports {
				p := portByID[pid]
				if len(p.FixedIPs) != 1 || p.FixedIPs[0].SubnetID != u.subnet || !slices.Equal(p.SecurityGroups, []string{u.group}) {
					t.Errorf("VM %s port %+v, want the user's subnet and group only", sv.Name, p)
				}
			}
			plan, err := vmboot.Parse(sv.UserData)
			if err != nil {
				t.Errorf("VM %s user_data: %v", sv.Name, err)
				continue
			}
			if !slices.Equal(plan.AuthorizedKeys, []string{want}) {
				t.Errorf("VM %s authorizes %q, want %q", sv.Name, plan.AuthorizedKeys, want)
			}
		}
		if len(wantKeys) != 0 {
			t.Errorf("no VM for %v", slices.Sorted(maps.Keys(wantKeys)))
		}

		// Rancher: the cluster named as the order, its nodes active.
		pc, ok := s.Rancher.ProvisioningClusterNamed(name)
		if !ok {
			t.Fatalf("no provisioning cluster %s: %v", name, s.Rancher.Inventory())
		}
		s.wantActiveNodes(t, pc.ClusterID, 3)
		hex := strings.ReplaceAll(resUUID, "-", "")
		if _, ok := s.Keycloak.GroupByPath("waldur", "/c_"+hex); !ok {
			t.Errorf("no Keycloak group c_%s", hex)
		}

		t.Logf("self-managed terminate: %s", s.terminate(t, resUUID, 3))
		s.wantNothingLeftButOpenStack(resUUID)
		wantInventory(t, s, before, "after the terminate")
	})

	t.Run("day two: servers added, named nodes removed", func(t *testing.T) { dayTwo(t, s, u, before) })
}

// dayTwo checks a self-managed cluster's update orders: servers added
// (odd counts only) and named nodes drained and removed, never the last
// server or agent; the terminate then leaves OpenStack as before.
func dayTwo(t *testing.T, s *site, u userNetwork, before map[string][]string) {
	name := "lab-day-two"
	resUUID := s.orderDone(t, "self-managed create", waldursim.CreateOrderRequest{ResourceName: name, Attributes: selfManagedAttributes(name, u)})
	pc, ok := s.Rancher.ProvisioningClusterNamed(name)
	if !ok {
		t.Fatalf("no provisioning cluster %s", name)
	}
	update := func(attrs map[string]any) *waldursim.APIOrder {
		t.Helper()
		orderUUID, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: attrs})
		return s.WaitOrder(orderUUID, "done", "erred")
	}
	vms := func() []string {
		var out []string
		for _, sv := range s.OpenStack.Inventory("").Servers {
			if strings.HasPrefix(sv.Name, name+"-") {
				out = append(out, sv.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	active := func() []string {
		var out []string
		for _, n := range s.Rancher.Nodes(pc.ClusterID) {
			if n.State == "active" {
				out = append(out, n.Hostname)
			}
		}
		slices.Sort(out)
		return out
	}
	node := func(n int) string { return fmt.Sprintf("%s-rancher-node-%d", name, n) }

	// Two servers more: three in all, like the first, each with the
	// order's key.
	if o := update(map[string]any{"server_nodes_count": 3}); o.State != "done" {
		t.Fatalf("three servers %s: %s", o.State, o.ErrorMessage)
	}
	want := []string{node(1), node(2), node(3), node(4), node(5)}
	if got := vms(); !slices.Equal(got, want) {
		t.Errorf("VMs %v after adding servers, want %v", got, want)
	}
	if got := active(); !slices.Equal(got, want) {
		t.Errorf("active Rancher nodes %v after adding servers, want %v", got, want)
	}
	for _, n := range []string{node(4), node(5)} {
		sv := s.OpenStack.ServersNamed(n)
		if len(sv) != 1 {
			t.Fatalf("%d VMs named %s", len(sv), n)
		}
		plan, err := vmboot.Parse(sv[0].UserData)
		if err != nil || !slices.Equal(plan.Roles, []string{"etcd", "controlplane"}) || !slices.Equal(plan.AuthorizedKeys, []string{orderKey}) {
			t.Errorf("new server %s: roles %v, keys %v (%v)", n, plan.Roles, plan.AuthorizedKeys, err)
		}
	}
	if o := update(map[string]any{"server_nodes_count": 4}); o.State != "erred" || !strings.Contains(o.ErrorMessage, "must be 1, 3 or 5") {
		t.Errorf("four servers %s: %q, want erred", o.State, o.ErrorMessage)
	}

	// A named agent: drained, then its VM and Rancher node removed.
	drains := len(s.Rancher.Drains())
	if o := update(map[string]any{"remove_nodes": []any{node(3)}}); o.State != "done" {
		t.Fatalf("remove %s %s: %s", node(3), o.State, o.ErrorMessage)
	}
	if n := len(s.Rancher.Drains()) - drains; n != 1 {
		t.Errorf("%d drains for one removed node", n)
	}
	want = []string{node(1), node(2), node(4), node(5)}
	if got := vms(); !slices.Equal(got, want) {
		t.Errorf("VMs %v after removing %s, want %v", got, node(3), want)
	}
	if got := active(); !slices.Equal(got, want) {
		t.Errorf("active Rancher nodes %v after removing %s, want %v", got, node(3), want)
	}

	// Never the last agent, nor a server count that is even.
	for attrs, msg := range map[string]string{
		node(2): "the cluster would keep no agent node",
		node(4): "the cluster would keep 2 servers, and must keep 1, 3 or 5",
	} {
		if o := update(map[string]any{"remove_nodes": []any{attrs}}); o.State != "erred" || !strings.Contains(o.ErrorMessage, msg) {
			t.Errorf("remove %s %s: %q, want erred with %q", attrs, o.State, o.ErrorMessage, msg)
		}
	}
	if got := vms(); !slices.Equal(got, want) {
		t.Errorf("VMs %v after the refused removals, want %v", got, want)
	}

	s.orderDone(t, "terminate order", waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID})
	s.wantNothingLeftButOpenStack(resUUID)
	wantInventory(t, s, before, "after the day-two terminate")
}

func nodeAt(m map[string]any, i int) map[string]any { return m["nodes"].([]any)[i].(map[string]any) }
