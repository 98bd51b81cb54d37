package okd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/okd"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

// From e2e/waldursim/testdata/fixture.yaml: the offering, its token, and
// the project every order goes to (customer acme, project genomics).
const (
	offeringUUID = "d1a2b3c4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	offeringHex  = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	token        = "7d2f0c4b9e8a41d3a6b5c4d3e2f1a0b9"
	projectUUID  = "5e4d3c2b-1a09-48f7-a6e5-d4c3b2a19087"
)

var (
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	quotaGVR       = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// site is a sitebus process serving an OKD offering (no Keycloak) against
// the Waldur and OKD simulators, the shared RabbitMQ and the shared
// Kubernetes API server and controller manager, where the OKD simulator
// makes the projects' namespaces and quotas and bindings are real objects.
type site struct {
	t         testing.TB
	kube      *kube.Cluster
	sim       *okdsim.Server
	ws        *waldursim.Server
	admin     *waldursim.AdminClient
	sb        *harness.Sitebus
	prefix    string
	tokenFile string // the token file sitebus reads
	// roleEvents numbers the user_role events sent, for distinct ids.
	roleEvents int
}

// siteOptions choose how the site is configured.
type siteOptions struct{}

func newSite(t testing.TB, _ siteOptions) *site {
	t.Helper()
	rabbitmq.Require(t)
	kube.Require(t)
	broker := rabbitmq.Shared(t)
	cluster := kube.Shared(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sim := okdsim.NewTestServer(t, okdsim.Options{Kube: cluster.RESTConfig()})
	fx, err := waldursim.LoadFixture(filepath.Join(root, "e2e/waldursim/testdata/fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fx.Orders = nil // only the orders a test makes
	ws := waldursim.NewTestServer(t, waldursim.Config{
		Fixture: fx,
		Rabbit:  &waldursim.RabbitConfig{MgmtURL: broker.MgmtURL(), STOMPAddr: broker.STOMPAddr(), AdminUser: broker.AdminUser, AdminPass: broker.AdminPass},
	})
	// Projects are namespaces of the shared API server: each test's get a
	// prefix of their own.
	var b [3]byte
	_, _ = rand.Read(b[:])
	prefix := "o" + hex.EncodeToString(b[:]) + "-"
	// sitebus reads its token from a file of its own, which a test may
	// rotate as an external system would.
	tokenFile := filepath.Join(t.TempDir(), "okd-token")
	if err := os.WriteFile(tokenFile, []byte(sim.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dyn := cluster.Dynamic()
	t.Cleanup(func() {
		list, err := dyn.Resource(namespaceGVR).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.GetName(), prefix) {
				_ = dyn.Resource(namespaceGVR).Delete(context.Background(), ns.GetName(), metav1.DeleteOptions{})
			}
		}
	})
	wsHost, wsPort, _ := strings.Cut(broker.WebSTOMPAddr(), ":")
	cfg := fmt.Sprintf(`offerings:
  - name: e2e-okd
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: okd
    order_processing_backend: okd
    membership_sync_backend: okd
    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_settings:
      api_url: %s
      verify_cert: false
      namespace_prefix: %s
      default_role: view
      token_config:
        token_type: file
        token_file_path: %s
    backend_components:
      cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {type: ram, measured_unit: GB, accounting_type: limit, label: RAM}
      storage: {type: storage, measured_unit: GB, accounting_type: limit, label: Storage}
sitebus:
  log_format: text
`, ws.URL(), token, offeringUUID, wsHost, wsPort, rabbitmq.WebSTOMPPath, sim.URL(), prefix, tokenFile)
	s := &site{t: t, kube: cluster, sim: sim, ws: ws, admin: ws.Admin(), prefix: prefix, tokenFile: tokenFile}
	s.sb = harness.PrepareSitebus(t, harness.SitebusOptions{Config: cfg})
	s.sb.Start("WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=60", "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES=60")
	s.sb.WaitReady(60 * time.Second)
	s.sb.WaitOrderSubscription(offeringHex)
	return s
}

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

func member(user, role string) waldursim.TeamMember { return harness.Member(user, role) }

// create makes a resource whose team is set before its order is delivered,
// then delivers the order.
func (s *site) create(name string, limits map[string]int, team ...waldursim.TeamMember) (orderUUID, resourceUUID string) {
	s.t.Helper()
	res := s.createSilent(name, limits, team...)
	s.deliver(res.Order.UUID)
	return res.Order.UUID, res.Resource.UUID
}

// createSilent makes a create order and its resource without telling
// sitebus; deliver does.
func (s *site) createSilent(name string, limits map[string]int, team ...waldursim.TeamMember) *waldursim.CreateOrderResult {
	s.t.Helper()
	return harness.CreateOrderSilent(s.t, s.admin, name, limits, team...)
}

func (s *site) deliver(orderUUID string) {
	s.t.Helper()
	harness.DeliverOrder(s.t, s.admin, offeringHex, orderUUID)
}

// setTeam changes the resource's team in Waldur and tells sitebus with a
// user_role event for the fixture's project, as Waldur does.
func (s *site) setTeam(resUUID string, m waldursim.TeamMember, granted bool) {
	s.t.Helper()
	if _, err := s.admin.SetTeam(ctx(s.t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: granted, Silent: true}); err != nil {
		s.t.Fatal(err)
	}
	s.roleEvents++
	body := fmt.Sprintf(`{"user_uuid": "c0000000000040008000000000000%03d", "user_username": "%s", "project_uuid": "%s", "role_name": "%s", "granted": %v, "offering_uuid": "%s"}`,
		s.roleEvents, m.Username, strings.ReplaceAll(projectUUID, "-", ""), m.Role, granted, offeringHex)
	id := fmt.Sprintf("role-%s-%d", resUUID, s.roleEvents)
	if _, err := s.admin.PublishRaw(ctx(s.t), waldursim.RawEventRequest{OfferingUUID: offeringHex, ObjectType: "user_role", Body: body, MessageID: id}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *site) order(req waldursim.CreateOrderRequest) string {
	s.t.Helper()
	res, err := s.admin.CreateOrder(ctx(s.t), req)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.Order.UUID
}

// waitOrder waits for the order to reach one of states.
func (s *site) waitOrder(uuid string, states ...string) *waldursim.APIOrder {
	s.t.Helper()
	return harness.WaitOrder(s.t, s.admin, s.sb, 40, uuid, states...)
}

// hardQuota is waldur-quota's spec.hard in project ns (nil without one).
func (s *site) hardQuota(ns string) map[string]string {
	s.t.Helper()
	q, err := s.kube.Dynamic().Resource(quotaGVR).Namespace(ns).Get(ctx(s.t), okd.QuotaName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	hard, _, _ := unstructured.NestedStringMap(q.Object, "spec", "hard")
	return hard
}

// bindings are the project's waldur-* RoleBindings: user → ClusterRole.
func (s *site) bindings(ns string) map[string]string {
	s.t.Helper()
	list, err := s.kube.Dynamic().Resource(roleBindingGVR).Namespace(ns).List(ctx(s.t), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]string{}
	for _, rb := range list.Items {
		if !strings.HasPrefix(rb.GetName(), okd.BindingPrefix) {
			continue
		}
		role, _, _ := unstructured.NestedString(rb.Object, "roleRef", "name")
		out[strings.TrimPrefix(rb.GetName(), okd.BindingPrefix)] = role
	}
	return out
}
