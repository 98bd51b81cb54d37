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
	"maps"
	"os"
	"strings"
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

func newEnvWith(t testing.TB, slug string, eopts []envOption, opts ...harness.SiteOption) *env {
	t.Helper()
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
			"verify_cert": false, "kubeconfig_wait": "1m", "ready_wait": e.readyWait},
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

func TestCreateImportsTheVirtualClusterAndTerminateLeavesNothing(t *testing.T) {
	e := newEnv(t, "imported")
	ctx := context.Background()
	e.bringKubeconfig(t)
	o := e.order(e.create())
	if o.State != "done" {
		t.Fatalf("create %s: %s", o.State, o.ErrorMessage)
	}
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

	if o := e.order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: o.MarketplaceResourceUUID}); o.State != "done" {
		t.Fatalf("terminate %s: %s", o.State, o.ErrorMessage)
	}
	if inv := e.Rancher.Inventory(); !inv.Empty() {
		t.Errorf("left in Rancher: %s", inv)
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
