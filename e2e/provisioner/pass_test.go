package provisioner_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// resource reads the Waldur resource.
func (s *site) resource(uuid string) *waldursim.APIResource {
	s.t.Helper()
	res, err := s.Admin.Resource(ctx(s.t), uuid)
	if err != nil {
		s.t.Fatal(err)
	}
	return res
}

// A create that waits on a node that never registers says so in Waldur
// while it waits; past cluster_ready_timeout the order errs and the
// resource is erred, with the cluster kept; once the node comes up the
// cluster pass sets the resource OK (Mastermind: check_cluster_nodes,
// then pull_cluster; the pull keeps the state current).
func TestAClusterNotReadyInTimeIsKeptErredThenOKOnceActive(t *testing.T) {
	s := newSiteWith(t, siteOptions{pullPeriod: "10s", readyTimeout: "15s"})
	name := "slow-prod"
	stuck := "k8s-" + name + "-rancher-node-2"
	s.Rancher.AddNodeFault(ranchersim.NodeFault{Hostname: stuck, NeverActive: true})
	orderUUID, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: oneZone(name)})

	harness.Eventually(t, 60*time.Second, "the wait's progress in the backend metadata", func() bool {
		p, _ := s.resource(resUUID).BackendMetadata["progress"].(string)
		return strings.Contains(p, "3 of 4 active") && strings.Contains(p, stuck)
	})
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not usable within 15s") || !strings.Contains(o.ErrorMessage, stuck) {
		t.Fatalf("order %s: %q, want erred naming the deadline and the node", o.State, o.ErrorMessage)
	}
	res := s.resource(resUUID)
	if res.State != "Erred" || !strings.Contains(res.ErrorMessage, stuck) {
		t.Errorf("resource %s: %q, want erred with the reason", res.State, res.ErrorMessage)
	}
	pc, ok := s.Rancher.ProvisioningClusterNamed("k8s-" + name)
	if !ok || res.BackendID != pc.ClusterID {
		t.Fatalf("cluster kept %v, backend_id %q: want the cluster kept and recorded", ok, res.BackendID)
	}
	if n := len(s.OpenStack.Inventory("").Servers); n != 5 {
		t.Errorf("%d VMs, want the cluster's 5 kept", n)
	}

	s.Rancher.ClearNodeFaults()
	harness.Eventually(t, 90*time.Second, "the cluster pass setting the resource OK", func() bool {
		return s.resource(resUUID).State == "OK"
	})
	counts, _ := s.resource(resUUID).BackendMetadata["node_counts"].(map[string]any)
	if counts["active"] != float64(4) || counts["servers"] != float64(3) || counts["agents"] != float64(1) {
		t.Errorf("node_counts %v, want 3 servers and 1 agent, 4 active", counts)
	}
}

// A VM deleted by hand: the cluster pass removes its node from Rancher
// and from the record and errs the resource, naming it; an update with
// the same worker count makes the worker again, and the next pass sets
// the resource OK. A group binding deleted in Rancher is made again.
func TestTheClusterPassRemovesTheNodeOfADeletedVMAndRepairs(t *testing.T) {
	s := newSiteWith(t, siteOptions{pullPeriod: "10s"})
	name := "drift-prod"
	attrs := oneZone(name)
	attrs["worker_nodes_count"] = 2
	resUUID := s.orderDone(t, "create", waldursim.CreateOrderRequest{ResourceName: name, Attributes: attrs})
	pc, _ := s.Rancher.ProvisioningClusterNamed("k8s-" + name)
	worker := "k8s-" + name + "-rancher-node-5"
	vms := s.OpenStack.ServersNamed(worker)
	if len(vms) != 1 {
		t.Fatalf("VMs named %s: %v", worker, vms)
	}
	if !s.OpenStack.RemoveServer(vms[0].ID) {
		t.Fatal("the simulator did not delete the VM")
	}
	var binding ranchersim.ClusterBinding
	for _, b := range s.Rancher.Inventory().ClusterBindings {
		if b.ClusterID == pc.ClusterID {
			binding = b
		}
	}
	opts := s.Rancher.Options()
	req, _ := http.NewRequestWithContext(ctx(t), "DELETE", s.Rancher.URL()+"/v3/clusterroletemplatebindings/"+binding.ID, nil)
	req.SetBasicAuth(opts.AccessKey, opts.SecretKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("delete binding %s: %v %v", binding.ID, err, resp)
	}
	resp.Body.Close()

	harness.Eventually(t, 60*time.Second, "the resource erred naming the removed node", func() bool {
		res := s.resource(resUUID)
		return res.State == "Erred" && strings.Contains(res.ErrorMessage, worker)
	})
	if slices.ContainsFunc(s.Rancher.Nodes(pc.ClusterID), func(n ranchersim.Node) bool { return n.Hostname == worker }) {
		t.Errorf("Rancher still has node %s", worker)
	}
	remade := 0
	for _, b := range s.Rancher.Inventory().ClusterBindings {
		if b.ClusterID == pc.ClusterID && b.GroupPrincipalID == binding.GroupPrincipalID && b.RoleTemplateID == binding.RoleTemplateID {
			remade++
		}
	}
	if remade != 1 {
		t.Errorf("binding of %s as %s made again %d times, want once", binding.GroupPrincipalID, binding.RoleTemplateID, remade)
	}
	if e := s.resource(resUUID).ErrorMessage; !strings.Contains(e, "has 1 of 2 workers") {
		t.Errorf("error message %q does not say the zone is short of its worker", e)
	}

	s.orderDone(t, "update", waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 2}})
	harness.Eventually(t, 60*time.Second, "the cluster pass setting the resource OK", func() bool {
		return s.resource(resUUID).State == "OK"
	})
	if n := len(s.OpenStack.Inventory("").Servers); n != 6 {
		t.Errorf("%d VMs after the repair, want 6", n)
	}
}

// An update that arrives while its cluster is still being created waits
// for the create instead of erring with "no cluster record".
func TestAnUpdateDuringTheCreateWaitsForIt(t *testing.T) {
	s := newSite(t)
	name := "early-prod"
	create, resUUID := s.order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: oneZone(name)})
	up, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 2}})
	if o := s.WaitOrder(create, "done", "erred"); o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("update during the create %s: %s", o.State, o.ErrorMessage)
	}
	if n := len(s.OpenStack.Inventory("").Servers); n != 6 {
		t.Errorf("%d VMs, want 6 (a load balancer, 3 servers, 2 workers)", n)
	}
}

// A scale-down whose drain fails part-way errs the order saying which
// nodes were removed and which were not; a later scale-down finishes it.
func TestAScaleDownThatFailsPartWaySaysWhatWasRemoved(t *testing.T) {
	s := newSite(t)
	name := "shrink-prod"
	attrs := oneZone(name)
	attrs["worker_nodes_count"] = 3
	resUUID := s.orderDone(t, "create", waldursim.CreateOrderRequest{ResourceName: name, Attributes: attrs})
	gone, stuck := "k8s-"+name+"-rancher-node-6", "k8s-"+name+"-rancher-node-5"
	s.Rancher.AddNodeFault(ranchersim.NodeFault{Hostname: stuck, DrainError: "cannot evict pod as it would violate the pod's disruption budget"})
	down, _ := s.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 1}})
	o := s.WaitOrder(down, "done", "erred")
	if o.State != "erred" {
		t.Fatalf("scale down %s, want erred", o.State)
	}
	for _, want := range []string{"removed: " + gone, "not removed: " + stuck, "disruption budget"} {
		if !strings.Contains(o.ErrorMessage, want) {
			t.Errorf("error message %q does not say %q", o.ErrorMessage, want)
		}
	}
	if len(s.OpenStack.ServersNamed(gone)) != 0 || len(s.OpenStack.ServersNamed(stuck)) != 1 {
		t.Errorf("VMs %s: %d, %s: %d; want the first gone, the second kept", gone, len(s.OpenStack.ServersNamed(gone)), stuck, len(s.OpenStack.ServersNamed(stuck)))
	}
	s.Rancher.ClearNodeFaults()
	s.orderDone(t, "second scale down", waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Attributes: map[string]any{"worker_nodes_count": 1}})
	if n := len(s.OpenStack.Inventory("").Servers); n != 5 {
		t.Errorf("%d VMs, want 5 (a load balancer, 3 servers, 1 worker)", n)
	}
	nodes, _ := s.resource(resUUID).BackendMetadata["nodes"].([]any)
	if len(nodes) != 4 {
		t.Errorf("backend_metadata nodes %v, want the 4 left", nodes)
	}
}

// repairsCounted reads sitebus_cluster_repairs_total of kind from
// /metrics (0 before the first).
func repairsCounted(t *testing.T, s *site, kind string) float64 {
	t.Helper()
	_, body := s.Sitebus.Get("/metrics")
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, `sitebus_cluster_repairs_total{kind="`+kind+`"} `); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// A security group rule and the load balancer's floating IP that sitebus
// made, deleted by hand at Neutron's API, are made again by the cluster
// pass and counted; a rule someone added to the group and someone's
// floating IP in the tenant's project are left alone.
func TestTheClusterPassRemakesDeletedRulesAndFloatingIPs(t *testing.T) {
	s := newSiteWith(t, siteOptions{pullPeriod: "10s"})
	name := "net-prod"
	resUUID := s.orderDone(t, "create", waldursim.CreateOrderRequest{ResourceName: name, Attributes: oneZone(name)})
	inv := s.OpenStack.Inventory("")
	if len(inv.FloatingIPs) != 1 {
		t.Fatalf("floating IPs %v, want the load balancer's", inv.FloatingIPs)
	}
	lbFIP := inv.FloatingIPs[0]
	project := lbFIP.ProjectID
	var admin openstacksim.SecurityGroup
	for _, g := range inv.SecurityGroups {
		if g.ProjectID == project && g.Name == "k8s_admin" {
			admin = g
		}
	}
	var apiRule string
	for _, r := range admin.Rules {
		if r.PortRangeMin == 6443 {
			apiRule = r.ID
		}
	}
	if apiRule == "" {
		t.Fatalf("group k8s_admin %+v has no rule for 6443", admin)
	}

	nc, _ := adminClients(t, s)
	if err := rules.Delete(ctx(t), nc, apiRule).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := floatingips.Delete(ctx(t), nc, lbFIP.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	theirRule, err := rules.Create(ctx(t), nc, rules.CreateOpts{SecGroupID: admin.ID, Direction: rules.DirIngress,
		EtherType: rules.EtherType4, Protocol: rules.ProtocolTCP, PortRangeMin: 8080, PortRangeMax: 8080}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	theirFIP, err := floatingips.Create(ctx(t), nc, floatingips.CreateOpts{FloatingNetworkID: extNetworkID, ProjectID: project,
		Description: "someone's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	harness.Eventually(t, 60*time.Second, "the rule and the floating IP made again and counted", func() bool {
		now := s.OpenStack.Inventory(project)
		ruleBack := slices.ContainsFunc(now.SecurityGroups, func(g openstacksim.SecurityGroup) bool {
			return g.ID == admin.ID && slices.ContainsFunc(g.Rules, func(r openstacksim.Rule) bool { return r.PortRangeMin == 6443 })
		})
		fipBack := slices.ContainsFunc(now.FloatingIPs, func(f openstacksim.FloatingIP) bool { return f.PortID == lbFIP.PortID })
		return ruleBack && fipBack && repairsCounted(t, s, "security_group_rule") == 1 && repairsCounted(t, s, "floating_ip") == 1
	})
	now := s.OpenStack.Inventory(project)
	if !slices.ContainsFunc(now.SecurityGroups, func(g openstacksim.SecurityGroup) bool {
		return g.ID == admin.ID && slices.ContainsFunc(g.Rules, func(r openstacksim.Rule) bool { return r.ID == theirRule.ID })
	}) {
		t.Error("the rule someone added to k8s_admin was removed")
	}
	if !slices.ContainsFunc(now.FloatingIPs, func(f openstacksim.FloatingIP) bool { return f.ID == theirFIP.ID && f.PortID == "" }) {
		t.Error("someone's floating IP was removed or associated")
	}
	if res := s.resource(resUUID); res.State != "OK" {
		t.Errorf("resource %s: %q, want OK after the repairs", res.State, res.ErrorMessage)
	}
}
