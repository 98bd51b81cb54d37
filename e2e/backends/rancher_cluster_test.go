package backends_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Tests of rancher.ClusterClient (issue 13's cluster-provisioner) against
// the Rancher simulator; they need no Kubernetes API server.

const (
	clusterUUID = "0b5b9e0c-2c7e-4b55-9f55-5d9a4e8f0c11"
	otherUUID   = "7d0f2a51-9c3e-4d1b-8a6f-2e4c5b6a7d80"
)

// newClusterClient returns a client on a simulator of its own. The poll
// interval is short: progress in the simulator is counted in reads.
func newClusterClient(t *testing.T, opts ranchersim.Options) (*rancher.ClusterClient, *ranchersim.Server) {
	t.Helper()
	sim := ranchersim.NewTestServer(t, opts)
	o := sim.Options()
	c, err := rancher.NewClusterClient(rancher.ClusterOptions{BackendURL: sim.URL(), AccessKey: o.AccessKey,
		SecretKey: config.Secret(o.SecretKey), PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim
}

func clusterCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// registerNode does what a booted VM's cloud-init does: the sim-only
// agent registration with the cluster's token.
func registerNode(t *testing.T, sim *ranchersim.Server, token, hostname string, roles ...string) (status int, nodeID string) {
	t.Helper()
	body, _ := json.Marshal(ranchersim.Registration{Token: token, Hostname: hostname, Roles: roles, Address: "10.1.0.11"})
	resp, err := http.Post(sim.URL()+ranchersim.RegisterPath, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	var n struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &n)
	return resp.StatusCode, n.ID
}

// provisioned is a cluster made through the client: its reference and
// token.
type provisioned struct {
	ref   rancher.ClusterRef
	token rancher.RegistrationToken
}

// provision creates the cluster, waits for its v3 id and gets a token.
func provision(t *testing.T, c *rancher.ClusterClient, spec rancher.ClusterSpec) provisioned {
	t.Helper()
	ctx := clusterCtx(t)
	if _, err := c.CreateProvisioningCluster(ctx, spec); err != nil {
		t.Fatalf("create: %v", err)
	}
	id, err := c.WaitV3ClusterID(ctx, spec.Name, 10*time.Second)
	if err != nil {
		t.Fatalf("v3 id: %v", err)
	}
	ref := rancher.ClusterRef{Name: spec.Name, ID: id, ResourceUUID: spec.ResourceUUID}
	tok, err := c.CreateRegistrationToken(ctx, ref)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return provisioned{ref: ref, token: tok}
}

// activate lists the cluster's nodes until all are active, at most 20
// reads (the simulator activates a node on its second).
func activate(t *testing.T, c *rancher.ClusterClient, clusterID string, want int) []rancher.Node {
	t.Helper()
	for range 20 {
		nodes, err := c.ListClusterNodes(clusterCtx(t), clusterID)
		if err != nil {
			t.Fatal(err)
		}
		active := 0
		for _, n := range nodes {
			active += map[bool]int{true: 1}[n.State == "active"]
		}
		if len(nodes) == want && active == want {
			return nodes
		}
	}
	t.Fatalf("cluster %s: %d nodes never all active", clusterID, want)
	return nil
}

func spec(name, uuid string) rancher.ClusterSpec {
	return rancher.ClusterSpec{Name: name, ResourceUUID: uuid}
}

// wantErr fails unless err matches target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// a3Registry is the reference's (A.3) registry payload, as Mastermind's
// test pins it, plus sitebus's ownership annotations; SECRET stands for
// the generated secret name.
const a3Registry = `{"type":"provisioning.cattle.io.cluster",
 "metadata":{"name":"k8s-reg","namespace":"fleet-default",
   "annotations":{"sitebus.io/resource-uuid":"` + clusterUUID + `","waldur/managed":"true"}},
 "spec":{"kubernetesVersion":"v1.33.0+rke2r1",
  "rkeConfig":{
   "chartValues":{"rke2-cilium":{}},
   "dataDirectories":{"systemAgent":"/opt/rke2_storage/agent","provisioning":"/opt/rke2_storage/provisioning","k8sDistro":"/opt/rke2_storage/rke2"},
   "machineGlobalConfig":{"cni":"cilium","disable-kube-proxy":false,"etcd-expose-metrics":false},
   "machineSelectorConfig":[{"config":{"protect-kernel-defaults":false,"system-default-registry":"example.com"}}],
   "registries":{"configs":{"example.com":{"authConfigSecretName":"SECRET","caBundle":null,"insecureSkipVerify":false,"tlsSecretName":null}},"mirrors":{}}}}}`

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRancherClusterProvisioning(t *testing.T) {
	tests := []struct {
		name string
		opts ranchersim.Options
		run  func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server)
	}{
		{"create, v3 id, token, three servers and a worker register and the cluster goes active", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				p, err := c.CreateProvisioningCluster(ctx, spec("k8s-a", clusterUUID))
				noErr(t, "create", err)
				if !p.Created || p.ID != "fleet-default/k8s-a" || p.ClusterID != "" {
					t.Fatalf("created %+v: want Created, fleet-default/k8s-a, no v3 id in the create's answer", p)
				}
				pc, _ := sim.ProvisioningClusterNamed("k8s-a")
				want, _ := json.Marshal(rancher.ClusterPayload(spec("k8s-a", clusterUUID), ""))
				eqStr(t, "body as sent", string(pc.Body), string(want))
				eqStr(t, "default version", pc.Spec()["kubernetesVersion"].(string), rancher.DefaultKubernetesVersion)
				eqStr(t, "no registries", strings.Join(keys(pc.Spec()["rkeConfig"].(map[string]any)), ","),
					"chartValues,dataDirectories,machineGlobalConfig,machineSelectorConfig")

				id, err := c.WaitV3ClusterID(ctx, "k8s-a", 10*time.Second)
				noErr(t, "v3 id", err)
				eqStr(t, "v3 id", id, pc.ClusterID)
				ref := rancher.ClusterRef{Name: "k8s-a", ID: id, ResourceUUID: clusterUUID}
				if _, found, err := c.GetRegistrationToken(ctx, id); found || err != nil {
					t.Fatalf("token before creating one: found %v, err %v", found, err)
				}
				tok, err := c.CreateRegistrationToken(ctx, ref)
				noErr(t, "token", err)
				again, err := c.CreateRegistrationToken(ctx, ref)
				noErr(t, "token again", err)
				if again.ID != tok.ID || len(sim.Inventory().Tokens) != 1 {
					t.Errorf("a second CreateRegistrationToken made another: %s vs %s, %d tokens", again.ID, tok.ID, len(sim.Inventory().Tokens))
				}
				if tok.Token == "" || !strings.Contains(tok.NodeCommand, tok.Token.Reveal()) || tok.ManifestURL == "" || tok.Command == "" || tok.InsecureCommand == "" {
					t.Errorf("token fields %+v", tok)
				}
				for _, h := range []string{"server-1", "server-2", "server-3"} {
					if st, _ := registerNode(t, sim, tok.Token.Reveal(), h, "etcd", "controlplane"); st != http.StatusCreated {
						t.Fatalf("register %s: %d", h, st)
					}
				}
				cl, err := c.GetCluster(ctx, id)
				noErr(t, "cluster", err)
				eqStr(t, "without a worker", cl.State, "provisioning")
				if st, _ := registerNode(t, sim, tok.Token.Reveal(), "worker-1", "worker"); st != http.StatusCreated {
					t.Fatalf("register worker: %d", st)
				}
				nodes := activate(t, c, id, 4)
				for _, n := range nodes {
					if n.RequestedHostname == "worker-1" && (!n.Worker || n.Etcd || n.ControlPlane) {
						t.Errorf("worker roles %+v", n)
					}
				}
				cl, err = c.GetCluster(ctx, id)
				noErr(t, "cluster", err)
				eqStr(t, "cluster", cl.State, "active")
				got, err := c.GetProvisioningCluster(ctx, "k8s-a")
				noErr(t, "v1", err)
				if !got.Ready || !got.Managed || got.ResourceUUID != clusterUUID {
					t.Errorf("v1 %+v: want ready, managed, the resource's", got)
				}
				n, err := c.GetNode(ctx, nodes[0].ID)
				noErr(t, "node", err)
				eqStr(t, "node", n.ID, nodes[0].ID)
			}},
		{"a private registry: the secret first, named in Mastermind's exact payload, reused on a retry, deleted with the cluster", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				sp := rancher.ClusterSpec{Name: "k8s-reg", ResourceUUID: clusterUUID, KubernetesVersion: "v1.33.0+rke2r1",
					Registry: &rancher.Registry{URL: "example.com", Username: "user", Password: "1234"}}
				_, err := c.CreateProvisioningCluster(ctx, sp)
				noErr(t, "create", err)
				inv := sim.Inventory()
				if len(inv.Secrets) != 1 {
					t.Fatalf("secrets %+v", inv.Secrets)
				}
				sec := inv.Secrets[0]
				eqStr(t, "secret type", sec.Type, "kubernetes.io/basic-auth")
				if !strings.HasPrefix(sec.Name, "registryconfig-auth-") || sec.Data["username"] != "dXNlcg==" || sec.Data["password"] != "MTIzNA==" {
					t.Errorf("secret %+v", sec)
				}
				pc, _ := sim.ProvisioningClusterNamed("k8s-reg")
				eqStr(t, "payload", string(pc.Body), strings.Replace(compactJSON(t, a3Registry), "SECRET", sec.Name, 1))

				// A retry after the cluster was made makes no other secret.
				p, err := c.CreateProvisioningCluster(ctx, sp)
				noErr(t, "retry", err)
				if p.Created || len(sim.Inventory().Secrets) != 1 {
					t.Errorf("retry: created %v, %d secrets", p.Created, len(sim.Inventory().Secrets))
				}
				noErr(t, "delete", c.DeleteCluster(ctx, rancher.ClusterRef{Name: "k8s-reg", ResourceUUID: clusterUUID}))
				if inv := sim.Inventory(); !inv.Empty() {
					t.Errorf("left after delete: %v", inv)
				}
			}},
		{"a crash between the registry secret and the cluster: the retry reuses the secret", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				sp := rancher.ClusterSpec{Name: "k8s-crash", ResourceUUID: clusterUUID,
					Registry: &rancher.Registry{URL: "registry.example.com:5000", Username: "u", Password: "p"}}
				sim.AddFault(ranchersim.Fault{Method: "POST", PathPrefix: "/v1/provisioning.cattle.io.clusters", Status: 503, Count: 1})
				_, err := c.CreateProvisioningCluster(ctx, sp)
				if err == nil || fault.IsTerminal(err) {
					t.Fatalf("create with Rancher failing: err = %v, want a retryable error", err)
				}
				_, err = c.CreateProvisioningCluster(ctx, sp)
				noErr(t, "retry", err)
				inv := sim.Inventory()
				if len(inv.Secrets) != 1 || len(inv.ProvisioningClusters) != 1 {
					t.Fatalf("inventory %v", inv)
				}
				if got := inv.ProvisioningClusters[0].Spec()["rkeConfig"].(map[string]any)["registries"].(map[string]any)["configs"].(map[string]any)["registry.example.com:5000"].(map[string]any)["authConfigSecretName"]; got != inv.Secrets[0].Name {
					t.Errorf("cluster names secret %v, have %s", got, inv.Secrets[0].Name)
				}
			}},
		{"a retried create adopts its own cluster; another resource's or an unmarked one is refused and left alone", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				_, err := c.CreateProvisioningCluster(ctx, spec("k8s-a", clusterUUID))
				noErr(t, "create", err)
				p, err := c.CreateProvisioningCluster(ctx, spec("k8s-a", clusterUUID))
				noErr(t, "retry", err)
				if p.Created {
					t.Error("a retry reports Created")
				}
				_, err = c.CreateProvisioningCluster(ctx, spec("k8s-a", otherUUID))
				wantErr(t, "another resource's name", err, backend.ErrNotManaged)
				foreign, err := sim.AddProvisioningCluster("foreign", nil, map[string]string{"team": "someone-else"})
				noErr(t, "seed", err)
				_, err = c.CreateProvisioningCluster(ctx, spec("foreign", clusterUUID))
				wantErr(t, "unmarked, create", err, backend.ErrNotManaged)
				if !strings.Contains(err.Error(), "fleet-default/foreign") {
					t.Errorf("message does not name the cluster: %v", err)
				}
				byID := rancher.ClusterRef{ID: foreign.ClusterID, ResourceUUID: clusterUUID}
				wantErr(t, "unmarked, delete by id", c.DeleteCluster(ctx, byID), backend.ErrNotManaged)
				wantErr(t, "unmarked, delete by name", c.DeleteCluster(ctx, rancher.ClusterRef{Name: "foreign", ResourceUUID: clusterUUID}), backend.ErrNotManaged)
				wantErr(t, "unmarked, rename", c.RenameCluster(ctx, byID, "mine"), backend.ErrNotManaged)
				_, err = c.CreateRegistrationToken(ctx, byID)
				wantErr(t, "unmarked, token", err, backend.ErrNotManaged)
				_, err = c.EnsureClusterGroupBinding(ctx, byID, "cluster-member", "c_x")
				wantErr(t, "unmarked, binding", err, backend.ErrNotManaged)
				_, err = c.GenerateKubeconfig(ctx, byID)
				wantErr(t, "unmarked, kubeconfig", err, backend.ErrNotManaged)
				wantErr(t, "imported cluster", c.DeleteCluster(ctx, rancher.ClusterRef{ID: ranchersim.DefaultClusterID, ResourceUUID: clusterUUID}), backend.ErrNotManaged)
				cl, ok := sim.ClusterByID(foreign.ClusterID)
				if !ok || cl.Name != "foreign" {
					t.Errorf("foreign cluster changed: %+v %v", cl, ok)
				}
				if inv := sim.Inventory(); len(inv.Tokens)+len(inv.ClusterBindings) != 0 || len(inv.Clusters) != 2 {
					t.Errorf("inventory %v", inv)
				}
			}},
		{"a 409 on create (made meanwhile) adopts the cluster only if it is ours", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				_, err := c.CreateProvisioningCluster(ctx, spec("k8s-a", clusterUUID))
				noErr(t, "create", err)
				_, err = sim.AddProvisioningCluster("foreign", nil, nil)
				noErr(t, "seed", err)
				// The first look-up misses it, as if made between look-up and
				// create.
				for _, name := range []string{"k8s-a", "foreign"} {
					sim.AddFault(ranchersim.Fault{Method: "GET", PathPrefix: "/v1/provisioning.cattle.io.clusters/fleet-default/" + name, Status: 404, Count: 1})
				}
				sim.ResetCalls()
				p, err := c.CreateProvisioningCluster(ctx, spec("k8s-a", clusterUUID))
				noErr(t, "ours", err)
				if p.Created || p.Name != "k8s-a" {
					t.Errorf("adopted %+v", p)
				}
				eqInt(t, "409s", sim.CallCount("POST", "/v1/provisioning.cattle.io.clusters", http.StatusConflict), 1)
				_, err = c.CreateProvisioningCluster(ctx, spec("foreign", clusterUUID))
				wantErr(t, "foreign", err, backend.ErrNotManaged)
				eqInt(t, "409s", sim.CallCount("POST", "/v1/provisioning.cattle.io.clusters", http.StatusConflict), 2)
			}},
		{"invalid specs are refused before any call", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				for _, sp := range []rancher.ClusterSpec{
					spec("K8s_A", clusterUUID), spec("k8s-a", ""),
					{Name: "k8s-a", ResourceUUID: clusterUUID, Registry: &rancher.Registry{URL: "example.com", Username: "u"}},
				} {
					_, err := c.CreateProvisioningCluster(ctx, sp)
					wantErr(t, sp.Name, err, backend.ErrInvalid)
				}
				eqInt(t, "calls", len(sim.Calls()), 0)
			}},
		{"WaitNodesActive waits through registering with progress; a node never active or in error ends terminal, named", ranchersim.Options{},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				p := provision(t, c, spec("k8s-w", clusterUUID))
				sim.AddNodeFault(ranchersim.NodeFault{Hostname: "worker-9", NeverActive: true})
				sim.AddNodeFault(ranchersim.NodeFault{Hostname: "worker-8", Error: "rke2 install failed"})
				hosts := []string{"server-1", "worker-1"}
				for _, h := range []string{"server-1", "worker-1", "worker-8", "worker-9"} {
					registerNode(t, sim, p.token.Token.Reveal(), h, "etcd", "controlplane", "worker")
				}
				var seen []rancher.NodeProgress
				noErr(t, "wait", c.WaitNodesActive(ctx, p.ref.ID, hosts, 10*time.Second, func(np rancher.NodeProgress) { seen = append(seen, np) }))
				if len(seen) < 2 || seen[0].Active != 0 || seen[len(seen)-1].Active != 2 || seen[0].Waiting[0] != "server-1 (registering)" {
					t.Errorf("progress %+v: want registering first, then both active", seen)
				}
				err := c.WaitNodesActive(ctx, p.ref.ID, []string{"server-1", "worker-9", "worker-7"}, 30*time.Millisecond, nil)
				wantErr(t, "never active", err, rancher.ErrNodesInactive)
				if !fault.IsTerminal(err) || !strings.Contains(err.Error(), "worker-9 (registering), worker-7 (missing)") {
					t.Errorf("err %v: want terminal, naming the waiting nodes", err)
				}
				err = c.WaitNodesActive(ctx, p.ref.ID, []string{"server-1", "worker-8"}, 10*time.Second, nil)
				wantErr(t, "error state", err, rancher.ErrNodeFailed)
				if !fault.IsTerminal(err) || !strings.Contains(err.Error(), "rke2 install failed") {
					t.Errorf("err %v", err)
				}
			}},
		{"the v3 id: a bounded wait, retryable when Rancher never names it", ranchersim.Options{Provisioning: ranchersim.ProvisioningOptions{ClusterNamePolls: 1 << 30}},
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server) {
				ctx := clusterCtx(t)
				_, err := c.CreateProvisioningCluster(ctx, spec("k8s-a", clusterUUID))
				noErr(t, "create", err)
				_, err = c.WaitV3ClusterID(ctx, "k8s-a", 20*time.Millisecond)
				if err == nil || fault.IsTerminal(err) || !strings.Contains(err.Error(), "fleet-default/k8s-a") {
					t.Fatalf("err = %v, want a retryable error naming the cluster", err)
				}
				if n := sim.CallCount("GET", "/v1/provisioning.cattle.io.clusters/fleet-default/k8s-a", 200); n < 2 {
					t.Errorf("%d reads: want a poll, not one look", n)
				}
				// Before the v3 id, the cluster can still be deleted by name
				// (a compensation right after the create).
				noErr(t, "delete by name", c.DeleteCluster(ctx, rancher.ClusterRef{Name: "k8s-a", ResourceUUID: clusterUUID}))
				if inv := sim.Inventory(); !inv.Empty() {
					t.Errorf("left: %v", inv)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, sim := newClusterClient(t, tc.opts)
			tc.run(t, c, sim)
		})
	}
}

func TestRancherClusterNodes(t *testing.T) {
	stuck := ranchersim.NodeFault{Hostname: "worker-2", DrainStuck: true}
	failing := ranchersim.NodeFault{Hostname: "worker-2", DrainError: "error when evicting pods/web-0: Cannot evict pod as it would violate the pod's disruption budget."}
	tests := []struct {
		name  string
		fault *ranchersim.NodeFault
		run   func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string)
	}{
		{"drain sends Mastermind's body and waits through a missing condition, Unknown, to True", nil,
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string) {
				ctx := clusterCtx(t)
				noErr(t, "drain", c.DrainNode(ctx, p.ref, nodes["worker-2"], rancher.DefaultDrainInput()))
				noErr(t, "wait", c.WaitDrained(ctx, nodes["worker-2"], 10*time.Second))
				drains := sim.Drains()
				if len(drains) != 1 {
					t.Fatalf("drains %+v", drains)
				}
				eqStr(t, "body", drains[0].Body, `{"deleteLocalData":true,"force":true,"ignoreDaemonSets":true,"gracePeriod":-1,"timeout":60}`)
				eqStr(t, "node", drains[0].Hostname, "worker-2")
				// The wait read the node at least three times: no condition,
				// Unknown, True.
				if n := sim.CallCount("GET", "/v3/nodes/"+nodes["worker-2"], 200); n < 3 {
					t.Errorf("%d reads", n)
				}
				noErr(t, "delete node", c.DeleteNode(ctx, p.ref, nodes["worker-2"]))
				noErr(t, "delete node again", c.DeleteNode(ctx, p.ref, nodes["worker-2"]))
				eqInt(t, "nodes left", len(sim.Nodes(p.ref.ID)), 3)
			}},
		{"a drain that stays Unknown ends in a terminal \"Node drain timeout.\"", &stuck,
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string) {
				ctx := clusterCtx(t)
				noErr(t, "drain", c.DrainNode(ctx, p.ref, nodes["worker-2"], rancher.DefaultDrainInput()))
				err := c.WaitDrained(ctx, nodes["worker-2"], 30*time.Millisecond)
				wantErr(t, "stuck", err, rancher.ErrDrainTimeout)
				if !fault.IsTerminal(err) || !strings.HasPrefix(err.Error(), "Node drain timeout.") || !strings.Contains(err.Error(), "Drained is Unknown") {
					t.Errorf("err %v: want terminal, Mastermind's message first, the last condition", err)
				}
			}},
		{"a failed drain is a terminal \"Node drain failed.\" with Rancher's message", &failing,
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string) {
				ctx := clusterCtx(t)
				noErr(t, "drain", c.DrainNode(ctx, p.ref, nodes["worker-2"], rancher.DefaultDrainInput()))
				err := c.WaitDrained(ctx, nodes["worker-2"], 10*time.Second)
				wantErr(t, "failed", err, rancher.ErrDrainFailed)
				if !fault.IsTerminal(err) || !strings.HasPrefix(err.Error(), "Node drain failed.") || !strings.Contains(err.Error(), "disruption budget") {
					t.Errorf("err %v", err)
				}
			}},
		{"node calls stay inside the resource's cluster", nil,
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string) {
				ctx := clusterCtx(t)
				other := provision(t, c, spec("k8s-other", otherUUID))
				_, id := registerNode(t, sim, other.token.Token.Reveal(), "other-1", "etcd", "controlplane", "worker")
				wantErr(t, "delete another cluster's node", c.DeleteNode(ctx, p.ref, id), backend.ErrNotManaged)
				wantErr(t, "drain another cluster's node", c.DrainNode(ctx, p.ref, id, rancher.DefaultDrainInput()), backend.ErrNotManaged)
				wrongUUID := p.ref
				wrongUUID.ResourceUUID = otherUUID
				wantErr(t, "another resource's ref", c.DeleteNode(ctx, wrongUUID, nodes["worker-1"]), backend.ErrNotManaged)
				wantErr(t, "drain a node that is gone", c.DrainNode(ctx, p.ref, p.ref.ID+":m-gone", rancher.DefaultDrainInput()), backend.ErrNotFound)
				eqInt(t, "drains", len(sim.Drains()), 0)
				eqInt(t, "nodes", len(sim.Nodes("")), 5)
			}},
		{"rename, kubeconfig, group bindings, then delete leaves nothing, twice", nil,
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string) {
				ctx := clusterCtx(t)
				noErr(t, "rename", c.RenameCluster(ctx, p.ref, "Team cluster"))
				cl, _ := sim.ClusterByID(p.ref.ID)
				eqStr(t, "name", cl.Name, "Team cluster")
				wantErr(t, "empty name", c.RenameCluster(ctx, p.ref, ""), backend.ErrInvalid)
				kc, err := c.GenerateKubeconfig(ctx, p.ref)
				noErr(t, "kubeconfig", err)
				if !strings.Contains(kc.Reveal(), "/k8s/clusters/"+p.ref.ID) || !strings.Contains(kc.Reveal(), "token:") || strings.Contains(kc.String(), "token:") {
					t.Errorf("kubeconfig: %q (printed %q)", kc.Reveal(), kc.String())
				}
				for i, want := range []bool{true, false} {
					created, err := c.EnsureClusterGroupBinding(ctx, p.ref, "cluster-member", "c_0b5b9e0c2c7e4b559f555d9a4e8f0c11")
					noErr(t, "bind", err)
					if created != want {
						t.Errorf("bind #%d: created %v", i+1, created)
					}
				}
				_, err = c.EnsureClusterGroupBinding(ctx, p.ref, "cluster-owner", "c_0b5b9e0c2c7e4b559f555d9a4e8f0c11")
				noErr(t, "bind owner", err)
				_, err = c.EnsureClusterGroupBinding(ctx, p.ref, "cluster-member", "bad group")
				wantErr(t, "bad group", err, backend.ErrInvalid)
				bs := sim.Inventory().ClusterBindings
				if len(bs) != 2 || bs[0].GroupPrincipalID != "keycloakoidc_group://c_0b5b9e0c2c7e4b559f555d9a4e8f0c11" {
					t.Fatalf("bindings %+v", bs)
				}
				noErr(t, "unbind", c.DeleteClusterGroupBinding(ctx, p.ref, "cluster-owner", "c_0b5b9e0c2c7e4b559f555d9a4e8f0c11"))
				noErr(t, "unbind again", c.DeleteClusterGroupBinding(ctx, p.ref, "cluster-owner", "c_0b5b9e0c2c7e4b559f555d9a4e8f0c11"))
				eqInt(t, "bindings", len(sim.Inventory().ClusterBindings), 1)

				byID := rancher.ClusterRef{ID: p.ref.ID, ResourceUUID: clusterUUID} // Waldur's backend_id only
				noErr(t, "delete", c.DeleteCluster(ctx, byID))
				if inv := sim.Inventory(); !inv.Empty() {
					t.Errorf("left after delete: %v", inv)
				}
				noErr(t, "delete again", c.DeleteCluster(ctx, byID))
				noErr(t, "delete again by name", c.DeleteCluster(ctx, p.ref))
				noErr(t, "unbind without a cluster", c.DeleteClusterGroupBinding(ctx, p.ref, "cluster-member", "c_0b5b9e0c2c7e4b559f555d9a4e8f0c11"))
			}},
		{"a binding Rancher made meanwhile (409) counts as there", nil,
			func(t *testing.T, c *rancher.ClusterClient, sim *ranchersim.Server, p provisioned, nodes map[string]string) {
				ctx := clusterCtx(t)
				_, err := c.EnsureClusterGroupBinding(ctx, p.ref, "cluster-member", "c_x")
				noErr(t, "bind", err)
				// The look-up misses it once, so the create meets a 409.
				sim.AddFault(ranchersim.Fault{Method: "GET", PathPrefix: "/v3/clusterroletemplatebindings", Status: 200, Count: 1,
					Body: `{"type":"collection","resourceType":"clusterRoleTemplateBinding","data":[]}`})
				created, err := c.EnsureClusterGroupBinding(ctx, p.ref, "cluster-member", "c_x")
				noErr(t, "bind after 409", err)
				if created {
					t.Error("created after a 409")
				}
				eqInt(t, "409s", sim.CallCount("POST", "/v3/clusterroletemplatebindings", http.StatusConflict), 1)
				eqInt(t, "bindings", len(sim.Inventory().ClusterBindings), 1)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, sim := newClusterClient(t, ranchersim.Options{})
			if tc.fault != nil {
				sim.AddNodeFault(*tc.fault)
			}
			p := provision(t, c, spec("k8s-nodes", clusterUUID))
			nodes := map[string]string{}
			for _, n := range []struct {
				host  string
				roles []string
			}{{"server-1", []string{"etcd", "controlplane"}}, {"server-2", []string{"etcd", "controlplane"}},
				{"worker-1", []string{"worker"}}, {"worker-2", []string{"worker"}}} {
				st, id := registerNode(t, sim, p.token.Token.Reveal(), n.host, n.roles...)
				if st != http.StatusCreated {
					t.Fatalf("register %s: %d", n.host, st)
				}
				nodes[n.host] = id
			}
			activate(t, c, p.ref.ID, 4)
			sim.ResetCalls()
			tc.run(t, c, sim, p, nodes)
		})
	}
}

func TestRancherDrainStatus(t *testing.T) {
	node := func(conds ...rancher.NodeCondition) rancher.Node {
		return rancher.Node{ID: "c-m-1:m-1", Conditions: conds, TransitioningMessage: "from the node"}
	}
	tests := []struct {
		name     string
		node     rancher.Node
		done     bool
		wantKind error
	}{
		{"no Drained condition is not yet, not a crash (Mastermind's StopIteration)", node(rancher.NodeCondition{Type: "Ready", Status: "True"}), false, nil},
		{"no conditions at all is not yet", node(), false, nil},
		{"Unknown is draining", node(rancher.NodeCondition{Type: "Drained", Status: "Unknown"}), false, nil},
		{"transitioning (Mastermind's reading) is draining", node(rancher.NodeCondition{Type: "Drained", Status: "transitioning"}), false, nil},
		{"True is drained", node(rancher.NodeCondition{Type: "Drained", Status: "True"}), true, nil},
		{"False is failed", node(rancher.NodeCondition{Type: "Drained", Status: "False", Message: "pdb"}), false, rancher.ErrDrainFailed},
		{"error (Mastermind's reading) is failed", node(rancher.NodeCondition{Type: "Drained", Status: "error"}), false, rancher.ErrDrainFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done, err := rancher.DrainStatus(tc.node)
			if done != tc.done || (tc.wantKind == nil) != (err == nil) || (tc.wantKind != nil && !errors.Is(err, tc.wantKind)) {
				t.Errorf("DrainStatus = %v, %v; want %v, %v", done, err, tc.done, tc.wantKind)
			}
		})
	}
}

func eqStr(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func eqInt(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %d, want %d", what, got, want)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
