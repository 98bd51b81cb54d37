package provisioner_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// explain of a rancher-cluster create changes nothing, runs the plan step
// (it reads the OpenStack catalog) and names what every later step would
// make; the run then makes exactly the tenants and VMs of that plan.
// explain of the terminate names the cluster it would delete.
func TestExplainOfAClusterCreateIsThePlanTheRunMakes(t *testing.T) {
	s := newSite(t)
	name := "explained"
	orderUUID, resUUID := s.Order(waldursim.CreateOrderRequest{ResourceName: name, Attributes: createAttributes(name, 1), Silent: true})

	text, code := s.Command(t, "orders", "explain", orderUUID)
	if code != 0 {
		t.Fatalf("orders explain: exit %d\n%s", code, text)
	}
	t.Logf("orders explain %s:\n%s", orderUUID, text)
	ex := s.Explain(t, orderUUID)
	if ex.Error != "" || ex.Saga == nil || ex.Saga.Definition != "rancher-cluster-create" {
		t.Fatalf("explain of a cluster create: error %q, saga %+v", ex.Error, ex.Saga)
	}
	for _, c := range ex.Calls {
		if c.Target != "waldur" && c.Changes() {
			t.Errorf("explain lists a change outside Waldur before the saga: %+v", c)
		}
	}
	if inv := s.OpenStack.Inventory(""); len(inv.Projects) != 0 || len(inv.Servers) != 0 {
		t.Fatalf("explain made OpenStack objects: %d projects, %d servers", len(inv.Projects), len(inv.Servers))
	}
	if o, err := s.Admin.Order(ctx(t), orderUUID); err != nil || o.State != "pending-provider" {
		t.Fatalf("explain changed the order: %+v, %v", o, err)
	}
	plan, err := ranchercluster.UnmarshalPlan(ex.Saga.Plan)
	if err != nil {
		t.Fatalf("explain's plan: %v\n%s", err, ex.Saga.Plan)
	}
	steps := map[string]string{}
	for _, st := range ex.Saga.Steps {
		steps[st.Name] = st.Does
		t.Logf("%s: %s", st.Name, st.Does)
	}
	if first := ex.Saga.Steps[0]; !first.Ran || len(first.Calls) == 0 {
		t.Errorf("the plan step did not run, or read nothing: %+v", first)
	}
	if !strings.Contains(steps["cluster"], plan.Cluster.Name) || !strings.Contains(steps["access"], plan.Keycloak.ParentGroup) {
		t.Errorf("the cluster and access steps do not name cluster %s and group %s: %q, %q",
			plan.Cluster.Name, plan.Keycloak.ParentGroup, steps["cluster"], steps["access"])
	}
	var wantProjects, wantServers []string
	for _, tp := range plan.Tenants {
		wantProjects = append(wantProjects, tp.Name)
		wantServers = append(wantServers, tp.LoadBalancer.Name)
	}
	for _, n := range plan.Nodes {
		wantServers = append(wantServers, n.Name)
	}

	s.Deliver(orderUUID)
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create order %s: %s", o.State, o.ErrorMessage)
	}
	inv := s.OpenStack.Inventory("")
	var projects, servers []string
	for _, p := range inv.Projects {
		projects = append(projects, p.Name)
	}
	for _, sv := range inv.Servers {
		servers = append(servers, sv.Name)
	}
	for what, pair := range map[string][2][]string{"projects": {projects, wantProjects}, "servers": {servers, wantServers}} {
		got, want := pair[0], pair[1]
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("the run made the %s\n  %v\nexplain's plan lists\n  %v", what, got, want)
		}
	}
	res, err := s.Admin.Resource(ctx(t), resUUID)
	if err != nil {
		t.Fatal(err)
	}
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID, Silent: true})
	ex = s.Explain(t, term)
	if ex.Saga == nil || ex.Saga.Definition != "rancher-cluster-terminate" {
		t.Fatalf("explain of a cluster terminate: saga %+v", ex.Saga)
	}
	for _, st := range ex.Saga.Steps {
		if st.Name == "cluster" && (!strings.Contains(st.Does, plan.Cluster.Name) || !strings.Contains(st.Does, res.BackendID)) {
			t.Errorf("the terminate's cluster step does not name cluster %s (id %s): %q", plan.Cluster.Name, res.BackendID, st.Does)
		}
	}
	if b, err := json.Marshal(ex.Saga.Steps); err == nil {
		t.Logf("terminate steps: %s", b)
	}
}
