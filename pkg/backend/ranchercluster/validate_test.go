package ranchercluster

import (
	"context"
	"errors"
	"testing"

	"github.com/sitebus/sitebus/pkg/fault"
)

// dynamicZone makes zone name of the managed fixture use dynamic storage.
func dynamicZone(name string) []any {
	var out []any
	for _, z := range []string{"a", "b", "c"} {
		m := zoneRaw(z)
		if z == name {
			m["storage_mode"] = StorageDynamic
		}
		out = append(out, m)
	}
	return out
}

// The fixture's totals over 3 zones (2 workers of m1.xlarge, Longhorn):
// 90 cores, 184320 MB RAM, 3720 GB = 3809280 MB of volumes.
func TestValidateManagedRules(t *testing.T) {
	tests := map[string]struct {
		settings map[string]any
		order    func() []byte
		catalog  func(c *fakeCatalog)
		want     string // "" passes
	}{
		"read-only mode refuses every order": {
			settings: managedRaw("read_only_mode", true),
			want:     "Rancher integration is in read-only mode.",
		},
		"without read-only mode the order passes": {},
		"an offering not in the settings' list is not available": {
			order: func() []byte { return managedOrder("abd") },
			want:  "openstack_offering_uuid_list: These OpenStack offerings are not available: " + zoneUUID["d"],
		},
		"no offering at all": {
			order: func() []byte { return managedOrder("") },
			want:  "openstack_offering_uuid_list: Please select at least one OpenStack offering.",
		},
		"an even number of offerings": {
			order: func() []byte { return managedOrder("ab") },
			want:  "openstack_offering_uuid_list: Number of selected OpenStack offerings should be odd (1, 3, 5)",
		},
		"one offering is odd": {
			order: func() []byte { return managedOrder("b") },
		},
		"an offering selected twice": {
			order: func() []byte { return managedOrder("aab") },
			want:  "openstack_offering_uuid_list: OpenStack offering " + zoneUUID["a"] + " is selected more than once.",
		},
		"the worker flavor missing in one zone": {
			catalog: func(c *fakeCatalog) { c.without = map[string][]string{"az-b": {"m1.xlarge"}} },
			want:    "worker_nodes_flavor_name: Flavor is not available in OpenStack offering 'Zone b': m1.xlarge",
		},
		"every missing flavor of every zone at once": {
			catalog: func(c *fakeCatalog) {
				c.without = map[string][]string{"az-b": {"m1.xlarge"}, "az-c": {"m1.large", "m1.medium"}}
			},
			want: "worker_nodes_flavor_name: Flavor is not available in OpenStack offering 'Zone b': m1.xlarge\n" +
				"backend_settings.managed_rancher_server_flavor_name: Flavor is not available in OpenStack offering 'Zone c': m1.large\n" +
				"backend_settings.managed_rancher_load_balancer_flavor_name: Flavor is not available in OpenStack offering 'Zone c': m1.medium",
		},
		"a worker flavor below the agent's RAM requirement": {
			order: func() []byte { return managedOrder("a", "worker_nodes_flavor_name", "m1.tiny") },
			want:  "worker_nodes_flavor_name: Flavor m1.tiny does not meet requirements. RAM requirement is 1024",
		},
		"a server flavor below the server's CPU requirement": {
			settings: managedRaw("managed_rancher_server_flavor_name", "m1.small"),
			order:    func() []byte { return managedOrder("a") },
			want:     "backend_settings.managed_rancher_server_flavor_name: Flavor m1.small does not meet requirements. CPU requirement is 2",
		},
		"a worker flavor the offering's flavors_regex leaves out": {
			settings: managedRaw("flavors_regex", `^m1\.(large|medium)$`),
			want:     "worker_nodes_flavor_name: Flavor m1.xlarge is not offered here (it does not match the offering's flavors_regex).",
		},
		"an unknown volume type in a dynamic zone": {
			settings: managedRaw("openstack_offering_uuid_list", dynamicZone("b")),
			order:    func() []byte { return managedOrder("abc", "worker_nodes_data_volume_type_name", "nvme") },
			want:     "worker_nodes_data_volume_type_name: Volume type nvme is not available in OpenStack offering Zone b",
		},
		"an offering's volume type missing in a dynamic zone": {
			settings: managedRaw("openstack_offering_uuid_list", dynamicZone("c"), "managed_rancher_server_system_volume_type_name", "ssd"),
			catalog:  func(c *fakeCatalog) { c.without = map[string][]string{"az-c": {"ssd"}} },
			want:     "backend_settings.managed_rancher_server_system_volume_type_name: Volume type ssd is not available in OpenStack offering Zone c",
		},
		"known volume types in a dynamic zone pass": {
			settings: managedRaw("openstack_offering_uuid_list", dynamicZone("b")),
			order: func() []byte {
				return managedOrder("abc", "worker_nodes_data_volume_type_name", "ssd", "worker_nodes_longhorn_volume_type_name", "hdd")
			},
		},
		"volume types are not checked in fixed storage mode": {
			order: func() []byte { return managedOrder("abc", "worker_nodes_data_volume_type_name", "nvme") },
		},
		"cores over the tenant maximum": {
			settings: managedRaw("managed_rancher_tenant_max_cpu", 89),
			want:     "worker_nodes_count: The requested total cores limit 90 cores exceeds the maximum allowed 89 for tenants.",
		},
		"cores at the tenant maximum": {
			settings: managedRaw("managed_rancher_tenant_max_cpu", 90, "managed_rancher_tenant_max_ram", 180, "managed_rancher_tenant_max_disk", 3720),
		},
		"RAM over the tenant maximum, compared in MB": {
			settings: managedRaw("managed_rancher_tenant_max_ram", 179),
			want:     "worker_nodes_count: The requested total ram limit 184320 MB exceeds the maximum allowed 183296 for tenants.",
		},
		"storage over the tenant maximum, compared in MB": {
			settings: managedRaw("managed_rancher_tenant_max_disk", 3719),
			want:     "worker_nodes_count: The requested total storage limit 3809280 MB exceeds the maximum allowed 3808256 for tenants.",
		},
		"a self-managed offering takes no managed order": {
			settings: selfManagedRaw(),
			want:     "this offering's deployment_mode is self_managed, not managed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw := tc.settings
			if raw == nil {
				raw = managedRaw()
			}
			s := mustSettings(t, raw)
			order := managedOrder("abc")
			if tc.order != nil {
				order = tc.order()
			}
			cat := newCatalog()
			if tc.catalog != nil {
				tc.catalog(cat)
			}
			err := ValidateManaged(context.Background(), s, mustManaged(t, order), cat)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantTerminal(t, err, tc.want)
		})
	}
}

func TestValidateManagedPassesCatalogFailuresOnAsRetryable(t *testing.T) {
	s := mustSettings(t, managedRaw())
	cat := newCatalog()
	cat.err = errors.New("503 Service Unavailable")
	err := ValidateManaged(context.Background(), s, mustManaged(t, managedOrder("abc")), cat)
	if err == nil || fault.IsTerminal(err) || err.Error() != "listing the flavors of Zone a: 503 Service Unavailable" {
		t.Fatalf("err = %v (terminal %v)", err, fault.IsTerminal(err))
	}
}

func TestValidateManagedAsksNoCatalogForARefusedSelection(t *testing.T) {
	s := mustSettings(t, managedRaw())
	cat := newCatalog()
	if err := ValidateManaged(context.Background(), s, mustManaged(t, managedOrder("ab")), cat); err == nil {
		t.Fatal("an even selection passed")
	}
	if cat.calls != 0 {
		t.Errorf("%d catalog calls for an order refused by its selection", cat.calls)
	}
}

func TestValidateSelfManagedRules(t *testing.T) {
	withFlavor := func(c *fakeCatalog) {
		c.flavors = append(c.flavors, Flavor{ID: "f-diskless", Name: "m1.diskless", VCPUs: 2, RAMMB: 4096})
	}
	tests := map[string]struct {
		settings map[string]any
		mutate   func(m map[string]any)
		catalog  func(c *fakeCatalog)
		want     string
	}{
		"the seed's example order passes": {},
		"read-only mode refuses every order": {
			settings: selfManagedRaw("read_only_mode", true),
			want:     "Rancher integration is in read-only mode.",
		},
		"a managed offering takes no self-managed order": {
			settings: managedRaw(),
			want:     "this offering's deployment_mode is managed, not self_managed",
		},
		"two servers": {
			mutate: func(m map[string]any) { nodeOf(m, 1)["role"] = "server" },
			want:   "nodes: Total count of server nodes must be 1, 3 or 5. You have got 2 nodes.\nnodes: Count of agent nodes must be min 1.",
		},
		"no server": {
			mutate: func(m map[string]any) { nodeOf(m, 0)["role"] = "agent" },
			want:   "nodes: Total count of server nodes must be 1, 3 or 5. You have got 0 nodes.",
		},
		"a tenant for the cluster and a node": {
			mutate: func(m map[string]any) { nodeOf(m, 1)["tenant"] = zoneUUID["b"] },
			want:   "nodes[1].tenant: Either cluster or node tenant should be specified.",
		},
		"no tenant anywhere": {
			mutate: func(m map[string]any) { delete(m, "tenant") },
			want:   "nodes[0].tenant: Either cluster or node tenant should be specified.\nnodes[1].tenant: Either cluster or node tenant should be specified.",
		},
		"each node in its own zone": {
			mutate: func(m map[string]any) {
				delete(m, "tenant")
				nodeOf(m, 0)["tenant"], nodeOf(m, 1)["tenant"] = zoneUUID["a"], zoneUUID["c"]
			},
		},
		"a tenant that is not one of the offering's zones": {
			mutate: func(m map[string]any) { m["tenant"] = zoneUUID["d"] },
			want:   "tenant: These OpenStack offerings are not available: " + zoneUUID["d"],
		},
		"flavor and cpu given together": {
			mutate: func(m map[string]any) { nodeOf(m, 0)["cpu"] = 2 },
			want:   "nodes[0].flavor: Either flavor or cpu and memory should be specified.",
		},
		"cpu without memory": {
			mutate: func(m map[string]any) { delete(nodeOf(m, 0), "flavor"); nodeOf(m, 0)["cpu"] = 2 },
			want:   "nodes[0].flavor: Either flavor or cpu and memory should be specified.",
		},
		"cpu and memory no flavor has": {
			mutate: func(m map[string]any) {
				delete(nodeOf(m, 0), "flavor")
				nodeOf(m, 0)["cpu"], nodeOf(m, 0)["memory"] = 64, 1024
			},
			want: "nodes[0].flavor: No matching flavor found.",
		},
		"a flavor the zone does not have": {
			mutate: func(m map[string]any) { nodeOf(m, 1)["flavor"] = "m9.huge" },
			want:   "nodes[1].flavor: No matching flavor found.",
		},
		"a server flavor below the server's requirement": {
			mutate: func(m map[string]any) { nodeOf(m, 0)["flavor"] = "m1.small" },
			want:   "nodes[0].flavor: Flavor m1.small does not meet requirements. CPU requirement is 2",
		},
		"a volume type the zone does not have": {
			mutate: func(m map[string]any) { nodeOf(m, 1)["system_volume_type"] = "nvme" },
			want:   "nodes[1].system_volume_type: Volume type nvme is not available in OpenStack offering Zone a",
		},
		"no system volume size and a flavor without root disk": {
			mutate: func(m map[string]any) {
				delete(nodeOf(m, 0), "system_volume_size")
				nodeOf(m, 0)["flavor"] = "m1.diskless"
			},
			catalog: withFlavor,
			want:    "nodes[0].system_volume_size: This field is required: flavor m1.diskless has no root disk to size the system volume by.",
		},
		"no system volume size takes the flavor's root disk": {
			mutate: func(m map[string]any) { delete(nodeOf(m, 0), "system_volume_size") },
		},
		"a subnet the zone does not have": {
			mutate: func(m map[string]any) { nodeOf(m, 1)["subnet"] = "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d" },
			want: "nodes[1].subnet: There is no subnet 6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d in OpenStack offering Zone a " +
				"that its nodes may use (one of its project's, or on a shared network).",
		},
		"a subnet one node's zone does not have": {
			mutate: func(m map[string]any) {
				delete(m, "tenant")
				nodeOf(m, 0)["tenant"], nodeOf(m, 1)["tenant"] = zoneUUID["a"], zoneUUID["c"]
			},
			catalog: func(c *fakeCatalog) {
				c.without = map[string][]string{"az-c": {"5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"}}
			},
			want: "nodes[1].subnet: There is no subnet 5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b in OpenStack offering Zone c " +
				"that its nodes may use (one of its project's, or on a shared network).",
		},
		"a security group the zone does not have": {
			mutate: func(m map[string]any) { m["security_groups"] = []any{"k8s-nodes", "web"} },
			want:   "security_groups[1]: There is no security group web in OpenStack offering Zone a.",
		},
		"a security group by id": {
			mutate: func(m map[string]any) { m["security_groups"] = []any{"sg-nodes"} },
		},
		"no default group to fall back on": {
			catalog: func(c *fakeCatalog) { c.without = map[string][]string{"az-a": {"default"}} },
			want:    "security_groups: There is no security group default in OpenStack offering Zone a.",
		},
		"floating IPs from a zone without an external network": {
			settings: func() map[string]any {
				c := zoneRaw("c")
				delete(c, "external_network_id")
				return selfManagedRaw("allocate_floating_ip_to_all_nodes", true,
					"openstack_offering_uuid_list", []any{zoneRaw("a"), zoneRaw("b"), c})
			}(),
			mutate: func(m map[string]any) {
				delete(m, "tenant")
				nodeOf(m, 0)["tenant"], nodeOf(m, 1)["tenant"] = zoneUUID["a"], zoneUUID["c"]
			},
			want: "nodes[1].tenant: OpenStack offering Zone c has no external network (external_network_id), " +
				"and this offering gives every node a floating IP (allocate_floating_ip_to_all_nodes).",
		},
		"floating IPs on a subnet no router connects to the external network": {
			settings: selfManagedRaw("allocate_floating_ip_to_all_nodes", true),
			mutate:   func(m map[string]any) { nodeOf(m, 1)["subnet"] = "7a0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b" },
			catalog: func(c *fakeCatalog) {
				c.subnets = append(c.subnets, "7a0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
				c.unrouted = []string{"7a0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"}
			},
			want: "nodes[1].subnet: Subnet 7a0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b has no router to the external network " +
				zoneRaw("a")["external_network_id"].(string) + " of OpenStack offering Zone a, so its nodes cannot have " +
				"the floating IPs this offering gives them (allocate_floating_ip_to_all_nodes).",
		},
		"an unrouted subnet is fine without floating IPs": {
			catalog: func(c *fakeCatalog) { c.unrouted = c.subnets },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw := tc.settings
			if raw == nil {
				raw = selfManagedRaw()
			}
			s := mustSettings(t, raw)
			a, err := DecodeSelfManagedAttributes(selfManagedOrder(tc.mutate))
			if err != nil {
				t.Fatal(err)
			}
			cat := newCatalog()
			if tc.catalog != nil {
				tc.catalog(cat)
			}
			err = ValidateSelfManaged(context.Background(), s, a, cat)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantTerminal(t, err, tc.want)
		})
	}
}
