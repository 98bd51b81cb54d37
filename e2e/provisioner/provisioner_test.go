package provisioner_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/failpoint"
	"github.com/sitebus/sitebus/pkg/vault"
)

// calls sums a simulator's calls by "METHOD /service/resource" (ids
// dropped), for the report of what one create costs.
func callSummary(calls []openstacksim.Call) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		out[c.Method+" "+shape(c.Path)]++
	}
	return out
}

// shape keeps a path's first two segments and replaces ids by {id}.
func shape(p string) string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range segs {
		if len(s) >= 16 || strings.ContainsAny(s, "0123456789") && len(s) > 8 {
			segs[i] = "{id}"
		}
	}
	if len(segs) > 4 {
		segs = segs[:4]
	}
	return "/" + strings.Join(segs, "/")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func report(t testing.TB, what string, m map[string]int) {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %4d %s\n", m[k], k)
	}
	t.Logf("%s: %d calls\n%s", what, total(m), b.String())
}

func TestManagedCreateThreeZonesThenTerminate(t *testing.T) {
	s := newSite(t)
	name := "physics-prod"
	start := time.Now()
	orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 2)})
	o := s.WaitOrder(orderUUID, "done", "erred")
	wall := time.Since(start)
	if o.State != "done" {
		t.Fatalf("create order %s: %s", o.State, o.ErrorMessage)
	}
	t.Logf("3-zone managed create (3 load balancers, 15 nodes): %s from order event to done", wall.Round(time.Millisecond))

	// OpenStack: per zone a project, network, subnet .11-.200, router,
	// k8s_admin and k8s_public with their rules, a load balancer at .10;
	// 3 servers and 2 workers per zone.
	inv := s.OpenStack.Inventory("")
	var projects []string
	for _, p := range inv.Projects {
		projects = append(projects, p.Name)
	}
	sort.Strings(projects)
	// The project's slug, the resource's, and 8 hex digits of the pair's
	// SHA-256 (so no other project and resource share the tenants).
	vm := "genomics-" + name + "-f810a251"
	wantProjects := []string{"os-tenant-" + vm + "-az-a", "os-tenant-" + vm + "-az-b", "os-tenant-" + vm + "-az-c"}
	if !slices.Equal(projects, wantProjects) {
		t.Errorf("projects %v, want %v", projects, wantProjects)
	}
	if len(inv.Networks) != 3 || len(inv.Subnets) != 3 || len(inv.Routers) != 3 || len(inv.Users) != 3 {
		t.Errorf("networks %d, subnets %d, routers %d, users %d; want 3 each", len(inv.Networks), len(inv.Subnets), len(inv.Routers), len(inv.Users))
	}
	for _, sn := range inv.Subnets {
		prefix := strings.TrimSuffix(sn.CIDR, "0/24")
		if len(sn.Pools) != 1 || sn.Pools[0].Start != prefix+"11" || sn.Pools[0].End != prefix+"200" {
			t.Errorf("subnet %s pools %+v, want %s11-%s200", sn.Name, sn.Pools, prefix, prefix)
		}
	}
	ports := map[string][]int{}
	for _, g := range inv.SecurityGroups {
		if g.Default {
			continue
		}
		for _, r := range g.Rules {
			if r.Direction == "ingress" {
				ports[g.Name] = append(ports[g.Name], r.PortRangeMin)
			}
		}
	}
	for g, want := range map[string][]int{"k8s_admin": {22, 22, 22, 6443, 6443, 6443}, "k8s_public": {80, 80, 80, 443, 443, 443}} {
		got := ports[g]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("group %s (three zones) opens %v, want %v", g, got, want)
		}
	}
	lbs, nodes := 0, 0
	for _, sv := range inv.Servers {
		if sv.Status != "ACTIVE" {
			t.Errorf("server %s is %s", sv.Name, sv.Status)
		}
		if strings.HasPrefix(sv.Name, "k8s-lb-") {
			lbs++
			if len(sv.FixedIPs) != 1 || !strings.HasSuffix(sv.FixedIPs[0], ".10") {
				t.Errorf("load balancer %s at %v, want .10", sv.Name, sv.FixedIPs)
			}
			continue
		}
		nodes++
	}
	if lbs != 3 || nodes != 15 {
		t.Errorf("%d load balancers and %d nodes, want 3 and 15", lbs, nodes)
	}

	// Rancher: the cluster as Mastermind makes it, every node registered
	// once and active, the cluster groups bound.
	pc, ok := s.Rancher.ProvisioningClusterNamed("k8s-" + name)
	if !ok {
		t.Fatalf("no provisioning cluster k8s-%s: %v", name, s.Rancher.Inventory())
	}
	spec := pc.Spec()
	rke, _ := spec["rkeConfig"].(map[string]any)
	if spec["kubernetesVersion"] != "v1.31.7+rke2r1" || rke["dataDirectories"] == nil {
		t.Errorf("cluster spec %v", spec)
	}
	s.wantActiveNodes(t, pc.ClusterID, 15)
	for host, n := range s.boots.snapshot() {
		if n != 1 {
			t.Errorf("VM %s booted %d times", host, n)
		}
	}
	hex := strings.ReplaceAll(resUUID, "-", "")
	if _, ok := s.Keycloak.GroupByPath("waldur", "/c_"+hex+"/c_"+hex+"_cluster-owner"); !ok {
		t.Errorf("no Keycloak group c_%s_cluster-owner under c_%s: %v", hex, hex, s.Keycloak.Groups("waldur"))
	}
	bound := 0
	for _, b := range s.Rancher.Inventory().ClusterBindings {
		if b.ClusterID == pc.ClusterID && strings.HasPrefix(b.GroupPrincipalID, "keycloakoidc_group://c_"+hex) {
			bound++
		}
	}
	if bound != 2 {
		t.Errorf("%d cluster group bindings, want 2 (cluster-owner, cluster-member)", bound)
	}
	// Vault: nothing left once the nodes have their token.
	cl, _ := vault.ParseCluster(resUUID)
	if p, r, sec, err := s.vault.Client(t).Exists(ctx(t), cl); err != nil || p || r || sec {
		t.Errorf("Vault objects after the create: policy %v, role %v, secret %v (%v)", p, r, sec, err)
	}
	res, err := s.Admin.Resource(ctx(t), resUUID)
	if err != nil {
		t.Fatal(err)
	}
	if res.BackendID != pc.ClusterID {
		t.Errorf("backend_id %q, want the v3 cluster id %s", res.BackendID, pc.ClusterID)
	}
	if res.BackendMetadata["cluster_id"] != pc.ClusterID || res.BackendMetadata["cluster_name"] != "k8s-"+name {
		t.Errorf("backend_metadata %v", res.BackendMetadata)
	}
	var lbEndpoints int
	for _, ep := range res.Endpoints {
		if u, _ := ep["url"].(string); strings.HasPrefix(fmt.Sprint(ep["name"]), "k8s-lb-") && strings.HasPrefix(u, "https://") {
			lbEndpoints++
		}
	}
	if lbEndpoints != 3 {
		t.Errorf("endpoints %v, want each zone's load balancer", res.Endpoints)
	}

	// One secret-id per node, each used for exactly one login (the
	// AppRole allows one use; a second login with it would fail the boot).
	vc := s.vaultCalls.snapshot()
	issued, logins := 0, vc["PUT /v1/auth/approle/login"]
	for k, n := range vc {
		if strings.HasSuffix(k, "/secret-id") && strings.HasPrefix(k, "PUT ") {
			issued += n
		}
	}
	if issued != 15 || logins != 15 {
		t.Errorf("%d secret-ids issued and %d logins, want 15 of each", issued, logins)
	}

	// What one create cost, from the simulators' logs and the Vault proxy.
	report(t, "OpenStack calls per 3-zone create", callSummary(s.OpenStack.Calls()))
	report(t, "Rancher calls per 3-zone create", callSummary(s.Rancher.Calls()))
	report(t, "Vault calls per 3-zone create (sitebus and the 15 VMs)", s.vaultCalls.snapshot())

	// Terminate leaves nothing behind.
	t.Logf("terminate (15 nodes drained and deleted, then everything else): %s", s.terminate(t, resUUID, 15))
	s.wantNothingLeft(resUUID)
}

func TestAVMInErrorUndoesTheCreate(t *testing.T) {
	s := newSite(t)
	name := "chem-prod"
	s.OpenStack.FailServers(openstacksim.ServerErrorRule{Name: "k8s-" + name + "-rancher-node-7", Message: "No valid host was found."})
	orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 2)})
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "erred" {
		t.Fatalf("order %s, want erred", o.State)
	}
	for _, want := range []string{"wait-nodes", "rancher-node-7", "No valid host was found."} {
		if !strings.Contains(o.ErrorMessage, want) {
			t.Errorf("error message %q does not say %q", o.ErrorMessage, want)
		}
	}
	s.wantNothingLeft(resUUID)
}

// wantNothingLeft checks that no simulator holds anything of the
// terminate orders the terminate of resUUID, fails t unless it ends done
// after drains Rancher node drains, and returns how long it took.
func (s *site) terminate(t testing.TB, resUUID string, drains int) time.Duration {
	t.Helper()
	start := time.Now()
	s.orderDone(t, "terminate order", waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID})
	took := time.Since(start).Round(time.Millisecond)
	if n := len(s.Rancher.Drains()); n != drains {
		t.Errorf("%d drains on terminate, want %d", n, drains)
	}
	return took
}

// wantRefused orders the create of name with attrs, fails t unless it
// ends erred with want in its message, and checks that OpenStack saw no
// write (the refusal comes first); it returns the resource's UUID.
func (s *site) wantRefused(t testing.TB, name string, attrs map[string]any, want string) (resUUID string) {
	t.Helper()
	s.OpenStack.ResetCalls()
	orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: attrs})
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "erred" || !strings.Contains(o.ErrorMessage, want) {
		t.Fatalf("order %s: %q, want erred with %q", o.State, o.ErrorMessage, want)
	}
	for _, c := range s.OpenStack.Calls() {
		if c.Method != "GET" && !strings.HasSuffix(c.Path, "/auth/tokens") {
			t.Errorf("OpenStack call %s %s for a refused order", c.Method, c.Path)
		}
	}
	return resUUID
}

// wantActiveNodes fails t unless clusterID has n Rancher nodes, all active.
func (s *site) wantActiveNodes(t testing.TB, clusterID string, n int) {
	t.Helper()
	nodes := s.Rancher.Nodes(clusterID)
	if len(nodes) != n {
		t.Errorf("%d Rancher nodes, want %d", len(nodes), n)
	}
	for _, node := range nodes {
		if node.State != "active" {
			t.Errorf("node %s is %s", node.Hostname, node.State)
		}
	}
}

// resource.
func (s *site) wantNothingLeft(resUUID string) {
	s.t.Helper()
	// Every tenant object, Neutron's default groups included: deleting a
	// Keystone project leaves its Neutron, Cinder and Nova objects behind.
	if inv := s.OpenStack.Tenants(); inv.Total() != 0 {
		s.t.Errorf("left in OpenStack's tenants: %d objects: %+v", inv.Total(), inv)
	}
	s.wantNothingLeftButOpenStack(resUUID)
}

// wantNothingLeftButOpenStack checks that Rancher, Keycloak and Vault hold
// nothing of the resource.
func (s *site) wantNothingLeftButOpenStack(resUUID string) {
	s.t.Helper()
	inv := s.Rancher.Inventory()
	if len(inv.ProvisioningClusters)+len(inv.Clusters)+len(inv.Nodes)+len(inv.ClusterBindings)+len(inv.Secrets) != 0 {
		s.t.Errorf("left in Rancher: %v", inv)
	}
	hex := strings.ReplaceAll(resUUID, "-", "")
	if _, ok := s.Keycloak.GroupByPath("waldur", "/c_"+hex); ok {
		s.t.Errorf("Keycloak group c_%s is left", hex)
	}
	cl, _ := vault.ParseCluster(resUUID)
	if p, r, sec, err := s.vault.Client(s.t).Exists(ctx(s.t), cl); err != nil || p || r || sec {
		s.t.Errorf("left in Vault: policy %v, role %v, secret %v (%v)", p, r, sec, err)
	}
}

func TestKilledMidCreateResumesWithoutMakingAnythingTwice(t *testing.T) {
	// The process dies right after the 5th node VM was made, before the
	// nodes step recorded anything; the VMs made at once with it (at
	// most cluster_vm_concurrency, 5, in all) may be made too.
	s := newSite(t, failpoint.EnvVar+"=provisioner/node-made/5=crash")
	name := "bio-prod"
	orderUUID, _ := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 2)})
	select {
	case <-s.Sitebus.Done():
	case <-time.After(90 * time.Second):
		t.Fatal("sitebus did not reach the failpoint")
	}
	if n := len(s.OpenStack.Inventory("").Servers) - 3; n < 5 || n > 5+4 {
		t.Fatalf("%d node VMs at the crash, want 5 and at most the 4 being made with the 5th", n)
	}
	s.Start()
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("order %s after the restart: %s", o.State, o.ErrorMessage)
	}
	inv := s.OpenStack.Inventory("")
	seen := map[string]int{}
	// Names repeat across zones (each zone's load balancer), never
	// within a project.
	for _, sv := range inv.Servers {
		seen[sv.ProjectID+" "+sv.Name]++
	}
	for _, v := range inv.Volumes {
		seen[v.ProjectID+" volume "+v.Name]++
	}
	for _, p := range inv.Ports {
		if p.Name != "" {
			seen[p.ProjectID+" port "+p.Name]++
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s made %d times", name, n)
		}
	}
	if len(inv.Servers) != 18 {
		t.Errorf("%d VMs, want 18", len(inv.Servers))
	}
	for host, n := range s.boots.snapshot() {
		if n != 1 {
			t.Errorf("VM %s booted %d times", host, n)
		}
	}
	pc, _ := s.Rancher.ProvisioningClusterNamed("k8s-" + name)
	if n := len(s.Rancher.Nodes(pc.ClusterID)); n != 15 || len(s.Rancher.Inventory().ProvisioningClusters) != 1 {
		t.Errorf("%d Rancher nodes, clusters %v; want 15 nodes of one cluster", n, s.Rancher.Inventory())
	}
}

func TestValidationRefusalsErrTheOrderWithNothingMade(t *testing.T) {
	s := newSite(t)
	tests := map[string]struct {
		attrs map[string]any
		want  string
	}{
		"an even number of zones": {
			attrs: map[string]any{"openstack_offering_uuid_list": []any{zones[0].uuid, zones[1].uuid}},
			want:  "Number of selected OpenStack offerings should be odd (1, 3, 5)",
		},
		"a zone the offering does not list": {
			attrs: map[string]any{"openstack_offering_uuid_list": []any{"44444444-4444-4444-8444-444444444444"}},
			want:  "openstack_offering_uuid_list",
		},
		"a worker flavor no zone has": {
			attrs: map[string]any{"worker_nodes_flavor_name": "m1.huge"},
			want:  "m1.huge",
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			attrs := createAttributes(fmt.Sprintf("refused-%d", i), 2)
			maps.Copy(attrs, tc.attrs)
			s.wantRefused(t, fmt.Sprintf("refused-%d", i), attrs, tc.want)
			if inv := s.OpenStack.Tenants(); inv.Total() != 0 {
				t.Errorf("OpenStack's tenants hold %d objects", inv.Total())
			}
			if inv := s.Rancher.Inventory(); len(inv.ProvisioningClusters) != 0 {
				t.Errorf("Rancher holds %v", inv)
			}
		})
	}
}

func TestScaleUpAndDown(t *testing.T) {
	s := newSite(t)
	name := "astro-prod"
	orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 1)})
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	pc, _ := s.Rancher.ProvisioningClusterNamed("k8s-" + name)
	cl, _ := vault.ParseCluster(resUUID)

	// Up: one more worker per zone, with the Vault objects made again for
	// them (Mastermind's node-add fails here) and removed after.
	up, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 2}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("scale up %s: %s", o.State, o.ErrorMessage)
	}
	if n := len(s.OpenStack.Inventory("").Servers); n != 18 {
		t.Errorf("%d VMs after scale up, want 18", n)
	}
	active := 0
	for _, n := range s.Rancher.Nodes(pc.ClusterID) {
		if n.State == "active" {
			active++
		}
	}
	if active != 15 {
		t.Errorf("%d active Rancher nodes after scale up, want 15", active)
	}
	if p, r, sec, err := s.vault.Client(t).Exists(ctx(t), cl); err != nil || p || r || sec {
		t.Errorf("Vault objects after scale up: policy %v, role %v, secret %v (%v)", p, r, sec, err)
	}

	// Down: the highest-numbered worker of each zone is drained, its VM
	// and volumes deleted, then its Rancher node.
	down, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 1}})
	if o := s.WaitOrder(down, "done", "erred"); o.State != "done" {
		t.Fatalf("scale down %s: %s", o.State, o.ErrorMessage)
	}
	if n := len(s.Rancher.Drains()); n != 3 {
		t.Errorf("%d drains, want 3: %v", n, s.Rancher.Drains())
	}
	if n := len(s.OpenStack.Inventory("").Servers); n != 15 {
		t.Errorf("%d VMs after scale down, want 15", n)
	}
	if n := len(s.Rancher.Nodes(pc.ClusterID)); n != 12 {
		t.Errorf("%d Rancher nodes after scale down, want 12", n)
	}

	// A new name renames the Rancher cluster.
	rename, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"name": "astro-production"}})
	if o := s.WaitOrder(rename, "done", "erred"); o.State != "done" {
		t.Fatalf("rename %s: %s", o.State, o.ErrorMessage)
	}
	if c, ok := s.Rancher.ClusterByID(pc.ClusterID); !ok || c.Name != "astro-production" {
		t.Errorf("Rancher cluster %+v after the rename, want the name astro-production", c)
	}

	// The last worker of a zone stays.
	last, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 0}})
	if o := s.WaitOrder(last, "done", "erred"); o.State != "erred" || !strings.Contains(o.ErrorMessage, "worker_nodes_count") {
		t.Errorf("scale to 0 %s: %q, want erred naming worker_nodes_count", o.State, o.ErrorMessage)
	}
	if n := len(s.OpenStack.Inventory("").Servers); n != 15 {
		t.Errorf("%d VMs after the refused scale down, want 15", n)
	}
}
