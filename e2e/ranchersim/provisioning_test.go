package ranchersim_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

// clusterBody is a create body in Waldur's shape (reference A.3), without
// the registry parts.
func clusterBody(name string) map[string]any {
	return map[string]any{
		"type":     "provisioning.cattle.io.cluster",
		"metadata": map[string]any{"name": name, "namespace": "fleet-default"},
		"spec": map[string]any{"kubernetesVersion": "v1.31.7+rke2r1", "rkeConfig": map[string]any{
			"chartValues":         map[string]any{"rke2-cilium": map[string]any{}},
			"machineGlobalConfig": map[string]any{"cni": "cilium", "disable-kube-proxy": false, "etcd-expose-metrics": false},
		}},
	}
}

// provision creates a cluster and a registration token and returns the v3
// id and the token, reading the v1 object until it names the v3 cluster.
func (c *client) provision(name string) (clusterID, token string) {
	c.t.Helper()
	c.do("POST", "/v1/provisioning.cattle.io.clusters", clusterBody(name)).want(c.t, http.StatusCreated)
	for range 10 {
		st, _ := c.do("GET", "/v1/provisioning.cattle.io.clusters/fleet-default/"+name, nil).want(c.t, http.StatusOK).obj["status"].(map[string]any)
		if id, _ := st["clusterName"].(string); id != "" {
			clusterID = id
			break
		}
	}
	if clusterID == "" {
		c.t.Fatalf("cluster %s never got a v3 id", name)
	}
	token = c.do("POST", "/v3/clusterregistrationtoken", map[string]any{"type": "clusterRegistrationToken", "clusterId": clusterID}).
		want(c.t, http.StatusCreated).str("token")
	return clusterID, token
}

// register posts to the sim-only agent endpoint, with no API key.
func (c *client) register(token, hostname string, roles ...string) response {
	c.t.Helper()
	anon := *c
	anon.user = ""
	return anon.do("POST", ranchersim.RegisterPath, ranchersim.Registration{Token: token, Hostname: hostname, Roles: roles, Address: "10.0.0.11"})
}

func conditionStatus(obj map[string]any, typ string) (string, bool) {
	conds, _ := obj["conditions"].([]any)
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			return s, true
		}
	}
	return "", false
}

func TestProvisioning(t *testing.T) {
	tests := []struct {
		name string
		opts ranchersim.ProvisioningOptions
		run  func(t *testing.T, sim *ranchersim.Server, c *client)
	}{
		{"a v1 cluster keeps its body, gets fleet-default/<name> and names its v3 id from the second read", ranchersim.ProvisioningOptions{},
			func(t *testing.T, sim *ranchersim.Server, c *client) {
				r := c.do("POST", "/v1/provisioning.cattle.io.clusters", clusterBody("k8s-a")).want(t, http.StatusCreated)
				eq(t, "id", r.str("id"), "fleet-default/k8s-a")
				pc, ok := sim.ProvisioningClusterNamed("k8s-a")
				if !ok {
					t.Fatal("not in the inventory")
				}
				want, _ := json.Marshal(clusterBody("k8s-a"))
				eq(t, "body as sent", string(pc.Body), string(want))
				first := c.do("GET", "/v1/provisioning.cattle.io.clusters/fleet-default/k8s-a", nil).want(t, http.StatusOK)
				if st := first.obj["status"].(map[string]any); st["clusterName"] != nil || st["ready"] != false {
					t.Errorf("first read status %v: want no clusterName yet, not ready", st)
				}
				second := c.do("GET", "/v1/provisioning.cattle.io.clusters/fleet-default/k8s-a", nil).want(t, http.StatusOK)
				eq(t, "clusterName", second.obj["status"].(map[string]any)["clusterName"], any(pc.ClusterID))
				if !strings.HasPrefix(pc.ClusterID, "c-m-") || len(pc.ClusterID) != len("c-m-12345678") {
					t.Errorf("v3 id %q", pc.ClusterID)
				}
				v3 := c.do("GET", "/v3/clusters/"+pc.ClusterID, nil).want(t, http.StatusOK)
				eq(t, "v3 state", v3.str("state"), "provisioning")
				eq(t, "v3 name", v3.str("name"), "k8s-a")
			}},
		{"a duplicate name is steve's 409 AlreadyExists", ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			c.do("POST", "/v1/provisioning.cattle.io.clusters", clusterBody("k8s-a")).want(t, http.StatusCreated)
			r := c.do("POST", "/v1/provisioning.cattle.io.clusters", clusterBody("k8s-a")).want(t, http.StatusConflict)
			eq(t, "type", r.str("type"), "error")
			eq(t, "code", r.str("code"), "AlreadyExists")
			eq(t, "status", r.obj["status"], any(float64(409)))
			eq(t, "clusters", len(sim.Inventory().Clusters), 1)
		}},
		{"an invalid name is a 422 and makes nothing", ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			r := c.do("POST", "/v1/provisioning.cattle.io.clusters", clusterBody("K8s_A")).want(t, http.StatusUnprocessableEntity)
			eq(t, "code", r.str("code"), "Invalid")
			if !sim.Inventory().Empty() {
				t.Errorf("inventory %v", sim.Inventory())
			}
		}},
		{"a node registers only with a live token, and a cluster with etcd, control plane and worker nodes all active is active",
			ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
				id, token := c.provision("k8s-b")
				c.register("no-such-token", "server-1", "etcd", "controlplane").wantErr(t, http.StatusUnauthorized, "Unauthorized")
				c.register(token, "", "worker").wantErr(t, http.StatusUnprocessableEntity, "MissingRequired")
				c.register(token, "server-1").wantErr(t, http.StatusUnprocessableEntity, "MissingRequired")
				c.register(token, "server-1", "master").wantErr(t, http.StatusUnprocessableEntity, "InvalidBodyContent")
				n := c.register(token, "server-1", "etcd", "controlplane").want(t, http.StatusCreated)
				eq(t, "state", n.str("state"), "registering")
				eq(t, "requestedHostname", n.str("requestedHostname"), "server-1")
				eq(t, "ipAddress", n.str("ipAddress"), "10.0.0.11")
				eq(t, "clusterId", n.str("clusterId"), id)
				again := c.register(token, "server-1", "etcd", "controlplane").want(t, http.StatusOK)
				eq(t, "same node on re-registration", again.str("id"), n.str("id"))
				// Servers alone: no worker yet.
				for range 3 {
					c.do("GET", "/v3/nodes/"+n.str("id"), nil).want(t, http.StatusOK)
				}
				eq(t, "server state", c.do("GET", "/v3/nodes/"+n.str("id"), nil).str("state"), "active")
				eq(t, "cluster without a worker", c.do("GET", "/v3/clusters/"+id, nil).str("state"), "provisioning")
				w := c.register(token, "worker-1", "worker").want(t, http.StatusCreated)
				eq(t, "with a registering worker", c.do("GET", "/v3/clusters/"+id, nil).str("state"), "provisioning")
				eq(t, "worker, second read", c.do("GET", "/v3/nodes/"+w.str("id"), nil).str("state"), "active")
				eq(t, "cluster", c.do("GET", "/v3/clusters/"+id, nil).str("state"), "active")
				v1 := c.do("GET", "/v1/provisioning.cattle.io.clusters/fleet-default/k8s-b", nil).want(t, http.StatusOK)
				eq(t, "v1 ready", v1.obj["status"].(map[string]any)["ready"], any(true))
				items := c.do("GET", "/v3/clusters/"+id+"/nodes", nil).data(t, "node")
				hosts := fieldOf(items, "requestedHostname") // ordered by id, which is random
				slices.Sort(hosts)
				eqSlice(t, "hostnames", hosts, []string{"server-1", "worker-1"})
				eq(t, "filtered by clusterId", len(c.do("GET", "/v3/nodes?clusterId="+id, nil).data(t, "node")), 2)
				eq(t, "another cluster's", len(c.do("GET", "/v3/nodes?clusterId=c-m-none", nil).data(t, "node")), 0)
			}},
		{"a NeverActive node keeps the cluster provisioning", ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			id, token := c.provision("k8s-c")
			sim.AddNodeFault(ranchersim.NodeFault{Hostname: "worker-1", NeverActive: true})
			c.register(token, "server-1", "etcd", "controlplane", "worker").want(t, http.StatusCreated)
			c.register(token, "worker-1", "worker").want(t, http.StatusCreated)
			for range 5 {
				c.do("GET", "/v3/clusters/"+id+"/nodes", nil).want(t, http.StatusOK)
			}
			got := map[string]string{}
			for _, n := range sim.Nodes(id) {
				got[n.Hostname] = n.State
			}
			eq(t, "server", got["server-1"], "active")
			eq(t, "worker", got["worker-1"], "registering")
			eq(t, "cluster", c.do("GET", "/v3/clusters/"+id, nil).str("state"), "provisioning")
		}},
		{"a drain is recorded and shows no condition, then Drained Unknown, then True", ranchersim.ProvisioningOptions{NodeActivePolls: -1},
			func(t *testing.T, sim *ranchersim.Server, c *client) {
				_, token := c.provision("k8s-d")
				n := c.register(token, "worker-1", "worker").want(t, http.StatusCreated).str("id")
				body := map[string]any{"deleteLocalData": true, "force": true, "ignoreDaemonSets": true, "gracePeriod": -1, "timeout": 60}
				c.do("POST", "/v3/nodes/"+n+"?action=drain", body).want(t, http.StatusOK)
				var seen []string
				for range 4 {
					st, ok := conditionStatus(c.do("GET", "/v3/nodes/"+n, nil).want(t, http.StatusOK).obj, "Drained")
					if !ok {
						st = "-"
					}
					seen = append(seen, st)
				}
				eqSlice(t, "Drained per read", seen, []string{"-", "Unknown", "True", "True"})
				eq(t, "node state", c.do("GET", "/v3/nodes/"+n, nil).str("state"), "drained")
				drains := sim.Drains()
				if len(drains) != 1 {
					t.Fatalf("drains %+v", drains)
				}
				eq(t, "hostname", drains[0].Hostname, "worker-1")
				raw, _ := json.Marshal(body)
				eq(t, "body", drains[0].Body, string(raw))
				in := drains[0].Input
				if in.GracePeriod == nil || *in.GracePeriod != -1 || in.Timeout == nil || *in.Timeout != 60 || in.Force == nil || !*in.Force {
					t.Errorf("decoded input %+v", in)
				}
			}},
		{"faults: a stuck drain stays Unknown, a failed one is False with kubectl's message", ranchersim.ProvisioningOptions{NodeActivePolls: -1},
			func(t *testing.T, sim *ranchersim.Server, c *client) {
				_, token := c.provision("k8s-e")
				sim.AddNodeFault(ranchersim.NodeFault{Hostname: "stuck", DrainStuck: true})
				sim.AddNodeFault(ranchersim.NodeFault{Hostname: "broken", DrainError: "cannot evict pod as it would violate the pod's disruption budget"})
				stuck := c.register(token, "stuck", "worker").str("id")
				broken := c.register(token, "broken", "worker").str("id")
				for _, id := range []string{stuck, broken} {
					c.do("POST", "/v3/nodes/"+id+"?action=drain", map[string]any{"force": true}).want(t, http.StatusOK)
				}
				var last map[string]any
				for range 6 {
					last = c.do("GET", "/v3/nodes/"+stuck, nil).obj
				}
				st, _ := conditionStatus(last, "Drained")
				eq(t, "stuck", st, "Unknown")
				for range 6 {
					last = c.do("GET", "/v3/nodes/"+broken, nil).obj
				}
				st, _ = conditionStatus(last, "Drained")
				eq(t, "broken", st, "False")
				eq(t, "transitioning", last["transitioning"], any("error"))
				if !strings.Contains(last["transitioningMessage"].(string), "disruption budget") {
					t.Errorf("message %v", last["transitioningMessage"])
				}
			}},
		{"deleting the v1 cluster removes the v3 cluster, nodes, tokens and bindings; secrets stay", ranchersim.ProvisioningOptions{},
			func(t *testing.T, sim *ranchersim.Server, c *client) {
				id, token := c.provision("k8s-f")
				c.register(token, "server-1", "etcd", "controlplane", "worker").want(t, http.StatusCreated)
				c.do("POST", "/v3/clusterroletemplatebindings", map[string]any{"clusterId": id, "roleTemplateId": "cluster-member",
					"groupPrincipalId": "keycloakoidc_group://c_x"}).want(t, http.StatusCreated)
				sec := c.do("POST", "/v1/secrets", map[string]any{"type": "kubernetes.io/basic-auth",
					"metadata": map[string]any{"namespace": "fleet-default", "generateName": "registryconfig-auth-"},
					"data":     map[string]any{"username": "dQ==", "password": "cA=="}}).want(t, http.StatusCreated)
				if !strings.HasPrefix(sec.str("id"), "fleet-default/registryconfig-auth-") {
					t.Errorf("secret id %q", sec.str("id"))
				}
				c.do("DELETE", "/v1/provisioning.cattle.io.clusters/fleet-default/k8s-f", nil).want(t, http.StatusOK)
				c.do("GET", "/v3/clusters/"+id, nil).wantErr(t, http.StatusNotFound, "NotFound")
				c.register(token, "server-2", "worker").wantErr(t, http.StatusUnauthorized, "Unauthorized")
				inv := sim.Inventory()
				eq(t, "secrets left", len(inv.Secrets), 1)
				inv.Secrets = nil
				if !inv.Empty() {
					t.Errorf("left: %v", inv)
				}
				c.do("DELETE", "/v1/secrets/"+sec.str("id"), nil).want(t, http.StatusOK)
				if !sim.Inventory().Empty() {
					t.Errorf("left: %v", sim.Inventory())
				}
			}},
		{"v3 PUT renames, generateKubeconfig answers a kubeconfig with a token", ranchersim.ProvisioningOptions{},
			func(t *testing.T, sim *ranchersim.Server, c *client) {
				id, _ := c.provision("k8s-g")
				c.do("PUT", "/v3/clusters/"+id, map[string]any{"name": "renamed"}).want(t, http.StatusOK)
				eq(t, "name", c.do("GET", "/v3/clusters/"+id, nil).str("name"), "renamed")
				kc := c.do("POST", "/v3/clusters/"+id+"?action=generateKubeconfig", nil).want(t, http.StatusOK).str("config")
				for _, want := range []string{"kind: Config", "server: \"" + sim.URL() + "/k8s/clusters/" + id + "\"", "token: \"kubeconfig-"} {
					if !strings.Contains(kc, want) {
						t.Errorf("kubeconfig lacks %q:\n%s", want, kc)
					}
				}
				c.do("PUT", "/v3/clusters/"+ranchersim.DefaultClusterID, map[string]any{"name": "x"}).wantErr(t, http.StatusMethodNotAllowed, "MethodNotAllow")
			}},
		{"registration tokens list by clusterId with their commands", ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			id, token := c.provision("k8s-h")
			c.provision("k8s-i")
			items := c.do("GET", "/v3/clusterregistrationtokens?limit=-1&clusterId="+id, nil).data(t, "clusterRegistrationToken")
			if len(items) != 1 {
				t.Fatalf("tokens %v", items)
			}
			tok := items[0]
			eq(t, "token", tok["token"], any(token))
			for _, f := range []string{"command", "nodeCommand", "insecureCommand", "manifestUrl"} {
				if s, _ := tok[f].(string); s == "" {
					t.Errorf("%s empty", f)
				}
			}
			if !strings.Contains(tok["nodeCommand"].(string), "--token "+token) {
				t.Errorf("nodeCommand %v", tok["nodeCommand"])
			}
			c.do("POST", "/v3/clusterregistrationtokens", map[string]any{"clusterId": "c-m-none"}).wantErr(t, http.StatusUnprocessableEntity, "InvalidReference")
		}},
		{"cluster bindings: raw filters, 409 on a duplicate, 422 on an unknown role", ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			id, _ := c.provision("k8s-j")
			bind := func(role, group string) response {
				return c.do("POST", "/v3/clusterroletemplatebindings", map[string]any{"type": "clusterRoleTemplateBinding",
					"clusterId": id, "roleTemplateId": role, "groupPrincipalId": "keycloakoidc_group://" + group})
			}
			want := bind("cluster-member", "c_1").want(t, http.StatusCreated).str("id")
			bind("cluster-owner", "c_1").want(t, http.StatusCreated)
			bind("cluster-member", "c_1").wantErr(t, http.StatusConflict, "AlreadyExists")
			bind("project-owner", "c_1").wantErr(t, http.StatusUnprocessableEntity, "InvalidReference")
			raw := "/v3/clusterroletemplatebindings?roleTemplateId=cluster-member&clusterId=" + id + "&groupPrincipalId=keycloakoidc_group://c_1"
			eqSlice(t, "filtered", ids(c.do("GET", raw, nil).data(t, "clusterRoleTemplateBinding")), []string{want})
			c.do("DELETE", "/v3/clusterroletemplatebindings/"+want, nil).want(t, http.StatusOK)
			c.do("DELETE", "/v3/clusterroletemplatebindings/"+want, nil).wantErr(t, http.StatusNotFound, "NotFound")
			eq(t, "left", len(sim.Inventory().ClusterBindings), 1)
		}},
		{"the register endpoint fails while Rancher is down", ranchersim.ProvisioningOptions{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			_, token := c.provision("k8s-k")
			sim.Down(true)
			c.register(token, "server-1", "etcd").want(t, http.StatusServiceUnavailable)
			sim.Down(false)
			c.register(token, "server-1", "etcd").want(t, http.StatusCreated)
			c.register("bad", "x", "worker").want(t, http.StatusUnauthorized)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := ranchersim.NewTestServer(t, ranchersim.Options{Provisioning: tc.opts})
			tc.run(t, sim, newClient(t, sim))
		})
	}
}

func TestProvisioningAdminHTTP(t *testing.T) {
	sim := ranchersim.NewTestServer(t, ranchersim.Options{})
	c := newClient(t, sim)
	admin := newClient(t, sim)
	admin.user = ""
	_, token := c.provision("k8s-admin")
	id := c.register(token, "w", "worker").want(t, http.StatusCreated).str("id")
	for range 3 {
		c.do("GET", "/v3/nodes/"+id, nil).want(t, http.StatusOK)
	}
	eq(t, "node", c.do("GET", "/v3/nodes/"+id, nil).str("state"), "active")
	c.do("POST", "/v3/nodes/"+id+"?action=drain", map[string]any{"force": true}).want(t, http.StatusOK)

	var inv ranchersim.Inventory
	if err := json.Unmarshal([]byte(admin.do("GET", "/sim/inventory", nil).want(t, http.StatusOK).raw), &inv); err != nil {
		t.Fatal(err)
	}
	eq(t, "clusters", len(inv.Clusters), 1)
	eq(t, "nodes", len(inv.Nodes), 1)
	eq(t, "tokens", len(inv.Tokens), 1)
	var drains []ranchersim.DrainCall
	if err := json.Unmarshal([]byte(admin.do("GET", "/sim/drains", nil).want(t, http.StatusOK).raw), &drains); err != nil {
		t.Fatal(err)
	}
	if len(drains) != 1 || drains[0].Body != `{"force":true}` {
		t.Errorf("drains %+v", drains)
	}
}
