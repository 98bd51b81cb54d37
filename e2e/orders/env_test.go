package orders_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

const (
	offeringUUID = "d1a2b3c4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	token        = "7d2f0c4b9e8a41d3a6b5c4d3e2f1a0b9"
	customerUUID = "0b6a7c1d-2e3f-44a5-9b8c-7d6e5f4a3b21"
	projectUUID  = "5e4d3c2b-1a09-48f7-a6e5-d4c3b2a19087"
)

var mnsGVR = schema.GroupVersionResource{Group: "provisioning.hpc.ut.ee", Version: "v1", Resource: "managednamespaces"}

// site is one Waldur simulator, the shared RabbitMQ and Kubernetes API
// server, and a sitebus process whose ManagedNamespaces live in a namespace
// of their own.
type site struct {
	t       testing.TB
	cluster *kube.Cluster
	dyn     dynamic.Interface
	crNS    string
	sim     *waldursim.Server
	admin   *waldursim.AdminClient
	sb      *harness.Sitebus
	env     []string
}

type siteOptions struct {
	cluster *kube.Cluster // default: the shared one
	env     []string
	noStart bool
	// keycloak, when set, enables the Keycloak integration against it.
	keycloak *keycloaksim.Server
	// settings are more backend_settings lines (6-space indented).
	settings string
	// natsURL points sitebus at an external NATS (e.g. a cluster); empty:
	// the embedded server.
	natsURL string
	// sitebus are more lines of the sitebus section (2-space indented).
	sitebus string
}

func newSite(t testing.TB, o siteOptions) *site {
	t.Helper()
	rabbitmq.Require(t)
	kube.Require(t)
	broker := rabbitmq.Shared(t)
	cluster := o.cluster
	if cluster == nil {
		cluster = kube.Shared(t)
	}
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.ApplyFile(c, filepath.Join(root, "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml")); err != nil {
		t.Fatal(err)
	}
	crNS := "sitebus-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "'", "").Replace(t.Name()))
	if len(crNS) > 63 {
		// Subtests share long prefixes: keep the names apart by a hash.
		sum := sha256.Sum256([]byte(t.Name()))
		crNS = strings.TrimRight(crNS[:50], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": crNS}}}
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	if _, err := cluster.Dynamic().Resource(nsGVR).Create(c, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	fx, err := waldursim.LoadFixture(filepath.Join(root, "e2e/waldursim/testdata/fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Only the orders a test makes: the fixture's pending order would be
	// picked up by the reconciler at start and add a CR of its own.
	fx.Orders = nil
	sim := waldursim.NewTestServer(t, waldursim.Config{
		Fixture: fx,
		Rabbit:  &waldursim.RabbitConfig{MgmtURL: broker.MgmtURL(), STOMPAddr: broker.STOMPAddr(), AdminUser: broker.AdminUser, AdminPass: broker.AdminPass},
	})
	wsHost, wsPort, _ := strings.Cut(broker.WebSTOMPAddr(), ":")
	cfg := fmt.Sprintf(`offerings:
  - name: e2e-namespaces
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: k8s-ut-namespace
    order_processing_backend: k8s-ut-namespace
    membership_sync_backend: k8s-ut-namespace
    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_settings:
      kubeconfig_path: %s
      cr_namespace: %s
      namespace_prefix: waldur-
      namespace_labels: {tier: research}
%s    backend_components:
      cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {type: ram, measured_unit: GiB, accounting_type: limit, label: RAM}
      storage: {type: storage, measured_unit: GiB, accounting_type: limit, label: Storage}
      gpu: {type: gpu, measured_unit: units, accounting_type: limit, label: GPU}
sitebus:
  log_format: text
  periods: {keycloak_pending_period: 2s, saga_lease: 3s}
%s`, sim.URL(), token, offeringUUID, wsHost, wsPort, rabbitmq.WebSTOMPPath, cluster.Kubeconfig, crNS, keycloakSettings(o.keycloak)+o.settings, o.sitebus)
	s := &site{t: t, cluster: cluster, dyn: cluster.Dynamic(), crNS: crNS, sim: sim, admin: sim.Admin(),
		env: append([]string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=60", "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES=60"}, o.env...)}
	s.sb = harness.PrepareSitebus(t, harness.SitebusOptions{Config: cfg, NATSURL: o.natsURL})
	if !o.noStart {
		s.start()
	}
	return s
}

// keycloakSettings is the backend_settings part that points sitebus at the
// Keycloak simulator (users looked up by username).
func keycloakSettings(kc *keycloaksim.Server) string {
	if kc == nil {
		return ""
	}
	return fmt.Sprintf(`      keycloak_enabled: true
      keycloak_use_user_id: false
      keycloak:
        keycloak_url: %s/
        keycloak_realm: waldur
        keycloak_user_realm: master
        keycloak_username: admin
        keycloak_password: %s
`, kc.URL(), kcAdminPassword)
}

func (s *site) start(extraEnv ...string) {
	s.t.Helper()
	s.sb.Start(append(append([]string(nil), s.env...), extraEnv...)...)
	s.sb.WaitReady(60 * time.Second)
	// Orders arrive over STOMP: wait until the order queue is consumed.
	harness.Eventually(s.t, 30*time.Second, "the order subscription", func() bool {
		_, m := s.sb.Get("/metrics")
		return strings.Contains(m, `sitebus_stomp_connected{object_type="order"`) && strings.Contains(m, `object_type="order",offering="d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"} 1`)
	})
}

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

// order creates an order in the simulator (which publishes its event) and
// returns its UUID and the resource's.
func (s *site) order(req waldursim.CreateOrderRequest) (orderUUID, resourceUUID string) {
	s.t.Helper()
	res, err := s.admin.CreateOrder(ctx(s.t), req)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.Order.UUID, res.Resource.UUID
}

// waitOrder waits for the order to reach one of states and returns it.
func (s *site) waitOrder(uuid string, states ...string) *waldursim.APIOrder {
	s.t.Helper()
	return harness.WaitOrder(s.t, s.admin, s.sb, 30, uuid, states...)
}

func (s *site) cr(name string) (*unstructured.Unstructured, error) {
	return s.dyn.Resource(mnsGVR).Namespace(s.crNS).Get(ctx(s.t), name, metav1.GetOptions{})
}

func (s *site) mustCR(name string) *unstructured.Unstructured {
	s.t.Helper()
	u, err := s.cr(name)
	if err != nil {
		s.t.Fatalf("ManagedNamespace %s/%s: %v", s.crNS, name, err)
	}
	return u
}

func (s *site) crCount() int {
	s.t.Helper()
	l, err := s.dyn.Resource(mnsGVR).Namespace(s.crNS).List(ctx(s.t), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return len(l.Items)
}

func quota(u *unstructured.Unstructured) map[string]string {
	q, _, _ := unstructured.NestedStringMap(u.Object, "spec", "quota")
	return q
}

// metric returns the value of a sample line of /metrics ("" if absent).
func (s *site) metric(prefix string) string {
	_, m := s.sb.Get("/metrics")
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, prefix+" ") {
			return strings.TrimPrefix(l, prefix+" ")
		}
	}
	return ""
}
