package ranchercluster

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeManagedAttributes(t *testing.T) {
	tests := map[string]struct {
		raw  json.RawMessage
		want ManagedAttributes
	}{
		"the seed's example order": {
			raw: json.RawMessage(`{"name": "production-cluster", "worker_nodes_count": 3, "worker_nodes_flavor_name": "m1.xlarge",
				"worker_nodes_data_volume_size": 102400, "install_longhorn": true, "worker_nodes_longhorn_volume_size": 204800,
				"openstack_offering_uuid_list": ["uuid1", "uuid3"]}`),
			want: ManagedAttributes{Name: "production-cluster", WorkerNodesCount: 3, WorkerNodesFlavorName: "m1.xlarge",
				WorkerNodesDataVolumeSizeMB: 102400, InstallLonghorn: true, WorkerNodesLonghornVolumeSizeMB: 204800,
				OpenStackOfferingUUIDs: []string{"uuid1", "uuid3"}},
		},
		"numbers and booleans as Waldur's form may send them": {
			raw: json.RawMessage(`{"name": "cl1", "worker_nodes_count": "2", "worker_nodes_flavor_name": "m1.large",
				"worker_nodes_data_volume_size": 51200.0, "install_longhorn": "false", "worker_nodes_data_volume_type_name": "ssd"}`),
			want: ManagedAttributes{Name: "cl1", WorkerNodesCount: 2, WorkerNodesFlavorName: "m1.large",
				WorkerNodesDataVolumeSizeMB: 51200, WorkerNodesDataVolumeTypeName: "ssd"},
		},
		"without Longhorn its size is not required": {
			raw: json.RawMessage(`{"name": "cl1", "worker_nodes_count": 1, "worker_nodes_flavor_name": "m1.large",
				"worker_nodes_data_volume_size": 1024, "openstack_offering_uuid_list": []}`),
			want: ManagedAttributes{Name: "cl1", WorkerNodesCount: 1, WorkerNodesFlavorName: "m1.large",
				WorkerNodesDataVolumeSizeMB: 1024, OpenStackOfferingUUIDs: []string{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeManagedAttributes(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A managed cluster is named by the resource's slug, so the order's name
// is free text, as Waldur's names are: only the display name takes it.
func TestManagedOrderNameIsFreeText(t *testing.T) {
	for _, name := range []string{"acc create", "Prod_Cluster", "Cluster für Physik", strings.Repeat("c", 200)} {
		t.Run(name, func(t *testing.T) {
			a, err := DecodeManagedAttributes(managedOrder("a", "name", name))
			if err != nil {
				t.Fatal(err)
			}
			p, err := PlanManaged(context.Background(), goldenSettings(t), a, resource, newCatalog())
			if err != nil {
				t.Fatal(err)
			}
			if p.Cluster.Name != ClusterName(resource.Slug) || p.Cluster.DisplayName != name {
				t.Errorf("cluster %q shown as %q, want %q shown as %q", p.Cluster.Name, p.Cluster.DisplayName, ClusterName(resource.Slug), name)
			}
		})
	}
	// A self-managed cluster is named by the order: Waldur's rule stays.
	_, err := DecodeSelfManagedAttributes(selfManagedOrder(func(m map[string]any) { m["name"] = "acc create" }))
	wantTerminal(t, err, "name: Name must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character")
}

func TestDecodeManagedAttributesRefuses(t *testing.T) {
	tests := map[string]struct {
		raw  json.RawMessage
		want string
	}{
		"nothing names every required attribute": {
			raw: json.RawMessage(`{}`),
			want: "name: This field is required.\nworker_nodes_count: This field is required.\n" +
				"worker_nodes_flavor_name: This field is required.\nworker_nodes_data_volume_size: This field is required.",
		},
		"wrong types name their attribute": {
			raw: managedOrder("a", "worker_nodes_count", 1.5, "install_longhorn", "maybe", "openstack_offering_uuid_list", "a",
				"worker_nodes_flavor_name", 7),
			want: "worker_nodes_count: A valid integer is required.\nworker_nodes_flavor_name: Not a valid string.\n" +
				`openstack_offering_uuid_list: Expected a list of items but got type "str".` + "\ninstall_longhorn: Must be a valid boolean.",
		},
		"Longhorn without its volume size": {
			raw:  managedOrder("a", "worker_nodes_longhorn_volume_size", nil),
			want: "worker_nodes_longhorn_volume_size: This field is required.",
		},
		"no workers": {
			raw:  managedOrder("a", "worker_nodes_count", 0),
			want: "worker_nodes_count: Ensure this value is greater than or equal to 1.",
		},
		"a name no display name can hold": {
			raw:  managedOrder("a", "name", "acc\tcreate"),
			want: `name: "acc\tcreate" has control characters`,
		},
		"a flavor name with a control character": {
			raw:  managedOrder("a", "worker_nodes_flavor_name", "m1.large\n"),
			want: `worker_nodes_flavor_name: "m1.large\n" has leading or trailing space`,
		},
		"attributes that are no object": {
			raw:  json.RawMessage(`[1]`),
			want: "the order's attributes are not a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}",
		},
		"text after the object": {
			raw:  json.RawMessage(`{}0`),
			want: "the order's attributes are not a JSON object: text after the object",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeManagedAttributes(tc.raw)
			wantTerminal(t, err, tc.want)
		})
	}
}

// selfManagedOrder is a self-managed order with one server and one agent
// in zone a.
func selfManagedOrder(mutate func(m map[string]any)) json.RawMessage {
	node := func(role string) map[string]any {
		return map[string]any{
			"role": role, "flavor": "m1.large", "subnet": "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
			"system_volume_size": 81920,
			"data_volumes":       []any{map[string]any{"size": 51200, "mount_point": "/opt/rke2_storage", "filesystem": "btrfs"}},
		}
	}
	m := map[string]any{
		"name": "dev-cluster", "tenant": zoneUUID["a"], "install_longhorn": false,
		"nodes":          []any{node("server"), node("agent")},
		"ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7 admin@example",
		"vm_project":     "uuid-project",
	}
	if mutate != nil {
		mutate(m)
	}
	return jsonOf(m)
}

func nodeOf(m map[string]any, i int) map[string]any { return m["nodes"].([]any)[i].(map[string]any) }

func TestDecodeSelfManagedAttributes(t *testing.T) {
	tests := map[string]struct {
		raw   json.RawMessage
		check func(t *testing.T, a SelfManagedAttributes)
	}{
		"the seed's example order": {
			raw: selfManagedOrder(nil),
			check: func(t *testing.T, a SelfManagedAttributes) {
				want := NodeAttributes{Role: "server", Flavor: "m1.large", Subnet: "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b", SystemVolumeSizeMB: 81920,
					DataVolumes: []DataVolumeAttributes{{SizeMB: 51200, MountPoint: "/opt/rke2_storage", Filesystem: "btrfs"}}}
				if a.Name != "dev-cluster" || a.Tenant != zoneUUID["a"] || len(a.Nodes) != 2 || !reflect.DeepEqual(a.Nodes[0], want) ||
					a.VMProject != "uuid-project" {
					t.Errorf("got %+v", a)
				}
			},
		},
		"a data volume without filesystem gets ext4": {
			raw: selfManagedOrder(func(m map[string]any) {
				nodeOf(m, 0)["data_volumes"] = []any{map[string]any{"size": 1024, "mount_point": "/data"}}
			}),
			check: func(t *testing.T, a SelfManagedAttributes) {
				if a.Nodes[0].DataVolumes[0].Filesystem != "ext4" {
					t.Errorf("volume %+v", a.Nodes[0].DataVolumes[0])
				}
			},
		},
		"security groups as names or Waldur's nested objects": {
			raw: selfManagedOrder(func(m map[string]any) {
				m["security_groups"] = []any{"k8s", map[string]any{"name": "web"}}
			}),
			check: func(t *testing.T, a SelfManagedAttributes) {
				if !reflect.DeepEqual(a.SecurityGroups, []string{"k8s", "web"}) {
					t.Errorf("groups %v", a.SecurityGroups)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := DecodeSelfManagedAttributes(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, a)
		})
	}
}

func TestDecodeSelfManagedAttributesRefuses(t *testing.T) {
	tests := map[string]struct {
		mutate func(m map[string]any)
		want   string
	}{
		"no nodes": {
			mutate: func(m map[string]any) { m["nodes"] = []any{} },
			want:   "nodes: This list may not be empty.",
		},
		"a node's bad values name the node and attribute": {
			mutate: func(m map[string]any) {
				n := nodeOf(m, 1)
				n["role"], n["subnet"], n["system_volume_size"] = "worker", "net-1", 10
			},
			want: "nodes[1].system_volume_size: Ensure this value is greater than or equal to 64.\n" +
				`nodes[1].role: "worker" is not a valid choice.` + "\n" +
				`nodes[1].subnet: "net-1" is not a Neutron subnet id (a UUID)`,
		},
		"a mount point twice on one node": {
			mutate: func(m map[string]any) {
				nodeOf(m, 0)["data_volumes"] = []any{
					map[string]any{"size": 1024, "mount_point": "/data"}, map[string]any{"size": 1024, "mount_point": "/data"}}
			},
			want: "nodes[0].data_volumes: Each mount point can be specified once at most.",
		},
		"a data volume's bad mount point and filesystem": {
			mutate: func(m map[string]any) {
				nodeOf(m, 0)["data_volumes"] = []any{map[string]any{"size": 0, "mount_point": "opt/../x", "filesystem": "ntfs"}}
			},
			want: "nodes[0].data_volumes[0].size: Ensure this value is greater than or equal to 1.\n" +
				`nodes[0].data_volumes[0].mount_point: "opt/../x" is not an absolute, clean path other than /` + "\n" +
				`nodes[0].data_volumes[0].filesystem: "ntfs" is not one of btrfs, ext4, xfs`,
		},
		"an SSH key that is no public key": {
			mutate: func(m map[string]any) { m["ssh_public_key"] = "3f2a9c1e-uuid-of-a-waldur-key" },
			want:   "ssh_public_key: is not an OpenSSH public key (ssh-ed25519 AAAA... comment)",
		},
		"a node that is no mapping": {
			mutate: func(m map[string]any) { m["nodes"] = []any{"server"} },
			want:   "nodes[0]: Invalid data. Expected a dictionary, but got str.",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeSelfManagedAttributes(selfManagedOrder(tc.mutate))
			wantTerminal(t, err, tc.want)
		})
	}
}

func TestDecodeUpdateAttributes(t *testing.T) {
	five, name := 5, "new-name"
	tests := map[string]struct {
		raw  string
		want UpdateAttributes
		err  string
	}{
		"a worker count":                  {raw: `{"worker_nodes_count": 5}`, want: UpdateAttributes{WorkerNodesCount: &five}},
		"a name":                          {raw: `{"name": "new-name"}`, want: UpdateAttributes{Name: &name}},
		"a server count":                  {raw: `{"server_nodes_count": 5}`, want: UpdateAttributes{ServerNodesCount: &five}},
		"nodes to remove":                 {raw: `{"remove_nodes": ["a-rancher-node-2"]}`, want: UpdateAttributes{RemoveNodes: []string{"a-rancher-node-2"}}},
		"no server":                       {raw: `{"server_nodes_count": 0}`, err: "server_nodes_count: Ensure this value is greater than or equal to 1."},
		"nothing changes nothing":         {raw: `{}`},
		"null attributes change nothing":  {raw: `null`},
		"the last agent is never removed": {raw: `{"worker_nodes_count": 0}`, err: "worker_nodes_count: Ensure this value is greater than or equal to 1."},
		"a name Waldur refuses":           {raw: `{"name": "-x-"}`, err: "name: Name must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			got, err := DecodeUpdateAttributes(json.RawMessage(tc.raw))
			if tc.err != "" {
				wantTerminal(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v want %+v", got, tc.want)
			}
		})
	}
}
