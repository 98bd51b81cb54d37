package ranchercluster

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata")

// goldenSettings: the managed fixture with Vault, Keycloak and ArgoCD on,
// and zone b in dynamic storage mode with typed volumes.
func goldenSettings(t *testing.T, kv ...any) *Settings {
	return mustSettings(t, managedRaw(append([]any{
		"vault_host", "vault.example.com", "vault_token", "hvs.x",
		"keycloak_enabled", true, "keycloak", map[string]any{"keycloak_username": "svc", "keycloak_password": "kc-s3cret"},
		"argocd_k8s_kubeconfig", "apiVersion: v1\nkind: Config\n", "argocd_k8s_namespace", "argocd",
		"openstack_offering_uuid_list", dynamicZone("b"),
		"managed_rancher_server_system_volume_type_name", "ssd", "managed_rancher_server_data_volume_type_name", "ssd",
		"managed_rancher_worker_system_volume_type_name", "hdd",
		"managed_rancher_load_balancer_data_volume_size_gb", 10,
	}, kv...)...))
}

func goldenPlan(t *testing.T) *Plan {
	t.Helper()
	a := mustManaged(t, managedOrder("abc", "worker_nodes_data_volume_type_name", "ssd", "worker_nodes_longhorn_volume_type_name", "hdd"))
	p, err := PlanManaged(context.Background(), goldenSettings(t), a, resource, newCatalog())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs; run go test -run %s -update and review the diff\ngot:\n%s", path, t.Name(), got)
	}
}

func TestManagedPlanOfThreeZonesTwoWorkersAndLonghornIsTheGoldenOne(t *testing.T) {
	b, err := goldenPlan(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "managed-3az.json", append(b, '\n'))
}

// The acceptance scenario's objects (reference E.1 item 1), asserted one
// by one so a change to them fails here and not only as a golden diff.
func TestManagedPlanMakesWhatTheAcceptanceScenarioExpects(t *testing.T) {
	p := goldenPlan(t)
	if p.Cluster.Name != "k8s-production-cluster" || p.Cluster.Namespace != "fleet-default" ||
		p.Cluster.KubernetesVersion != "v1.31.7+rke2r1" || p.Cluster.DataDirectories.K8sDistro != "/opt/rke2_storage/rke2" {
		t.Errorf("cluster %+v", p.Cluster)
	}
	if len(p.Tenants) != 3 {
		t.Fatalf("%d tenants", len(p.Tenants))
	}
	for i, tp := range p.Tenants {
		z := "abc"[i : i+1]
		net := []string{"192.168.42", "192.168.43", "192.168.44"}[i]
		if tp.Name != "os-tenant-physics-production-cluster-987e097d-az-"+z {
			t.Errorf("tenant %d: %s", i, tp.Name)
		}
		sn := tp.Network.Subnet
		if sn.CIDR != net+".0/24" || !reflect.DeepEqual(sn.AllocationPools, []AllocationPool{{Start: net + ".11", End: net + ".200"}}) ||
			sn.GatewayIP != net+".1" || !sn.EnableDHCP {
			t.Errorf("tenant %d subnet %+v", i, sn)
		}
		var rules []string
		for _, g := range tp.SecurityGroups {
			for _, r := range g.Rules {
				rules = append(rules, g.Name+":"+r.Protocol+"/"+strconv.Itoa(r.PortRangeMin)+"-"+strconv.Itoa(r.PortRangeMax)+" from "+r.RemoteIPPrefix)
			}
		}
		if strings.Join(rules, ",") != "k8s_admin:tcp/22-22 from 0.0.0.0/0,k8s_admin:tcp/6443-6443 from 0.0.0.0/0,"+
			"k8s_public:tcp/80-80 from 0.0.0.0/0,k8s_public:tcp/443-443 from 0.0.0.0/0" {
			t.Errorf("tenant %d rules %v", i, rules)
		}
		lb := tp.LoadBalancer
		if lb.Name != "k8s-lb-production-cluster" || lb.FixedIP != net+".10" || lb.Tenant != tp.Name ||
			strings.Join(lb.SecurityGroups, ",") != "k8s_admin,k8s_public,default" || !lb.FloatingIP {
			t.Errorf("tenant %d load balancer %+v", i, lb)
		}
		servers, agents := 0, 0
		for _, n := range p.Nodes {
			if n.OfferingUUID != tp.OfferingUUID {
				continue
			}
			var mounts []string
			for _, d := range n.DataVolumes {
				mounts = append(mounts, d.MountPoint+" "+d.Filesystem+" "+d.Device)
			}
			switch n.Role {
			case RoleServer:
				servers++
				if strings.Join(mounts, ",") != "/opt/rke2_storage btrfs /dev/sdb" {
					t.Errorf("server %s volumes %v", n.Name, mounts)
				}
			case RoleAgent:
				agents++
				if strings.Join(mounts, ",") != "/opt/rke2_storage btrfs /dev/sdb,/opt/longhorn_storage btrfs /dev/sdc" {
					t.Errorf("agent %s volumes %v", n.Name, mounts)
				}
			}
		}
		if servers != 3 || agents != 2 {
			t.Errorf("tenant %d: %d servers, %d agents", i, servers, agents)
		}
	}
	if p.Keycloak == nil || p.Keycloak.ParentGroup != "c_0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d" ||
		p.Keycloak.RoleGroups[0].Group != "c_0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d_cluster-owner" || !p.Vault ||
		p.ArgoCDSecret != "cluster-0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d" || !p.InstallLonghorn {
		t.Errorf("plan %+v keycloak %+v", p, p.Keycloak)
	}
}

// The quota is get_tenant_limits per zone: 3 servers, 2 workers, 1 load
// balancer; in zone b (dynamic) also per volume type.
func TestManagedPlanQuotasAreTheTenantLimits(t *testing.T) {
	p := goldenPlan(t)
	// cores 3×4 + 2×8 + 2; RAM 3×8192 + 2×16384 + 4096; GB 3×(80+100) +
	// 2×(40+100+200) + 20+10.
	fixed := Quota{Cores: 30, RAMMB: 61440, Gigabytes: 1250}
	if !reflect.DeepEqual(p.Tenants[0].Quota, fixed) || !reflect.DeepEqual(p.Tenants[2].Quota, fixed) {
		t.Errorf("fixed zones' quotas %+v %+v", p.Tenants[0].Quota, p.Tenants[2].Quota)
	}
	dynamic := Quota{Cores: 30, RAMMB: 61440, Gigabytes: 1250, GigabytesByType: map[string]int{"ssd": 740, "hdd": 480}}
	if !reflect.DeepEqual(p.Tenants[1].Quota, dynamic) {
		t.Errorf("dynamic zone's quota %+v", p.Tenants[1].Quota)
	}
}

func TestPlanIsDeterministicRoundTripsAndHoldsNoSecret(t *testing.T) {
	a, _ := goldenPlan(t).Marshal()
	b, _ := goldenPlan(t).Marshal()
	if !bytes.Equal(a, b) {
		t.Fatal("two plans of the same order differ")
	}
	p, err := UnmarshalPlan(a)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := p.Marshal(); !bytes.Equal(a, c) {
		t.Error("the plan does not round-trip")
	}
	for _, secret := range []string{"s3cret-key", "ac-s3cret", "hvs.x", "kc-s3cret", "kind: Config"} {
		if bytes.Contains(a, []byte(secret)) {
			t.Errorf("the plan holds %q", secret)
		}
	}
	if _, err := UnmarshalPlan([]byte(`{"version": 2}`)); err == nil || err.Error() != "rancher-cluster plan: version 2, this sitebus reads 1" {
		t.Errorf("another version: %v", err)
	}
}

func TestPlanManagedRefusesAResourceItCannotName(t *testing.T) {
	r := resource
	r.Slug = "Prod_1"
	s := goldenSettings(t)
	_, err := PlanManaged(context.Background(), s, mustManaged(t, managedOrder("abc")), r, newCatalog())
	wantTerminal(t, err, `the resource slug "Prod_1" cannot name a cluster: lower-case letters, digits and '-', starting and ending with a letter or digit (rename the resource)`)
}

func TestSelfManagedPlanMakesOnlyTheNodes(t *testing.T) {
	s := mustSettings(t, selfManagedRaw())
	a, err := DecodeSelfManagedAttributes(selfManagedOrder(func(m map[string]any) {
		m["security_groups"] = []any{"k8s-nodes"}
		n := nodeOf(m, 1)
		delete(n, "flavor")
		n["cpu"], n["memory"] = 3, 1000
	}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanSelfManaged(context.Background(), s, a, resource, newCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tenants) != 0 || len(p.Nodes) != 2 || p.Cluster.Name != "dev-cluster" || p.Mode != ModeSelfManaged {
		t.Fatalf("plan %+v", p)
	}
	for i, n := range p.Nodes {
		if n.Name != "dev-cluster-rancher-node-"+strconv.Itoa(i+1) || n.SubnetID != "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b" ||
			strings.Join(n.SecurityGroups, ",") != "k8s-nodes" || n.Tenant != "" || n.SystemVolume.SizeGB != 80 ||
			!strings.HasPrefix(n.SSHPublicKey, "ssh-ed25519 ") {
			t.Errorf("node %d %+v", i, n)
		}
	}
	// cpu 3 and 1000 MB: the fewest cores that suffice (m1.large has 4).
	if p.Nodes[1].Flavor.Name != "m1.large" {
		t.Errorf("picked %s", p.Nodes[1].Flavor.Name)
	}
}

func TestPlanResize(t *testing.T) {
	tests := map[string]struct {
		workers    int
		settings   []any
		add, gone  []string
		wantErr    string
		perZone    int
		quotaCores int
	}{
		"up adds agents with the lowest free numbers in every zone": {
			workers: 3, add: []string{"k8s-production-cluster-rancher-node-16", "k8s-production-cluster-rancher-node-17",
				"k8s-production-cluster-rancher-node-18"}, perZone: 3, quotaCores: 38,
		},
		"down removes each zone's highest-numbered agents": {
			workers: 1, gone: []string{"k8s-production-cluster-rancher-node-5", "k8s-production-cluster-rancher-node-10",
				"k8s-production-cluster-rancher-node-15"}, perZone: 1, quotaCores: 22,
		},
		"the same count changes nothing":  {workers: 2, perZone: 2, quotaCores: 30},
		"the last agent is never removed": {workers: 0, wantErr: "worker_nodes_count: Count of agent nodes must be min 1."},
		"more than the tenant maxima allow": {
			workers: 3, settings: []any{"managed_rancher_tenant_max_cpu", 100},
			wantErr: "worker_nodes_count: The requested total cores limit 114 cores exceeds the maximum allowed 100 for tenants.",
		},
		"read-only mode": {
			workers: 3, settings: []any{"read_only_mode", true}, wantErr: "Rancher integration is in read-only mode.",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := goldenPlan(t)
			before, _ := p.Marshal()
			out, rs, err := PlanResize(goldenSettings(t, tc.settings...), p, tc.workers)
			if after, _ := p.Marshal(); !bytes.Equal(before, after) {
				t.Error("PlanResize changed the plan it was given")
			}
			if tc.wantErr != "" {
				wantTerminal(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(rs.Add); !reflect.DeepEqual(got, tc.add) {
				t.Errorf("added %v, want %v", got, tc.add)
			}
			if got := names(rs.Remove); !reflect.DeepEqual(got, tc.gone) {
				t.Errorf("removed %v, want %v", got, tc.gone)
			}
			for _, tp := range out.Tenants {
				if got := len(out.Agents(tp.OfferingUUID)); got != tc.perZone {
					t.Errorf("zone %s has %d agents", tp.OfferingSlug, got)
				}
				if tp.Quota.Cores != tc.quotaCores {
					t.Errorf("zone %s quota %+v", tp.OfferingSlug, tp.Quota)
				}
			}
			if out.WorkersPerZone != tc.workers {
				t.Errorf("workers per zone %d", out.WorkersPerZone)
			}
			if len(rs.Add) > 0 {
				n := rs.Add[0]
				if n.SystemVolume.Name != n.Name+"-system" || n.DataVolumes[1].Name != n.Name+"-data-2" || n.DataVolumes[1].MountPoint != LonghornMount {
					t.Errorf("new node %+v", n)
				}
			}
		})
	}
}

func names(list []NodePlan) []string {
	var out []string
	for _, n := range list {
		out = append(out, n.Name)
	}
	return out
}

func TestPlanResizeRefusesASelfManagedCluster(t *testing.T) {
	p := goldenPlan(t)
	p.Mode = ModeSelfManaged
	_, _, err := PlanResize(goldenSettings(t), p, 3)
	wantTerminal(t, err, "worker_nodes_count: only a managed cluster's worker count can change; add or remove its nodes instead")
}

func TestPlanRename(t *testing.T) {
	p := goldenPlan(t)
	out, err := PlanRename(goldenSettings(t), p, "staging")
	if err != nil {
		t.Fatal(err)
	}
	if out.Cluster.DisplayName != "staging" || out.Cluster.Name != "k8s-production-cluster" || p.Cluster.DisplayName != "production-cluster" {
		t.Errorf("renamed %+v from %+v", out.Cluster, p.Cluster)
	}
	_, err = PlanRename(goldenSettings(t), p, "Staging")
	wantTerminal(t, err, "name: Name must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character")
}

// selfManagedPlan is the fixtures' self-managed order (one server, one
// agent) planned.
func selfManagedPlan(t *testing.T) *Plan {
	t.Helper()
	a, err := DecodeSelfManagedAttributes(selfManagedOrder(nil))
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanSelfManaged(context.Background(), mustSettings(t, selfManagedRaw()), a, resource, newCatalog())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanServers(t *testing.T) {
	tests := map[string]struct {
		managed bool
		servers int
		add     []string
		wantErr string
	}{
		"three servers add two like the first": {servers: 3, add: []string{"dev-cluster-rancher-node-3", "dev-cluster-rancher-node-4"}},
		"the same count adds none":             {servers: 1},
		"an even count is refused":             {servers: 2, wantErr: "server_nodes_count: Total count of server nodes must be 1, 3 or 5. You have got 2 nodes."},
		"a managed cluster keeps its servers": {managed: true, servers: 5,
			wantErr: "server_nodes_count: only a self-managed cluster's server count can change; a managed cluster keeps three servers per zone"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, s := selfManagedPlan(t), mustSettings(t, selfManagedRaw())
			if tc.managed {
				p, s = goldenPlan(t), goldenSettings(t)
			}
			out, rs, err := PlanServers(s, p, tc.servers)
			if tc.wantErr != "" {
				wantTerminal(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(rs.Add), tc.add) || len(rs.Remove) != 0 || len(out.Servers()) != tc.servers {
				t.Fatalf("add %v remove %v, %d servers", names(rs.Add), names(rs.Remove), len(out.Servers()))
			}
			for _, n := range rs.Add {
				first := p.Servers()[0]
				if n.Role != RoleServer || n.SubnetID != first.SubnetID || n.Flavor != first.Flavor || n.SSHPublicKey != first.SSHPublicKey ||
					n.SystemVolume.Name != n.Name+"-system" {
					t.Errorf("new server %+v, want it laid out like %+v", n, first)
				}
			}
		})
	}
}

func TestPlanRemoveNodes(t *testing.T) {
	three := func(t *testing.T) *Plan {
		p, _, err := PlanServers(mustSettings(t, selfManagedRaw()), selfManagedPlan(t), 3)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := map[string]struct {
		plan    func(t *testing.T) *Plan
		remove  []string
		wantErr string
		left    int
	}{
		"two of three servers": {plan: three, remove: []string{"dev-cluster-rancher-node-1", "dev-cluster-rancher-node-4"}, left: 2},
		"one of three servers leaves an even count": {plan: three, remove: []string{"dev-cluster-rancher-node-3"},
			wantErr: "remove_nodes: the cluster would keep 2 servers, and must keep 1, 3 or 5."},
		"the last server": {plan: selfManagedPlan, remove: []string{"dev-cluster-rancher-node-1"},
			wantErr: "remove_nodes: the cluster would keep 0 servers, and must keep 1, 3 or 5."},
		"the last agent": {plan: selfManagedPlan, remove: []string{"dev-cluster-rancher-node-2"},
			wantErr: "remove_nodes: the cluster would keep no agent node: Count of agent nodes must be min 1."},
		"a node the cluster does not have": {plan: selfManagedPlan, remove: []string{"dev-cluster-rancher-node-9"},
			wantErr: "remove_nodes: dev-cluster-rancher-node-9 is not a node of this cluster."},
		"a managed cluster's agent": {plan: goldenPlan, remove: []string{"k8s-production-cluster-rancher-node-5"}, left: 14},
		"a managed cluster's server": {plan: goldenPlan, remove: []string{"k8s-production-cluster-rancher-node-1"},
			wantErr: "remove_nodes: k8s-production-cluster-rancher-node-1 is a server: a managed cluster keeps three servers per zone."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := tc.plan(t)
			out, rs, err := PlanRemoveNodes(mustSettings(t, selfManagedRaw()), p, tc.remove)
			if tc.wantErr != "" {
				wantTerminal(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(rs.Remove), tc.remove) || len(rs.Add) != 0 || len(out.Nodes) != tc.left {
				t.Fatalf("remove %v add %v, %d nodes left", names(rs.Remove), names(rs.Add), len(out.Nodes))
			}
		})
	}
}
