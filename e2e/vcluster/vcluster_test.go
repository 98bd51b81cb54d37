// Package vcluster_test runs `sitebus run` with a vcluster offering
// against the Waldur and Rancher simulators and two real Kubernetes
// control planes, the host and one playing the virtual cluster: the test
// orders in Waldur, brings the virtual cluster's kubeconfig Secret (the
// external driver's contract), sitebus imports the cluster into Rancher
// and applies the agent's manifest into the second API server, and a
// stand-in for Rancher's agent tells the simulator it connected once its
// objects are there.
package vcluster_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/vclustersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

// beforeApply is the failpoint between reading Rancher's registration
// token and applying its manifest into the virtual cluster.
const beforeApply = "provisioner/vcluster-agent/before-apply"

type env struct {
	*harness.Site
	host, virt     *kube.Cluster
	hostCS, virtCS kubernetes.Interface
	// hostKubeconfig and virtKubeconfig are how sitebus reaches the two
	// API servers: their own kubeconfigs unless an option puts a proxy in
	// between.
	hostKubeconfig, virtKubeconfig string
	t                              testing.TB
	// slug names the resource: vc-<slug> on the host and in Rancher; each
	// test has its own, as they share the host.
	slug string
	// readyWait is the offering's ready_wait; agentHeld keeps Rancher's
	// agent from connecting until it is closed (nil: it connects at once).
	readyWait string
	agentHeld chan struct{}
	// members, when set, makes vcluster the membership_sync_backend with
	// these backend_settings (member_source, role_mapping) added.
	members map[string]any
	// settings are more backend_settings of the offering (driver, …).
	settings map[string]any
	// importOff is import_to_rancher: false, with Rancher's URL and key
	// still set (read at each start: harness.Site.Reconfigure).
	importOff bool
	// fleetWorkspace, when set, is the offering's fleet_workspace.
	fleetWorkspace string
}

// envOption changes the offering or the agent stand-in of newEnv.
type envOption func(*env)

// withReadyWait sets the offering's ready_wait.
func withReadyWait(d string) envOption { return func(e *env) { e.readyWait = d } }

// withAgentHeld keeps the agent from connecting until release is called.
func withAgentHeld() envOption { return func(e *env) { e.agentHeld = make(chan struct{}) } }

func (e *env) ns() string { return "vc-" + e.slug }

// newEnv makes the site of a vcluster offering over the shared host; it
// starts sitebus unless the options say harness.WithoutStart.
func newEnv(t testing.TB, slug string, opts ...harness.SiteOption) *env {
	t.Helper()
	return newEnvWith(t, slug, nil, opts...)
}

// slugRuns counts the envs made per slug in this process: the host API
// server is shared, so a test run again (go test -count=N) takes a slug of
// its own instead of meeting its first run's namespace, which belongs to
// another Waldur resource.
var slugRuns sync.Map

func newEnvWith(t testing.TB, slug string, eopts []envOption, opts ...harness.SiteOption) *env {
	t.Helper()
	runs, _ := slugRuns.LoadOrStore(slug, new(atomic.Int32))
	if n := runs.(*atomic.Int32).Add(1); n > 1 {
		slug = fmt.Sprintf("%s-r%d", slug, n)
	}
	e := &env{host: kube.Shared(t), virt: kube.StartForTest(t, kube.Options{}), slug: slug, t: t, readyWait: "1m"}
	e.hostKubeconfig, e.virtKubeconfig = e.host.KubeconfigPath(), e.virt.KubeconfigPath()
	for _, o := range eopts {
		o(e)
	}
	var err error
	if e.hostCS, err = kubernetes.NewForConfig(e.host.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	if e.virtCS, err = kubernetes.NewForConfig(e.virt.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	opts = append([]harness.SiteOption{harness.WithRancher(ranchersim.Options{}), harness.WithOfferingYAML(e.offering)}, opts...)
	e.Site = harness.NewSite(t, opts...)
	agentCtx, stopAgent := context.WithCancel(context.Background())
	go e.agentStandIn(agentCtx)
	t.Cleanup(stopAgent)
	return e
}

// offering is the vcluster offering's entry of sitebus's config.
func (e *env) offering(s *harness.Site) string {
	wsHost, wsPort, _ := strings.Cut(s.Broker.WebSTOMPAddr(), ":")
	ro := s.Rancher.Options()
	component := func(typ, unit, label string) map[string]any {
		return map[string]any{"type": typ, "measured_unit": unit, "accounting_type": "limit", "label": label}
	}
	o := map[string]any{
		"name": "e2e-vclusters", "waldur_api_url": s.Waldur.URL() + "/api/", "waldur_api_token": s.Token,
		"waldur_offering_uuid": s.OfferingUUID, "backend_type": vcluster.Type, "order_processing_backend": vcluster.Type,
		"stomp_enabled": true, "websocket_use_tls": false, "stomp_ws_host": wsHost, "stomp_ws_port": wsPort,
		"stomp_ws_path": rabbitmq.WebSTOMPPath,
		"backend_components": map[string]any{"cpu": component("cpu", "cores", "CPU"), "ram": component("ram", "GB", "RAM"),
			"storage": component("storage", "GB", "Storage")},
		"backend_settings": map[string]any{"host_kubeconfig_path": e.hostKubeconfig, "host_cluster_id": ro.ClusterID,
			"rancher_project_id": "p-demo", "backend_url": s.Rancher.URL(), "username": ro.AccessKey, "password": ro.SecretKey,
			"verify_cert": false, "kubeconfig_wait": "1m", "ready_wait": e.readyWait, "import_to_rancher": !e.importOff},
	}
	if e.fleetWorkspace != "" {
		o["backend_settings"].(map[string]any)["fleet_workspace"] = e.fleetWorkspace
	}
	maps.Copy(o["backend_settings"].(map[string]any), e.settings)
	if e.members != nil {
		o["membership_sync_backend"] = vcluster.Type
		bs := o["backend_settings"].(map[string]any)
		maps.Copy(bs, e.members)
		if s.Keycloak != nil {
			bs["keycloak_enabled"] = true
			bs["keycloak"] = map[string]any{"keycloak_url": s.Keycloak.URL() + "/", "keycloak_realm": "waldur", "keycloak_user_realm": "master",
				"keycloak_username": "admin", "keycloak_password": kcAdminPassword}
		}
	}
	raw, err := yaml.Marshal([]any{o})
	if err != nil {
		e.t.Fatal(err)
	}
	// An item of the offerings list, indented under it.
	return "  " + strings.ReplaceAll(strings.TrimRight(string(raw), "\n"), "\n", "\n  ") + "\n"
}

// agentStandIn is Rancher's agent connecting back: once its Deployment and
// credentials Secret exist in the virtual cluster, the imported cluster
// vc-<slug> is connected.
func (e *env) agentStandIn(ctx context.Context) {
	if e.agentHeld != nil {
		select {
		case <-ctx.Done():
			return
		case <-e.agentHeld:
		}
	}
	vclustersim.RunAgent(ctx, e.Rancher, e.virtCS, func(name string) bool { return name == e.ns() })
}

// bringKubeconfig is the external driver: once the host namespace exists,
// the virtual cluster's kubeconfig Secret appears in it.
func (e *env) bringKubeconfig(t testing.TB) {
	t.Helper()
	raw, err := os.ReadFile(e.virtKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		vclustersim.BringKubeconfig(ctx, e.hostCS, e.ns(), raw)
	}()
}

// order places a create or terminate order of the test's resource in
// Waldur, delivers its event, and returns the order as it ended.
func (e *env) order(req waldursim.CreateOrderRequest) *waldursim.APIOrder {
	e.t.Helper()
	req.Silent = true
	orderUUID, _ := e.Order(req)
	e.Deliver(orderUUID)
	return e.WaitOrder(orderUUID, "done", "erred")
}

func (e *env) create() waldursim.CreateOrderRequest {
	return waldursim.CreateOrderRequest{ResourceName: e.slug, Limits: map[string]int{"cpu": 2, "ram": 4, "storage": 10},
		Attributes: map[string]any{"name": "demo"}}
}

// doneCalls counts Waldur's set_state_done calls for the order.
func (e *env) doneCalls(orderUUID string) int {
	e.t.Helper()
	calls, err := e.Admin.Calls(harness.Context(e.t, time.Minute))
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, c := range calls {
		if c.Method == "POST" && strings.Contains(hexOf(c.Path), hexOf(orderUUID)) && strings.HasSuffix(strings.TrimRight(c.Path, "/"), "/set_state_done") {
			n++
		}
	}
	return n
}

// hexOf drops the dashes of the UUIDs in s: Waldur writes them either way.
func hexOf(s string) string { return strings.ReplaceAll(s, "-", "") }

// Member sync runs, so the resource's Keycloak role groups and their
// bindings exist when the terminate comes: it removes them with the rest.
func TestCreateImportsTheVirtualClusterAndTerminateLeavesNothing(t *testing.T) {
	e := newMembersEnv(t, "imported", map[string]any{})
	ctx := context.Background()
	e.bringKubeconfig(t)
	resUUID, _ := e.createWithTeam(harness.Member("alice01", "PROJECT.ADMIN"))
	o := &waldursim.APIOrder{MarketplaceResourceUUID: resUUID}
	pc, ok := e.Rancher.ProvisioningClusterNamed(e.ns())
	if !ok || pc.Annotations[rancher.AnnotationManaged] != "true" || hexOf(pc.Annotations[rancher.AnnotationResourceUUID]) != hexOf(o.MarketplaceResourceUUID) {
		t.Fatalf("Rancher cluster %+v (found %v)", pc, ok)
	}
	if c, _ := e.Rancher.ClusterByID(pc.ClusterID); c.State != "active" {
		t.Errorf("Rancher cluster state %q, want active", c.State)
	}
	// Rancher issued default-token with the cluster; sitebus applied its
	// manifest rather than making a token of its own.
	if inv := e.Rancher.Inventory(); len(inv.Tokens) != 1 || inv.Tokens[0].ID != pc.ClusterID+":"+ranchersim.DefaultTokenName {
		t.Errorf("registration tokens %+v, want Rancher's %s alone", inv.Tokens, ranchersim.DefaultTokenName)
	}
	dep, err := e.virtCS.AppsV1().Deployments(vcluster.AgentNamespace).Get(ctx, "cattle-cluster-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("agent in the virtual cluster: %v", err)
	}
	managers := []string{}
	for _, f := range dep.ManagedFields {
		managers = append(managers, f.Manager)
	}
	if len(managers) == 0 || managers[0] != vcluster.FieldManager {
		t.Errorf("agent's field managers %v, want %s", managers, vcluster.FieldManager)
	}
	ns, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{})
	if err != nil || hexOf(ns.Annotations[vcluster.AnnotationResourceUUID]) != hexOf(o.MarketplaceResourceUUID) || ns.Labels["field.cattle.io/projectId"] != "p-demo" {
		t.Fatalf("host namespace %v %v", ns, err)
	}
	if _, err := e.hostCS.CoreV1().ResourceQuotas(e.ns()).Get(ctx, vcluster.QuotaName, metav1.GetOptions{}); err != nil {
		t.Fatalf("quota: %v", err)
	}
	res, err := e.Admin.Resource(harness.Context(t, time.Minute), o.MarketplaceResourceUUID)
	if err != nil || res.BackendID != e.ns() || res.State == "Erred" {
		t.Errorf("Waldur resource %+v %v, want backend_id %s", res, err, e.ns())
	}
	hex := hexOf(resUUID)
	e.waitGroups(resUUID, []string{"alice01"}, nil)
	e.waitBindings(pc.ClusterID, resUUID, "cluster-owner local://"+e.Rancher.Options().UserID,
		"cluster-owner keycloakoidc_group://c_"+hex+"_cluster-owner *", "cluster-member keycloakoidc_group://c_"+hex+"_cluster-member *")

	if o := e.order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: o.MarketplaceResourceUUID}); o.State != "done" {
		t.Fatalf("terminate %s: %s", o.State, o.ErrorMessage)
	}
	if inv := e.Rancher.Inventory(); !inv.Empty() {
		t.Errorf("left in Rancher: %s", inv)
	}
	for _, path := range []string{"/c_" + hex, "/c_" + hex + "/c_" + hex + "_cluster-owner", "/c_" + hex + "/c_" + hex + "_cluster-member"} {
		if g, ok := e.Keycloak.GroupByPath("waldur", path); ok {
			t.Errorf("Keycloak group %s left: %+v", path, g)
		}
	}
	if n, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("host namespace %s left", e.ns())
	}
	if n, err := e.virtCS.CoreV1().Namespaces().Get(ctx, vcluster.AgentNamespace, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("agent namespace left in the virtual cluster")
	}
	if _, err := e.virtCS.RbacV1().ClusterRoleBindings().Get(ctx, "cattle-admin-binding", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cattle-admin-binding left in the virtual cluster: %v", err)
	}
}

func TestAForeignNamespaceOfTheSameNameErrsTheOrderUntouched(t *testing.T) {
	e := newEnv(t, "foreign")
	ctx := context.Background()
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns(), Labels: map[string]string{"team": "other"}}}
	if _, err := e.hostCS.CoreV1().Namespaces().Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.hostCS.CoreV1().Namespaces().Delete(context.Background(), e.ns(), metav1.DeleteOptions{})
	})
	o := e.order(e.create())
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	ns, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{})
	if err != nil || len(ns.Annotations) != 0 || ns.Labels["team"] != "other" || ns.DeletionTimestamp != nil {
		t.Fatalf("foreign namespace %v %v", ns, err)
	}
	if inv := e.Rancher.Inventory(); !inv.Empty() {
		t.Errorf("made in Rancher: %s", inv)
	}
}

// A Rancher cluster of the virtual cluster's name that someone else made
// (no sitebus marks) errs the order at the import and stays as it was:
// sitebus neither adopts nor deletes it, and its compensation removes only
// what this create made.
func TestAForeignRancherClusterOfTheSameNameErrsTheOrderUntouched(t *testing.T) {
	e := newEnv(t, "foreignrc")
	foreign, err := e.Rancher.AddProvisioningCluster(vcluster.ClusterName(e.ns()), map[string]string{"team": "other"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.bringKubeconfig(t)
	o := e.order(e.create())
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	inv := e.Rancher.Inventory()
	if len(inv.ProvisioningClusters) != 1 {
		t.Fatalf("provisioning clusters %v, want only the foreign one", inv.ProvisioningClusters)
	}
	pc := inv.ProvisioningClusters[0]
	if pc.ID != foreign.ID || !maps.Equal(pc.Labels, foreign.Labels) || !maps.Equal(pc.Annotations, foreign.Annotations) || string(pc.Body) != string(foreign.Body) {
		t.Errorf("foreign cluster changed: %+v, was %+v", pc, foreign)
	}
}

func TestKilledBetweenTokenAndApplyResumesWithOneClusterOneAgentOneDone(t *testing.T) {
	e := newEnv(t, "killed", harness.WithoutStart())
	e.Start("SITEBUS_FAILPOINTS=" + beforeApply + "=pause")
	e.bringKubeconfig(t)
	req := e.create()
	req.Silent = true
	orderUUID, _ := e.Order(req)
	e.Deliver(orderUUID)
	harness.Eventually(t, 2*time.Minute, "the failpoint between token and apply", func() bool {
		return strings.Contains(e.Sitebus.Output(), beforeApply)
	})
	// The kill: sitebus stops mid-step and a new one takes the saga over.
	e.Sitebus.Kill()
	e.Start()
	if o := e.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	if inv := e.Rancher.Inventory(); len(inv.ProvisioningClusters) != 1 || len(inv.Clusters) != 1 || len(inv.Tokens) != 1 {
		t.Errorf("Rancher holds %s, want one cluster with one registration token", inv)
	}
	deps, err := e.virtCS.AppsV1().Deployments(vcluster.AgentNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(deps.Items) != 1 {
		t.Errorf("agents in the virtual cluster: %v %v", deps, err)
	}
	if n := e.doneCalls(orderUUID); n != 1 {
		t.Errorf("order marked done %d times, want once", n)
	}
}

// A virtual cluster whose agent does not connect within ready_wait is kept
// (namespace, Rancher import) and its order errs with the reason; once the
// agent connects, the cluster pass sets the resource OK. Tearing it down
// would throw away an agent that is only slow.
func TestAVirtualClusterNotReadyInTimeIsKeptErredThenOKOnceConnected(t *testing.T) {
	e := newEnvWith(t, "late", []envOption{withReadyWait("3s"), withAgentHeld()},
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"cluster_pull_period": "10s"}}))
	ctx := context.Background()
	e.bringKubeconfig(t)
	o := e.order(e.create())
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "ready within 3s") {
		t.Fatalf("create %s: %q, want erred for the readiness deadline", o.State, o.ErrorMessage)
	}
	pc, ok := e.Rancher.ProvisioningClusterNamed(e.ns())
	if !ok || pc.ClusterID == "" {
		t.Fatalf("the Rancher import was not kept: %+v (found %v)", pc, ok)
	}
	if ns, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Fatalf("host namespace not kept: %v %v", ns, err)
	}
	res, err := e.Admin.Resource(harness.Context(t, time.Minute), o.MarketplaceResourceUUID)
	if err != nil || res.State != "Erred" {
		t.Fatalf("Waldur resource %+v %v, want Erred", res, err)
	}

	close(e.agentHeld)
	harness.Eventually(t, 2*time.Minute, "the cluster pass to set the resource OK", func() bool {
		res, err := e.Admin.Resource(harness.Context(t, time.Minute), o.MarketplaceResourceUUID)
		return err == nil && res.State == "OK"
	})
	if inv := e.Rancher.Inventory(); len(inv.ProvisioningClusters) != 1 || len(inv.Clusters) != 1 {
		t.Errorf("Rancher holds %s, want the one import", inv)
	}
}

// restart stops sitebus and starts it again on the test's current
// settings, as an operator who edits the offering does.
func (e *env) restart() {
	e.t.Helper()
	if err := e.Sitebus.Stop(time.Minute); err != nil {
		e.t.Fatal(err)
	}
	e.Reconfigure()
	e.Start()
}

// One virtual cluster after its create, in fleet workspace fleet-vc:
// Rancher down while it is imported (the saga resumes), an update order
// (the host quota follows),
// import_to_rancher off (the cluster pass un-imports it) and on again
// (the pass imports it by the create's steps).
func TestRancherDownDuringTheImportThenUpdateAndImportToRancherOffAndOn(t *testing.T) {
	e := newEnvWith(t, "life", []envOption{func(e *env) { e.fleetWorkspace = "fleet-vc" }}, harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"cluster_pull_period": "10s"}}))
	ctx := context.Background()
	const clusters = "/v1/provisioning.cattle.io.clusters"
	// Rancher answers 503 to the import, as while it restarts, until the
	// test has seen two attempts.
	e.Rancher.AddFault(simkit.Fault{Method: http.MethodPost, PathPrefix: clusters, Status: http.StatusServiceUnavailable})
	e.bringKubeconfig(t)
	req := e.create()
	req.Silent = true
	orderUUID, resUUID := e.Order(req)
	e.Deliver(orderUUID)
	harness.Eventually(t, 2*time.Minute, "two import attempts while Rancher is down", func() bool {
		return e.Rancher.CallCount(http.MethodPost, clusters, http.StatusServiceUnavailable) >= 2
	})
	e.Rancher.ClearFaults()
	if o := e.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
	if inv := e.Rancher.Inventory(); len(inv.ProvisioningClusters) != 1 || len(inv.Clusters) != 1 {
		t.Fatalf("Rancher holds %s, want one cluster", inv)
	}
	if n := e.doneCalls(orderUUID); n != 1 {
		t.Errorf("order marked done %d times, want once", n)
	}
	// Rancher makes the v1 cluster's namespace its v3 cluster's fleet
	// workspace.
	pc, _ := e.Rancher.ProvisioningClusterNamed(e.ns())
	if c, _ := e.Rancher.ClusterByID(pc.ClusterID); pc.Namespace != "fleet-vc" || c.FleetWorkspaceName != "fleet-vc" {
		t.Errorf("cluster %s in fleet workspace %q (v3: %q), want fleet-vc", pc.Name, pc.Namespace, c.FleetWorkspaceName)
	}

	t.Run("an update order sets the host namespace's quota", func(t *testing.T) {
		o := e.order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 3, "ram": 6, "storage": 20}})
		if o.State != "done" {
			t.Fatalf("update %s: %s", o.State, o.ErrorMessage)
		}
		rq, err := e.hostCS.CoreV1().ResourceQuotas(e.ns()).Get(ctx, vcluster.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for f, want := range map[corev1.ResourceName]string{corev1.ResourceRequestsCPU: "3", corev1.ResourceRequestsMemory: "6Gi", corev1.ResourceRequestsStorage: "20Gi"} {
			if q := rq.Spec.Hard[f]; q.String() != want {
				t.Errorf("quota %s = %s, want %s", f, q.String(), want)
			}
		}
	})
	t.Run("import_to_rancher off: the Rancher cluster and the agent go, the virtual cluster stays", func(t *testing.T) {
		e.importOff = true
		e.restart()
		harness.Eventually(t, 2*time.Minute, "the cluster pass to un-import", func() bool {
			_, imported := e.Rancher.ProvisioningClusterNamed(e.ns())
			n, err := e.virtCS.CoreV1().Namespaces().Get(ctx, vcluster.AgentNamespace, metav1.GetOptions{})
			return !imported && (apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil))
		})
		if inv := e.Rancher.Inventory(); !inv.Empty() {
			t.Errorf("left in Rancher: %s", inv)
		}
		if ns, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
			t.Errorf("host namespace not kept: %v %v", ns, err)
		}
		if _, err := e.hostCS.CoreV1().Secrets(e.ns()).Get(ctx, e.ns(), metav1.GetOptions{}); err != nil {
			t.Errorf("the virtual cluster's kubeconfig Secret not kept: %v", err)
		}
	})
	t.Run("import_to_rancher on again: one cluster, imported and connected", func(t *testing.T) {
		e.importOff = false
		e.restart()
		harness.Eventually(t, 2*time.Minute, "the cluster pass to import again", func() bool {
			pc, ok := e.Rancher.ProvisioningClusterNamed(e.ns())
			if !ok || pc.ClusterID == "" {
				return false
			}
			c, _ := e.Rancher.ClusterByID(pc.ClusterID)
			return c.State == "active"
		})
		if inv := e.Rancher.Inventory(); len(inv.ProvisioningClusters) != 1 || len(inv.Clusters) != 1 {
			t.Errorf("Rancher holds %s, want one cluster", inv)
		}
		res, err := e.Admin.Resource(harness.Context(t, time.Minute), resUUID)
		if err != nil || res.State != "OK" {
			t.Errorf("Waldur resource %+v %v, want OK", res, err)
		}
	})
}
