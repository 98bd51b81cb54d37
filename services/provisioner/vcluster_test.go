package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/pkg/waldur"
)

const vcKubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://localhost:8443\nusers:\n- name: u\n  user:\n    token: vc-secret-token\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"

// vcWorld is the Rancher and the virtual cluster the vcluster sagas see,
// in memory; the host is the real backend over client-go's fake API.
type vcWorld struct {
	mu       sync.Mutex
	clusters map[string]rancher.ProvisioningCluster
	foreign  map[string]bool
	tokens   int
	agents   int // objects sets applied
	removed  int
	done     int
	backend  string
	// failInstall fails that many installs, after the token was read.
	failInstall int
	// notReady keeps Rancher from reporting the cluster ready.
	notReady bool
	// erred and ok are the set_as_erred and set_as_ok calls; orderErred
	// the orders marked erred.
	erred, ok, orderErred []string
	// labels are the labels of the last imported cluster made.
	labels map[string]string
	// deletedGroups are the Keycloak groups deleted, children first.
	deletedGroups []string
	// memberSyncs are the resources whose team was synced, each with the
	// orders done by then; failMembers fails every sync.
	memberSyncs []string
	failMembers bool
}

func (w *vcWorld) groups() Groups { return vcGroups{w} }

// vcMembers is the membership service's sync-resource.
type vcMembers struct{ w *vcWorld }

func (m vcMembers) Sync(_ context.Context, _, _, resourceUUID string) error {
	m.w.mu.Lock()
	defer m.w.mu.Unlock()
	if m.w.failMembers {
		return errors.New("membership: no responders")
	}
	m.w.memberSyncs = append(m.w.memberSyncs, fmt.Sprintf("%s done=%d", resourceUUID, m.w.done))
	return nil
}

// vcGroups is keycloak-sync's group commands.
type vcGroups struct{ w *vcWorld }

func (vcGroups) Ensure(context.Context, string, string, string, []string) ([]string, error) {
	return nil, nil
}

func (g vcGroups) Delete(_ context.Context, _, _, parent string, children []string) error {
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	g.w.deletedGroups = append(append(g.w.deletedGroups, children...), parent)
	return nil
}

type vcRancher struct{ w *vcWorld }

func (f vcRancher) CreateImportedCluster(_ context.Context, spec rancher.ImportedClusterSpec) (rancher.ProvisioningCluster, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if f.w.foreign[spec.Name] {
		return rancher.ProvisioningCluster{}, fault.Errorf(fault.NotManaged, "Rancher cluster %s is not managed by sitebus", spec.Name)
	}
	if p, ok := f.w.clusters[spec.Name]; ok {
		return p, nil
	}
	f.w.labels = spec.Labels
	p := rancher.ProvisioningCluster{ID: rancher.FleetNamespace + "/" + spec.Name, Name: spec.Name, ClusterID: "c-m-" + spec.Name[3:],
		ResourceUUID: spec.ResourceUUID, Managed: true, Created: true}
	f.w.clusters[spec.Name] = p
	return p, nil
}

func (f vcRancher) WaitV3ClusterID(_ context.Context, name string, _ time.Duration) (string, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	return f.w.clusters[name].ClusterID, nil
}

func (f vcRancher) CreateRegistrationToken(_ context.Context, ref rancher.ClusterRef) (rancher.RegistrationToken, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.tokens++
	return rancher.RegistrationToken{ID: ref.ID + ":default-token", ClusterID: ref.ID, ManifestURL: "https://rancher.test/v3/import/tok_" + ref.ID + ".yaml"}, nil
}

func (f vcRancher) GetProvisioningCluster(_ context.Context, name string) (rancher.ProvisioningCluster, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	p, ok := f.w.clusters[name]
	if !ok {
		return p, fault.Errorf(fault.NotFound, "no cluster %s", name)
	}
	p.Ready = f.w.agents > 0 && !f.w.notReady
	return p, nil
}

// The fake Rancher keeps no bindings: member sync's are tested with
// membership's fakes and in e2e/vcluster.
func (f vcRancher) ClusterRoleBindings(context.Context, rancher.ClusterRef) ([]rancher.RoleBinding, error) {
	return nil, nil
}

func (f vcRancher) DeleteClusterRoleBinding(context.Context, rancher.ClusterRef, string) error {
	return nil
}

func (f vcRancher) DeleteCluster(_ context.Context, ref rancher.ClusterRef) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	delete(f.w.clusters, ref.Name)
	return nil
}

type vcVirtual struct{ w *vcWorld }

func (f vcVirtual) Version(context.Context, *rest.Config) (string, error) { return "v1.31.0", nil }

func (f vcVirtual) InstallAgent(_ context.Context, cfg *rest.Config, manifestURL string) (int, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if cfg.BearerToken != "vc-secret-token" || !strings.Contains(manifestURL, "/v3/import/") {
		return 0, errors.New("install with the wrong kubeconfig or manifest")
	}
	if f.w.failInstall > 0 {
		f.w.failInstall--
		return 0, errors.New("connection reset while applying")
	}
	f.w.agents = 1 // server-side apply: a repeat is the same set
	return 9, nil
}

func (f vcVirtual) RemoveAgent(context.Context, *rest.Config) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.agents = 0
	f.w.removed++
	return nil
}

type vcWaldur struct{ w *vcWorld }

func (f vcWaldur) GetResource(_ context.Context, uuid string, _ ...string) (*waldur.Resource, error) {
	return &waldur.Resource{UUID: uuid, Slug: "demo"}, nil
}

func (f vcWaldur) SetResourceBackendID(_ context.Context, _, id string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.backend = id
	return nil
}

func (f vcWaldur) SetResourceBackendMetadata(context.Context, string, map[string]any) error {
	return nil
}
func (f vcWaldur) SetResourceEndpoints(context.Context, string, []waldur.Endpoint) error { return nil }

func (f vcWaldur) SetResourceErred(_ context.Context, uuid, reason, _ string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.erred = append(f.w.erred, uuid+": "+reason)
	return nil
}

func (f vcWaldur) SetResourceOK(_ context.Context, uuid string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.ok = append(f.w.ok, uuid)
	return nil
}

type vcOrders struct{ w *vcWorld }

func (f vcOrders) MarkDone(context.Context, string, string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.done++
	return nil
}

func (f vcOrders) MarkErred(_ context.Context, _, order, reason string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.orderErred = append(f.w.orderErred, order+": "+reason)
	return nil
}

type vcHarness struct {
	w     *vcWorld
	o     *VClusterOffering
	host  *fake.Clientset
	coord *saga.Coordinator
	plans *kvPlans
	pass  *pass
}

func newVCHarness(t *testing.T, objs ...corev1.Namespace) *vcHarness {
	t.Helper()
	return newVCHarnessWith(t, nil, objs...)
}

// newVCHarnessWith is newVCHarness with the offering's driver (nil is the
// external driver).
func newVCHarnessWith(t *testing.T, driver VClusterDriver, objs ...corev1.Namespace) *vcHarness {
	t.Helper()
	s, err := vcluster.DecodeSettings(map[string]any{"host_cluster_id": "c-m-host", "rancher_project_id": "p-1",
		"backend_url": "https://rancher.test", "username": "token-a", "password": "key", "kubeconfig_wait": "5s", "ready_wait": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	for i := range objs {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &objs[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	w := &vcWorld{clusters: map[string]rancher.ProvisioningCluster{}, foreign: map[string]bool{}}
	o := &VClusterOffering{Name: "vc", Settings: s, Waldur: vcWaldur{w}, Host: vcluster.NewWithClient(s, cs, log), Rancher: vcRancher{w}, Virtual: vcVirtual{w}, Driver: driver}
	srv := bustest.Server(t)
	js, err := jetstream.New(bustest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	coord, err := saga.New(js, saga.Config{Logger: log, LeaseTTL: time.Minute, ShutdownGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{VClusters: map[string]*VClusterOffering{offeringHex: o}, Orders: vcOrders{w}, Timeouts: Timeouts{Step: 30 * time.Second, Nodes: 30 * time.Second, Poll: 20 * time.Millisecond}}
	plans := &kvPlans{js: js, replicas: 1}
	if err := registerVCluster(coord, cfg, plans, w.groups(), vcMembers{w}, log); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- coord.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("coordinator: %v", err)
		}
	})
	ps := &pass{vclusters: cfg.VClusters, records: plans, log: log,
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "repairs"}, []string{"kind"})}
	return &vcHarness{w: w, o: o, host: cs, coord: coord, plans: plans, pass: ps}
}

// bringKubeconfig is the external driver: someone else writes the
// virtual cluster's kubeconfig Secret into the host namespace.
func (h *vcHarness) bringKubeconfig(t *testing.T) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vc-demo", Namespace: "vc-demo"}, Data: map[string][]byte{"config": []byte(vcKubeconfig)}}
	if _, err := h.host.CoreV1().Secrets("vc-demo").Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (h *vcHarness) run(t *testing.T, def, orderHex string, attrs string, before func()) saga.Saga {
	t.Helper()
	in := VClusterInput{OfferingUUID: offeringHex, OrderUUID: orderHex, ResourceUUID: resourceUUID, Limits: map[string]float64{"cpu": 1},
		Attributes: json.RawMessage(attrs), Resource: ResourceRef{UUID: resourceUUID, Name: "demo", Slug: "demo"}}
	if before != nil {
		before()
	}
	return startAndWait(t, h.coord, def, orderHex, in)
}

func TestVClusterCreateImportsAndTerminateLeavesNothing(t *testing.T) {
	h := newVCHarness(t)
	ctx := context.Background()
	// The namespace step makes vc-demo; the Secret arrives while the
	// kubeconfig step waits for it.
	go func() {
		for {
			if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err == nil {
				h.bringKubeconfig(t)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000000a", `{"name":"demo","cpu":2,"ram":4}`, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	w := h.w
	if len(w.clusters) != 1 || w.agents != 1 || w.done != 1 || w.backend != "vc-demo" {
		t.Fatalf("clusters %v agents %d done %d backend %q", w.clusters, w.agents, w.done, w.backend)
	}
	rq, err := h.host.CoreV1().ResourceQuotas("vc-demo").Get(ctx, vcluster.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := rq.Spec.Hard[corev1.ResourceRequestsCPU]; q.String() != "2" {
		t.Errorf("cpu quota %s, want the attribute's 2 over the order's 1", q.String())
	}
	for _, st := range sg.Steps {
		if strings.Contains(string(st.Output), "vc-secret-token") || strings.Contains(string(st.Output), "tok_") {
			t.Fatalf("step %s keeps a secret: %s", st.Name, st.Output)
		}
	}

	sg = h.run(t, VClusterTerminate, "0000000000000000000000000000000b", ``, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if len(w.clusters) != 0 || w.agents != 0 || w.removed != 1 || w.done != 2 {
		t.Fatalf("after terminate: clusters %v agents %d removed %d done %d", w.clusters, w.agents, w.removed, w.done)
	}
	if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err == nil {
		t.Fatal("host namespace left")
	}
}

func TestVClusterCreateSyncsTheTeamBeforeTheOrderIsDone(t *testing.T) {
	for name, tc := range map[string]struct {
		memberSync, fail bool
		want             []string
	}{
		"member sync on: the team is synced once, before done":   {memberSync: true, want: []string{resourceUUID + " done=0"}},
		"member sync off: no sync":                               {},
		"a failed sync is left to the period; the order is done": {memberSync: true, fail: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newVCHarness(t)
			h.o.MemberSync, h.w.failMembers = tc.memberSync, tc.fail
			ctx := context.Background()
			go func() {
				for {
					if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err == nil {
						h.bringKubeconfig(t)
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			sg := h.run(t, VClusterCreate, "0000000000000000000000000000000a", `{"name":"demo"}`, nil)
			if sg.Status != saga.StatusSucceeded {
				t.Fatalf("saga %s: %s", sg.Status, sg.Error)
			}
			if h.w.done != 1 || !slices.Equal(h.w.memberSyncs, tc.want) {
				t.Fatalf("done %d, member syncs %q, want 1 and %q", h.w.done, h.w.memberSyncs, tc.want)
			}
		})
	}
}

func TestVClusterCreateErrsOnAForeignNamespaceAndLeavesItAlone(t *testing.T) {
	foreign := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vc-demo", Labels: map[string]string{"team": "x"}}}
	h := newVCHarness(t, foreign)
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000000c", `{}`, nil)
	if sg.Status != saga.StatusFailed || !strings.Contains(sg.Error, "not managed by sitebus") {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	ns, err := h.host.CoreV1().Namespaces().Get(context.Background(), "vc-demo", metav1.GetOptions{})
	if err != nil || len(ns.Annotations) != 0 || len(ns.Labels) != 1 {
		t.Fatalf("foreign namespace changed: %v %v", ns, err)
	}
	if len(h.w.clusters) != 0 || h.w.done != 0 {
		t.Fatalf("clusters %v done %d", h.w.clusters, h.w.done)
	}
}

func TestVClusterInstallRetriedAfterTheTokenMakesOneClusterOneAgentOneDone(t *testing.T) {
	h := newVCHarness(t)
	ctx := context.Background()
	h.w.failInstall = 1
	go func() {
		for {
			if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err == nil {
				h.bringKubeconfig(t)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000000d", `{}`, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	if st, _ := sg.Step("agent"); st.Attempts < 2 {
		t.Fatalf("agent step attempts %d, want the failed one retried", st.Attempts)
	}
	if len(h.w.clusters) != 1 || h.w.agents != 1 || h.w.done != 1 || h.w.tokens != 2 {
		t.Fatalf("clusters %d agents %d done %d tokens read %d", len(h.w.clusters), h.w.agents, h.w.done, h.w.tokens)
	}
}

// kubeconfigOnceNamespaceExists is the external driver writing the
// kubeconfig Secret once the namespace step has made vc-demo.
func (h *vcHarness) kubeconfigOnceNamespaceExists(t *testing.T) {
	go func() {
		for {
			if _, err := h.host.CoreV1().Namespaces().Get(context.Background(), "vc-demo", metav1.GetOptions{}); err == nil {
				h.bringKubeconfig(t)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

func TestVClusterReadinessDeadlineErrsKeepsEverythingAndAPassSetsItOK(t *testing.T) {
	h := newVCHarness(t)
	ctx := context.Background()
	h.w.notReady = true
	h.kubeconfigOnceNamespaceExists(t)
	sg := h.run(t, VClusterCreate, "0000000000000000000000000000000e", `{}`, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s (a passed readiness deadline must not compensate)", sg.Status, sg.Error)
	}
	w := h.w
	if len(w.orderErred) != 1 || len(w.erred) != 1 || w.done != 0 || len(w.ok) != 0 {
		t.Fatalf("order erred %v resource erred %v done %d ok %v", w.orderErred, w.erred, w.done, w.ok)
	}
	if !strings.Contains(w.erred[0], "not reported cluster") {
		t.Errorf("erred for %q", w.erred[0])
	}
	if len(w.clusters) != 1 || w.agents != 1 || w.removed != 0 {
		t.Fatalf("torn down: clusters %v agents %d removed %d", w.clusters, w.agents, w.removed)
	}
	if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err != nil {
		t.Fatalf("host namespace gone: %v", err)
	}

	// Still not ready: the pass leaves the erred resource as Waldur shows it.
	if st, err := h.pass.run(ctx); err != nil || st.Failed != 0 || st.Repairs != 0 {
		t.Fatalf("pass while not ready: %+v %v", st, err)
	}
	w.mu.Lock()
	w.notReady = false
	w.mu.Unlock()
	if st, err := h.pass.run(ctx); err != nil || st.Repairs != 1 {
		t.Fatalf("pass once ready: %+v %v", st, err)
	}
	if len(w.ok) != 1 || w.ok[0] != resourceUUID {
		t.Fatalf("set_as_ok calls %v, want one for %s", w.ok, resourceUUID)
	}
	if st, err := h.pass.run(ctx); err != nil || st.Repairs != 0 || len(w.ok) != 1 {
		t.Fatalf("a second pass repeats set_as_ok: %+v %v %v", st, err, w.ok)
	}

	sg = h.run(t, VClusterTerminate, "0000000000000000000000000000000f", ``, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	if raw, err := h.plans.Get(ctx, hexUUID(resourceUUID)); err != nil || raw != nil {
		t.Fatalf("record left after terminate: %s %v", raw, err)
	}
}

// vclusterServiceThenKubeconfig is the helm driver's vCluster Service
// (annotated as given) appearing in vc-demo, then its kubeconfig Secret.
func (h *vcHarness) vclusterServiceThenKubeconfig(t *testing.T, annotations map[string]string) {
	go func() {
		ctx := context.Background()
		for {
			if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "vc-demo", UID: "svc-uid-1",
			Labels: map[string]string{"app": "vcluster"}, Annotations: annotations}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9"}}
		if _, err := h.host.CoreV1().Services("vc-demo").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
		h.bringKubeconfig(t)
	}()
}

func TestVClusterLoftSkipImportLeavesRancherAloneAndSettles(t *testing.T) {
	h := newVCHarness(t)
	h.vclusterServiceThenKubeconfig(t, map[string]string{vcluster.AnnotationSkipImport: "true"})
	sg := h.run(t, VClusterCreate, "00000000000000000000000000000010", `{}`, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	w := h.w
	if len(w.clusters) != 0 || w.tokens != 0 || w.agents != 0 {
		t.Fatalf("imported despite %s: clusters %v tokens %d agents %d", vcluster.AnnotationSkipImport, w.clusters, w.tokens, w.agents)
	}
	if w.done != 1 || w.backend != "vc-demo" || len(w.erred) != 0 {
		t.Fatalf("done %d backend %q erred %v", w.done, w.backend, w.erred)
	}
}

func TestVClusterImportCarriesLoftServiceUIDLabel(t *testing.T) {
	h := newVCHarness(t)
	h.vclusterServiceThenKubeconfig(t, nil)
	sg := h.run(t, VClusterCreate, "00000000000000000000000000000011", `{}`, nil)
	if sg.Status != saga.StatusSucceeded {
		t.Fatalf("saga %s: %s", sg.Status, sg.Error)
	}
	if got := h.w.labels[vcluster.LabelServiceUID]; got != "svc-uid-1" {
		t.Errorf("%s = %q, want the vCluster Service's UID", vcluster.LabelServiceUID, got)
	}
	if got := h.w.labels[vcluster.LabelHostCluster]; got != "c-m-host" {
		t.Errorf("%s = %q, want the host cluster id", vcluster.LabelHostCluster, got)
	}
	if len(h.w.clusters) != 1 || h.w.done != 1 {
		t.Fatalf("clusters %v done %d", h.w.clusters, h.w.done)
	}
}

// import_to_rancher turned off un-imports on the next pass (the Rancher
// cluster and the agent go, the namespace stays); turned on again, the
// next pass imports by the create's steps; terminate then deletes the
// role groups member sync made.
func TestVClusterImportSettingFollowedByThePassAndTerminateDeletesGroups(t *testing.T) {
	h := newVCHarness(t)
	ctx := context.Background()
	o := h.pass.vclusters[offeringHex]
	h.kubeconfigOnceNamespaceExists(t)
	if sg := h.run(t, VClusterCreate, "00000000000000000000000000000020", `{}`, nil); sg.Status != saga.StatusSucceeded {
		t.Fatalf("create %s: %s", sg.Status, sg.Error)
	}
	w := h.w
	record := func() VClusterRecord {
		t.Helper()
		raw, err := h.plans.Get(ctx, hexUUID(resourceUUID))
		var rec Record
		if err != nil || json.Unmarshal(raw, &rec) != nil || rec.VCluster == nil {
			t.Fatalf("record %s %v", raw, err)
		}
		return *rec.VCluster
	}
	if rec := record(); rec.ID == "" {
		t.Fatalf("record %+v without the v3 id", rec)
	}

	o.Settings.ImportToRancher = false
	if st, err := h.pass.run(ctx); err != nil || st.Repairs != 1 {
		t.Fatalf("un-import pass: %+v %v", st, err)
	}
	if len(w.clusters) != 0 || w.agents != 0 || w.removed != 1 || record().ID != "" {
		t.Fatalf("after un-import: clusters %v agents %d removed %d record %+v", w.clusters, w.agents, w.removed, record())
	}
	if _, err := h.host.CoreV1().Namespaces().Get(ctx, "vc-demo", metav1.GetOptions{}); err != nil {
		t.Fatalf("host namespace gone with the un-import: %v", err)
	}
	if st, err := h.pass.run(ctx); err != nil || st.Repairs != 0 {
		t.Fatalf("a second pass while off: %+v %v", st, err)
	}

	o.Settings.ImportToRancher = true
	if st, err := h.pass.run(ctx); err != nil || st.Repairs != 1 {
		t.Fatalf("re-import pass: %+v %v", st, err)
	}
	if len(w.clusters) != 1 || w.agents != 1 || record().ID == "" {
		t.Fatalf("after re-import: clusters %v agents %d record %+v", w.clusters, w.agents, record())
	}
	if st, err := h.pass.run(ctx); err != nil || st.Repairs != 0 || len(w.erred) != 0 {
		t.Fatalf("a pass once re-imported and ready: %+v %v erred %v", st, err, w.erred)
	}

	o.Settings.KeycloakEnabled = true
	if sg := h.run(t, VClusterTerminate, "00000000000000000000000000000021", ``, nil); sg.Status != saga.StatusSucceeded {
		t.Fatalf("terminate %s: %s", sg.Status, sg.Error)
	}
	hex := hexUUID(resourceUUID)
	want := []string{"c_" + hex + "_cluster-owner", "c_" + hex + "_cluster-member", "c_" + hex}
	if !slices.Equal(w.deletedGroups, want) {
		t.Errorf("deleted groups %v, want %v", w.deletedGroups, want)
	}
	if len(w.clusters) != 0 || w.agents != 0 {
		t.Errorf("after terminate: clusters %v agents %d", w.clusters, w.agents)
	}
}
