// Package vcluster_test runs the vcluster offering's sagas against two
// real Kubernetes control planes, the host and one playing the virtual
// cluster, and the Rancher simulator: the test brings the virtual
// cluster's kubeconfig Secret (the external driver's contract), sitebus
// imports the cluster into Rancher and applies the agent's manifest into
// the second API server, and a stand-in for Rancher's agent tells the
// simulator it connected once its objects are there.
package vcluster_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/provisioner"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

const (
	offeringHex  = "6e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b"
	resourceUUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

// waldurRecord records what the sagas tell Waldur. The order lifecycle
// and Waldur's API are covered by the orderflow and bridge suites; here
// the concern is the platforms.
type waldurRecord struct {
	mu        sync.Mutex
	backendID string
	done      int
	// erred, ok and orderErred are the set_as_erred, set_as_ok and
	// order-erred calls (a passed readiness deadline makes them).
	erred, ok, orderErred []string
}

func (w *waldurRecord) GetResource(_ context.Context, uuid string, _ ...string) (*waldur.Resource, error) {
	return &waldur.Resource{UUID: uuid}, nil
}

func (w *waldurRecord) SetResourceBackendID(_ context.Context, _, id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.backendID = id
	return nil
}
func (w *waldurRecord) SetResourceBackendMetadata(context.Context, string, map[string]any) error {
	return nil
}
func (w *waldurRecord) SetResourceEndpoints(context.Context, string, []waldur.Endpoint) error {
	return nil
}

func (w *waldurRecord) SetResourceErred(_ context.Context, uuid, reason, _ string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.erred = append(w.erred, uuid+": "+reason)
	return nil
}

func (w *waldurRecord) SetResourceOK(_ context.Context, uuid string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ok = append(w.ok, uuid)
	return nil
}

func (w *waldurRecord) MarkErred(_ context.Context, _, order, reason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.orderErred = append(w.orderErred, order+": "+reason)
	return nil
}

func (w *waldurRecord) MarkDone(context.Context, string, string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done++
	return nil
}

type env struct {
	host, virt *kube.Cluster
	hostCS     kubernetes.Interface
	virtCS     kubernetes.Interface
	sim        *ranchersim.Server
	waldur     *waldurRecord
	starter    *saga.Coordinator
	bus        *bus.Bus
	settings   vcluster.Settings
	hostB      *vcluster.Backend
	rancher    *rancher.ClusterClient
	log        *slog.Logger
	// stopFirst stops the cluster-provisioner newEnv started.
	stopFirst func()
	// slug names the resource: vc-<slug> on the host and in Rancher; each
	// test has its own, as they share the host.
	slug string
}

func (e *env) ns() string { return "vc-" + e.slug }

func newEnv(t *testing.T, slug string, first provisioner.VirtualCluster) *env {
	t.Helper()
	e := &env{host: kube.Shared(t), virt: kube.StartForTest(t, kube.Options{}), waldur: &waldurRecord{}, slug: slug}
	e.sim = ranchersim.NewTestServer(t, ranchersim.Options{})
	var err error
	if e.hostCS, err = kubernetes.NewForConfig(e.host.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	if e.virtCS, err = kubernetes.NewForConfig(e.virt.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	s, err := vcluster.DecodeSettings(map[string]any{"host_cluster_id": e.sim.Options().ClusterID, "rancher_project_id": "p-demo",
		"backend_url": e.sim.URL(), "username": e.sim.Options().AccessKey, "password": e.sim.Options().SecretKey,
		"verify_cert": false, "kubeconfig_wait": "1m", "ready_wait": "1m"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.Default()
	}
	host, err := vcluster.New(s, vcluster.Options{RESTConfig: e.host.RESTConfig(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rancher.NewClusterClient(rancher.ClusterOptions{BackendURL: s.BackendURL, AccessKey: s.Username, SecretKey: s.Password, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e.bus, e.settings, e.hostB, e.rancher, e.log = bustest.New(t, bus.Config{}), s, host, rc, log
	if first == nil {
		first = provisioner.KubeVirtual{}
	}
	stop := e.startProvisioner(t, first)
	e.stopFirst = stop
	b := e.bus
	// The order lifecycle starts sagas on a coordinator of its own that
	// knows the definitions and drives none of them.
	if e.starter, err = saga.New(b.JetStream(), saga.Config{Logger: log}); err != nil {
		t.Fatal(err)
	}
	for _, d := range provisioner.Definitions() {
		if err := e.starter.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	agentCtx, stopAgent := context.WithCancel(context.Background())
	go e.agentStandIn(agentCtx)
	t.Cleanup(func() {
		stopAgent()
		stop()
	})
	return e
}

// startProvisioner runs a cluster-provisioner whose virtual clusters are
// reached through virtual; stop ends it (a second call does nothing).
func (e *env) startProvisioner(t *testing.T, virtual provisioner.VirtualCluster) (stop func()) {
	t.Helper()
	prov, err := provisioner.New(e.bus, provisioner.Config{Logger: e.log, Orders: e.waldur, LeaseTTL: 10 * time.Second,
		Timeouts: provisioner.Timeouts{Poll: 50 * time.Millisecond},
		VClusters: map[string]*provisioner.VClusterOffering{offeringHex: {Name: "vc", Settings: e.settings, Waldur: e.waldur,
			Host: e.hostB, Rancher: e.rancher, Virtual: virtual}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- prov.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("cluster-provisioner: %v", err)
			}
		})
	}
}

// agentStandIn is Rancher's agent connecting back: once its Deployment and
// credentials Secret exist in the virtual cluster, the imported cluster
// vc-<slug> is connected.
func (e *env) agentStandIn(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pc, ok := e.sim.ProvisioningClusterNamed(e.ns())
		if !ok || pc.ClusterID == "" {
			continue
		}
		if _, err := e.virtCS.AppsV1().Deployments(vcluster.AgentNamespace).Get(ctx, "cattle-cluster-agent", metav1.GetOptions{}); err != nil {
			continue
		}
		secrets, err := e.virtCS.CoreV1().Secrets(vcluster.AgentNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, s := range secrets.Items {
			if strings.HasPrefix(s.Name, "cattle-credentials-") {
				_ = e.sim.ConnectAgent(pc.ClusterID)
			}
		}
	}
}

// bringKubeconfig is the external driver: once the host namespace exists,
// the virtual cluster's kubeconfig Secret appears in it.
func (e *env) bringKubeconfig(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(e.virt.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: e.ns(), Namespace: e.ns()}, Data: map[string][]byte{"config": raw}}
			_, err := e.hostCS.CoreV1().Secrets(e.ns()).Create(ctx, sec, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

func (e *env) input(orderHex string) provisioner.VClusterInput {
	return provisioner.VClusterInput{OfferingUUID: offeringHex, OrderUUID: orderHex, ResourceUUID: resourceUUID,
		Limits: map[string]float64{"cpu": 2, "ram": 4, "storage": 10}, Attributes: []byte(`{"name":"demo"}`),
		Resource: provisioner.ResourceRef{UUID: resourceUUID, Name: e.slug, Slug: e.slug}}
}

func (e *env) run(t *testing.T, def, orderHex string) saga.Saga {
	t.Helper()
	in := e.input(orderHex)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := e.starter.Start(ctx, def, contract.SagaID(orderHex), in); err != nil {
		t.Fatal(err)
	}
	sg, err := e.starter.Wait(ctx, contract.SagaID(orderHex))
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return sg
}

func TestCreateImportsTheVirtualClusterAndTerminateLeavesNothing(t *testing.T) {
	e := newEnv(t, "imported", nil)
	ctx := context.Background()
	e.bringKubeconfig(t)
	sg := e.run(t, provisioner.VClusterCreate, "0000000000000000000000000000000a")
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	pc, ok := e.sim.ProvisioningClusterNamed(e.ns())
	if !ok || pc.Annotations[rancher.AnnotationManaged] != "true" || pc.Annotations[rancher.AnnotationResourceUUID] != resourceUUID {
		t.Fatalf("Rancher cluster %+v (found %v)", pc, ok)
	}
	if c, _ := e.sim.ClusterByID(pc.ClusterID); c.State != "active" {
		t.Errorf("Rancher cluster state %q, want active", c.State)
	}
	// Rancher issued default-token with the cluster; sitebus applied its
	// manifest rather than making a token of its own.
	if inv := e.sim.Inventory(); len(inv.Tokens) != 1 || inv.Tokens[0].ID != pc.ClusterID+":"+ranchersim.DefaultTokenName {
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
	if err != nil || ns.Annotations[vcluster.AnnotationResourceUUID] != resourceUUID || ns.Labels["field.cattle.io/projectId"] != "p-demo" {
		t.Fatalf("host namespace %v %v", ns, err)
	}
	if _, err := e.hostCS.CoreV1().ResourceQuotas(e.ns()).Get(ctx, vcluster.QuotaName, metav1.GetOptions{}); err != nil {
		t.Fatalf("quota: %v", err)
	}
	e.waldur.mu.Lock()
	if e.waldur.done != 1 || e.waldur.backendID != e.ns() || len(e.waldur.erred) != 0 || len(e.waldur.orderErred) != 0 {
		t.Errorf("done %d, backend_id %q, erred %v, order erred %v", e.waldur.done, e.waldur.backendID, e.waldur.erred, e.waldur.orderErred)
	}
	e.waldur.mu.Unlock()

	sg = e.run(t, provisioner.VClusterTerminate, "0000000000000000000000000000000b")
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if inv := e.sim.Inventory(); !inv.Empty() {
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
	e := newEnv(t, "foreign", nil)
	ctx := context.Background()
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns(), Labels: map[string]string{"team": "other"}}}
	if _, err := e.hostCS.CoreV1().Namespaces().Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.hostCS.CoreV1().Namespaces().Delete(context.Background(), e.ns(), metav1.DeleteOptions{})
	})
	sg := e.run(t, provisioner.VClusterCreate, "0000000000000000000000000000000c")
	if sg.Status != saga.StatusFailed || !strings.Contains(sg.Error, "not managed by sitebus") {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	ns, err := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{})
	if err != nil || len(ns.Annotations) != 0 || ns.Labels["team"] != "other" || ns.DeletionTimestamp != nil {
		t.Fatalf("foreign namespace %v %v", ns, err)
	}
	if inv := e.sim.Inventory(); !inv.Empty() {
		t.Errorf("made in Rancher: %s", inv)
	}
	e.waldur.mu.Lock()
	defer e.waldur.mu.Unlock()
	if e.waldur.done != 0 {
		t.Errorf("order marked done")
	}
}

// crashAtApply is a cluster-provisioner killed after it read the
// registration token and before the manifest reached the virtual cluster:
// the apply never returns until the process stops.
type crashAtApply struct {
	provisioner.KubeVirtual
	reached chan struct{}
	once    *sync.Once
}

func (c crashAtApply) InstallAgent(ctx context.Context, _ *rest.Config, _ string) (int, error) {
	c.once.Do(func() { close(c.reached) })
	<-ctx.Done()
	return 0, ctx.Err()
}

func TestKilledBetweenTokenAndApplyResumesWithOneClusterOneAgentOneDone(t *testing.T) {
	reached := make(chan struct{})
	e := newEnv(t, "killed", crashAtApply{reached: reached, once: &sync.Once{}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.bringKubeconfig(t)
	id := contract.SagaID("0000000000000000000000000000000d")
	if _, err := e.starter.Start(ctx, provisioner.VClusterCreate, id, e.input("0000000000000000000000000000000d")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the agent step was never reached")
	}
	// The kill: the first cluster-provisioner stops mid-step (its stop
	// function is idempotent, so the cleanup's call is a no-op), and
	// another one takes the saga over.
	e.stopFirst()
	stop := e.startProvisioner(t, provisioner.KubeVirtual{})
	t.Cleanup(stop)
	sg, err := e.starter.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	if inv := e.sim.Inventory(); len(inv.ProvisioningClusters) != 1 || len(inv.Clusters) != 1 || len(inv.Tokens) != 1 {
		t.Errorf("Rancher holds %s, want one cluster with one registration token", inv)
	}
	deps, err := e.virtCS.AppsV1().Deployments(vcluster.AgentNamespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 1 {
		t.Errorf("agents in the virtual cluster: %v %v", deps, err)
	}
	e.waldur.mu.Lock()
	defer e.waldur.mu.Unlock()
	if e.waldur.done != 1 {
		t.Errorf("order marked done %d times, want once", e.waldur.done)
	}
}
