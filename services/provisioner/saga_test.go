package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

const (
	offeringHex  = "5e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b"
	resourceUUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

var zoneUUIDs = []string{
	"11111111-1111-4111-8111-111111111111",
	"22222222-2222-4222-8222-222222222222",
	"33333333-3333-4333-8333-333333333333",
}

func zoneRaw(i int) map[string]any {
	l := string(rune('a' + i))
	return map[string]any{
		"uuid": zoneUUIDs[i], "slug": "az-" + l, "name": "Zone " + l, "availability_zone": "nova-" + l,
		"external_network_id": "9e8d7c6b-5a49-4838-a271-605f4e3d2c1b", "cloud": "site-" + l,
	}
}

// settings are a managed offering over three zones with Vault and
// Keycloak.
func settings(t *testing.T) ranchercluster.Settings {
	t.Helper()
	s, err := ranchercluster.DecodeSettings(map[string]any{
		"backend_url": "https://rancher.example.com", "username": "token-abc", "password": "s3cret-key",
		"base_image_name": "SLE Micro 6.1", "deployment_mode": "managed",
		"managed_rancher_server_flavor_name":                  "m1.large",
		"managed_rancher_server_system_volume_size_gb":        80,
		"managed_rancher_server_data_volume_size_gb":          100,
		"managed_rancher_worker_system_volume_size_gb":        40,
		"managed_rancher_load_balancer_flavor_name":           "m1.medium",
		"managed_rancher_load_balancer_system_volume_size_gb": 20,
		"managed_rancher_load_balancer_cloud_init_template":   "#cloud-config\nruncmd:\n  - echo upstream {subnet_3_oct}.11\n",
		"vault_host": "vault.test", "vault_token": "root",
		"openstack_offering_uuid_list": []any{zoneRaw(0), zoneRaw(1), zoneRaw(2)},
	})
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	s.KeycloakEnabled = true
	return s
}

func attributes(zones int, workers int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"name": "production-cluster", "worker_nodes_count": workers, "worker_nodes_flavor_name": "m1.xlarge",
		"worker_nodes_data_volume_size": 102400, "openstack_offering_uuid_list": zoneUUIDs[:zones],
		"install_longhorn": true, "worker_nodes_longhorn_volume_size": 204800,
	})
	return b
}

// harness runs the provisioner's sagas on a real coordinator (embedded
// NATS) against the in-memory world.
type harness struct {
	w     *world
	coord *saga.Coordinator
	plans *memPlans
	o     *Offering
	acts  *activities
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	w := newWorld()
	s := settings(t)
	o := &Offering{Name: "clusters", Settings: s, Waldur: fakeWaldur{w}, Cloud: fakeCloud{w}, Rancher: fakeRancher{w}, Vault: fakeVault{w},
		CloudInit: cloudinit.Settings{RancherURL: s.BackendURL, DiskDriver: "vd"}}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.Default()
	}
	plans := &memPlans{m: map[string][]byte{}}
	acts := &activities{offerings: map[string]*Offering{offeringHex: o}, groups: fakeGroups{w}, orders: fakeOrders{w}, plans: plans,
		timeouts: Timeouts{Step: 30 * time.Second, Nodes: 30 * time.Second}, vmConcurrency: DefaultVMConcurrency, log: log,
		nodesActive:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "a"}, []string{"cluster"}),
		nodesWanted:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "w"}, []string{"cluster"}),
		argocdFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "f"})}
	srv := bustest.Server(t)
	js, err := jetstream.New(bustest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	coord, err := saga.New(js, saga.Config{Logger: log, LeaseTTL: time.Minute, ShutdownGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := register(coord, acts); err != nil {
		t.Fatal(err)
	}
	// Retries back off by milliseconds here, not seconds.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coord.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("coordinator: %v", err)
		}
	})
	return &harness{w: w, coord: coord, plans: plans, o: o, acts: acts}
}

func (h *harness) run(t *testing.T, def, orderHex string, attrs json.RawMessage) saga.Saga {
	t.Helper()
	in := Input{OfferingUUID: offeringHex, OrderUUID: orderHex, ResourceUUID: resourceUUID, Attributes: attrs,
		Resource: ResourceRef{UUID: resourceUUID, Name: "production-cluster", Slug: "production-cluster", ProjectSlug: "physics", CustomerSlug: "uni"}}
	return startAndWait(t, h.coord, def, orderHex, in)
}

// startAndWait starts saga def as order orderHex with in and waits until
// it ends.
func startAndWait(t *testing.T, coord *saga.Coordinator, def, orderHex string, in any) saga.Saga {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := coord.Start(ctx, def, contract.SagaID(orderHex), in); err != nil {
		t.Fatal(err)
	}
	sg, err := coord.Wait(ctx, contract.SagaID(orderHex))
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return sg
}

func TestManagedCreateMakesEveryObjectWithOneSecretIDPerNodeAndSettles(t *testing.T) {
	h := newHarness(t)
	sg := h.run(t, ClusterCreate, "0000000000000000000000000000000a", attributes(3, 2))
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	w := h.w
	projects := w.byKind("project")
	if len(projects) != 3 {
		t.Fatalf("projects %v", w.inventory())
	}
	for i, p := range projects {
		if want := fmt.Sprintf("os-tenant-physics-production-cluster-987e097d-az-%c", 'a'+i); p.name != want {
			t.Errorf("project %d = %s, want %s", i, p.name, want)
		}
	}
	for _, sn := range w.byKind("subnet") {
		if len(sn.pools) != 1 || !strings.HasSuffix(sn.pools[0].Start, ".11") || !strings.HasSuffix(sn.pools[0].End, ".200") {
			t.Errorf("subnet %s pools %v, want .11-.200", sn.name, sn.pools)
		}
	}
	sgs := w.byKind("security-group")
	if len(sgs) != 6 {
		t.Fatalf("security groups: %d", len(sgs))
	}
	for _, g := range sgs {
		var ports []int
		for _, r := range g.rules {
			ports = append(ports, r.PortRangeMin)
		}
		want := map[string][]int{"k8s_admin": {22, 6443}, "k8s_public": {80, 443}}[g.name]
		if !slices.Equal(ports, want) {
			t.Errorf("group %s opens %v, want %v", g.name, ports, want)
		}
	}
	servers := w.byKind("server")
	lbs, nodes := 0, 0
	for _, s := range servers {
		if strings.HasPrefix(s.name, "k8s-lb-") {
			lbs++
			port := w.objs[s.ports[0]]
			if !strings.HasSuffix(port.fixedIP, ".10") || !strings.Contains(s.userData, "upstream "+strings.TrimSuffix(port.fixedIP, ".10")+".11") {
				t.Errorf("load balancer %s at %s with user data %q", s.name, port.fixedIP, s.userData)
			}
			continue
		}
		nodes++
	}
	if lbs != 3 || nodes != 15 {
		t.Errorf("%d load balancers, %d nodes; want 3 and 15 (3 zones × 3 servers + 2 workers)", lbs, nodes)
	}
	// Each node carries its own secret-id, and no secret-id is in two VMs.
	if len(w.secretIDs) != nodes {
		t.Errorf("%d secret-ids issued for %d nodes", len(w.secretIDs), nodes)
	}
	for _, id := range w.secretIDs {
		holders := 0
		for _, s := range servers {
			if strings.Contains(s.userData, id) {
				holders++
			}
		}
		if holders != 1 {
			t.Errorf("secret-id %s is in %d VMs", id, holders)
		}
	}
	if len(w.policies)+len(w.roles)+len(w.kv) != 0 {
		t.Errorf("Vault objects left after the create: %v %v %v", w.policies, w.roles, w.kv)
	}
	hex := strings.ReplaceAll(resourceUUID, "-", "")
	if !w.groups["c_"+hex] || !w.groups["c_"+hex+"_cluster-owner"] || len(w.bindings) != 2 {
		t.Errorf("groups %v, bindings %v", w.groups, w.bindings)
	}
	if w.orderState != waldur.OrderStateDone || w.backendID != "c-m-00000001" {
		t.Errorf("order %s, backend_id %q", w.orderState, w.backendID)
	}
	wantEPs := []string{"Rancher", "k8s-lb-production-cluster (Zone a)", "k8s-lb-production-cluster (Zone b)", "k8s-lb-production-cluster (Zone c)"}
	var gotEPs, urls []string
	for _, ep := range w.endpoints {
		gotEPs, urls = append(gotEPs, ep.Name), append(urls, ep.URL)
	}
	if !slices.Equal(gotEPs, wantEPs) || len(slices.Compact(slices.Sorted(slices.Values(urls)))) != 4 {
		t.Errorf("endpoints %v, want Rancher and each zone's load balancer at its own address", w.endpoints)
	}
	if rec, _ := h.plans.Get(context.Background(), hex); rec == nil {
		t.Error("no cluster record kept for the terminate")
	}
}

func TestAVMInErrorUndoesEverythingAndNamesTheStep(t *testing.T) {
	h := newHarness(t)
	h.w.failServer = "k8s-production-cluster-rancher-node-8"
	sg := h.run(t, ClusterCreate, "0000000000000000000000000000000b", attributes(3, 2))
	if sg.Status != saga.StatusCompensated {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	if !strings.Contains(sg.Error, "wait-nodes") || !strings.Contains(sg.Error, "rancher-node-8") || !strings.Contains(sg.Error, "ERROR") {
		t.Errorf("error %q does not name the step, the VM and its state", sg.Error)
	}
	if inv := h.w.inventory(); len(inv) != 0 {
		t.Errorf("left in OpenStack: %v", inv)
	}
	if len(h.w.clusters)+len(h.w.policies)+len(h.w.roles)+len(h.w.groups) != 0 {
		t.Errorf("left: clusters %v, policies %v, roles %v, groups %v", h.w.clusters, h.w.policies, h.w.roles, h.w.groups)
	}
}

func TestValidationRefusalFailsBeforeAnythingIsMade(t *testing.T) {
	h := newHarness(t)
	sg := h.run(t, ClusterCreate, "0000000000000000000000000000000c", attributes(2, 2))
	if sg.Status != saga.StatusFailed {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	if !strings.Contains(sg.Error, "should be odd") {
		t.Errorf("error %q does not give the rule", sg.Error)
	}
	if len(h.w.calls) != 0 {
		t.Errorf("calls made: %v", h.w.calls)
	}
}

func TestTerminateLeavesNothingBehind(t *testing.T) {
	h := newHarness(t)
	if sg := h.run(t, ClusterCreate, "0000000000000000000000000000000d", attributes(3, 1)); sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	// Neutron made each tenant's default group, which no step recorded:
	// deleting the Keystone project would leave it.
	projects := h.w.byKind("project")
	h.w.mu.Lock()
	for _, p := range projects {
		h.w.objs["default-"+p.id] = &object{kind: "security-group", name: "default", id: "default-" + p.id, project: p.id}
	}
	h.w.mu.Unlock()
	h.w.orderState = waldur.OrderStateExecuting
	sg := h.run(t, ClusterTerminate, "0000000000000000000000000000000e", nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if inv := h.w.inventory(); len(inv) != 0 {
		t.Errorf("left in OpenStack: %v", inv)
	}
	if len(h.w.clusters)+len(h.w.groups)+len(h.w.bindings) != 0 {
		t.Errorf("left: clusters %v, groups %v, bindings %v", h.w.clusters, h.w.groups, h.w.bindings)
	}
	if len(h.w.drained) != 12 {
		t.Errorf("%d nodes drained, want 12", len(h.w.drained))
	}
	if rec, _ := h.plans.Get(context.Background(), strings.ReplaceAll(resourceUUID, "-", "")); rec != nil {
		t.Error("the cluster record outlived the terminate")
	}
	if h.w.orderState != waldur.OrderStateDone {
		t.Errorf("terminate order %s", h.w.orderState)
	}
}

func TestRetriedStepsMakeNothingTwice(t *testing.T) {
	h := newHarness(t)
	h.w.mu.Lock()
	h.w.flaky["ensure security-group"] = true
	h.w.flaky["ensure server k8s-production-cluster-rancher-node-5"] = true
	h.w.mu.Unlock()
	sg := h.run(t, ClusterCreate, "0000000000000000000000000000000f", attributes(3, 2))
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	seen := map[string]int{}
	for _, c := range h.w.calls {
		if strings.HasPrefix(c, "create ") {
			seen[c]++
		}
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("%s made %d times", c, n)
		}
	}
	if n := len(h.w.byKind("server")); n != 18 {
		t.Errorf("%d VMs, want 18", n)
	}
}

func TestSelfManagedCreateMakesOnlyTheNodes(t *testing.T) {
	h := newHarness(t)
	h.o.Settings.DeploymentMode = ranchercluster.ModeSelfManaged
	node := func(role string) map[string]any {
		return map[string]any{
			"role": role, "flavor": "m1.large", "subnet": "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b", "system_volume_size": 81920,
			"data_volumes": []any{map[string]any{"size": 51200, "mount_point": "/opt/rke2_storage", "filesystem": "btrfs"}},
		}
	}
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7 admin@example"
	attrs, _ := json.Marshal(map[string]any{
		"name": "dev-cluster", "tenant": zoneUUIDs[0], "install_longhorn": false,
		"nodes": []any{node("server"), node("agent")}, "vm_project": "uuid-project", "ssh_public_key": key,
	})
	sg := h.run(t, ClusterCreate, "000000000000000000000000000000e1", attrs)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	for _, kind := range []string{"project", "user", "network", "subnet", "router", "security-group"} {
		if objs := h.w.byKind(kind); len(objs) != 0 {
			t.Errorf("self-managed create made a %s: %v", kind, h.w.inventory())
		}
	}
	servers := h.w.byKind("server")
	if len(servers) != 2 {
		t.Fatalf("%d VMs, want the order's 2 nodes: %v", len(servers), h.w.inventory())
	}
	for _, s := range servers {
		if strings.HasPrefix(s.name, "k8s-lb-") || s.project != "admin-az-a" {
			t.Errorf("VM %s in %s; want the order's nodes in the zone credentials' project", s.name, s.project)
		}
		if !strings.Contains(s.userData, "ssh_authorized_keys:\n  - "+key+"\n") {
			t.Errorf("VM %s user_data does not authorize the order's key:\n%s", s.name, s.userData)
		}
	}

	// A template that is not a cloud-config cannot take the key: the
	// order is refused before anything is made.
	tmpl, err := cloudinit.LoadTemplate("#!/bin/sh\necho {rke_role_flags}\n")
	if err != nil {
		t.Fatal(err)
	}
	h.o.CloudInit.Template = tmpl
	sg = h.run(t, ClusterCreate, "000000000000000000000000000000e2", attrs)
	if sg.Status == saga.StatusSucceeded || !strings.Contains(sg.Error, "ssh_public_key: this offering's cloud_init_template is not a cloud-config") {
		t.Fatalf("saga %s: %s; want it refused for the SSH key", sg.Status, sg.Error)
	}
	if n := len(h.w.byKind("server")); n != 2 {
		t.Errorf("%d VMs after the refused order, want the first order's 2", n)
	}
}
