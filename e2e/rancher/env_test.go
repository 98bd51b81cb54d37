package rancher_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
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

// Names Python gives the cluster's and the project's Keycloak groups for
// the simulator's cluster c-m-sim00001 and the fixture's project.
const (
	parentGroup = "c_cmsim000"
	childGroup  = "project_genomics_workloads-manage"
	childPath   = "/" + parentGroup + "/" + childGroup
)

// kcAdminPassword is distinctive so that the harness's grep of sitebus's
// logs for configured secrets would find it.
const kcAdminPassword = "kc-admin-r4nch3r-77"

var kcUsers = []keycloaksim.User{
	{ID: "11111111-1111-4111-8111-111111111111", Username: "alice01", Email: "alice@acme.example"},
	{ID: "22222222-2222-4222-8222-222222222222", Username: "bob01", Email: "bob@acme.example"},
	{ID: "33333333-3333-4333-8333-333333333333", Username: "carol01", Email: "carol@acme.example"},
}

// site is a sitebus process serving a Rancher offering with Keycloak,
// against the Waldur, Rancher and Keycloak simulators, the shared RabbitMQ
// and the shared Kubernetes API server and controller manager (where the
// Rancher simulator makes the namespaces and quotas).
type site struct {
	t      testing.TB
	kube   *kube.Cluster
	rs     *ranchersim.Server
	kc     *keycloaksim.Server
	ws     *waldursim.Server
	admin  *waldursim.AdminClient
	sb     *harness.Sitebus
	prefix string
}

func newSite(t testing.TB) *site { return newSiteWith(t, siteOptions{Keycloak: true}) }

// siteOptions choose how the site is configured.
type siteOptions struct {
	// Keycloak turns keycloak_enabled on: creates run the
	// rancher-project-create saga and teams go into Keycloak groups.
	// Without it, creates take the direct path.
	Keycloak bool
}

func newSiteWith(t testing.TB, opts siteOptions) *site {
	t.Helper()
	rabbitmq.Require(t)
	kube.Require(t)
	broker := rabbitmq.Shared(t)
	cluster := kube.Shared(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rs := ranchersim.NewTestServer(t, ranchersim.Options{Kube: cluster.RESTConfig()})
	kc := keycloaksim.NewTestServer(t, keycloaksim.Config{AdminPassword: kcAdminPassword, Realms: []keycloaksim.Realm{{Name: "waldur", Users: kcUsers}}})
	fx, err := waldursim.LoadFixture(filepath.Join(root, "e2e/waldursim/testdata/fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fx.Orders = nil // only the orders a test makes
	ws := waldursim.NewTestServer(t, waldursim.Config{
		Fixture: fx,
		Rabbit:  &waldursim.RabbitConfig{MgmtURL: broker.MgmtURL(), STOMPAddr: broker.STOMPAddr(), AdminUser: broker.AdminUser, AdminPass: broker.AdminPass},
	})
	// Namespaces are named after projects and live in the shared API
	// server: each test's projects get a prefix of their own.
	var b [3]byte
	_, _ = rand.Read(b[:])
	prefix := "r" + hex.EncodeToString(b[:]) + "-"
	o := rs.Options()
	wsHost, wsPort, _ := strings.Cut(broker.WebSTOMPAddr(), ":")
	cfg := fmt.Sprintf(`offerings:
  - name: e2e-rancher
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: rancher
    order_processing_backend: rancher
    membership_sync_backend: rancher
    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_settings:
      backend_url: %s
      username: %s
      password: %s
      cluster_id: %s
      project_prefix: %s
      default_role: workloads-manage
      namespace_labels: {gpu-pool: h100-2x}
      keycloak_enabled: %t
      keycloak_use_user_id: false
      keycloak:
        keycloak_url: %s/
        keycloak_realm: waldur
        keycloak_user_realm: master
        keycloak_username: admin
        keycloak_password: %s
    backend_components:
      cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}
      ram: {type: ram, measured_unit: GB, accounting_type: limit, label: RAM}
      storage: {type: storage, measured_unit: GB, accounting_type: limit, label: Storage}
      gpu: {type: gpu, measured_unit: units, accounting_type: limit, label: GPU}
sitebus:
  log_format: text
  periods: {keycloak_pending_period: 2s, saga_lease: 3s}
`, ws.URL(), token, offeringUUID, wsHost, wsPort, rabbitmq.WebSTOMPPath,
		rs.URL(), o.AccessKey, o.SecretKey, o.ClusterID, prefix, opts.Keycloak, kc.URL(), kcAdminPassword)
	s := &site{t: t, kube: cluster, rs: rs, kc: kc, ws: ws, admin: ws.Admin(), prefix: prefix}
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
	res := harness.CreateOrderSilent(s.t, s.admin, name, limits, team...)
	harness.DeliverOrder(s.t, s.admin, offeringHex, res.Order.UUID)
	return res.Order.UUID, res.Resource.UUID
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

// members returns the usernames in the group at path, sorted (nil if
// there is no such group).
func (s *site) members(path string) []string {
	g, ok := s.kc.GroupByPath("waldur", path)
	if !ok {
		return nil
	}
	m := s.kc.MemberNames("waldur", g.ID)
	slices.Sort(m)
	return m
}

func (s *site) waitMembers(path string, want ...string) {
	s.t.Helper()
	slices.Sort(want)
	harness.Eventually(s.t, 60*time.Second, fmt.Sprintf("group %s with %v", path, want), func() bool {
		_, ok := s.kc.GroupByPath("waldur", path)
		return ok && slices.Equal(s.members(path), want)
	})
}

// groupBindings are the project's bindings of the child group.
func (s *site) groupBindings(projectID string) []ranchersim.Binding {
	var out []ranchersim.Binding
	for _, b := range s.rs.Bindings(projectID) {
		if b.GroupPrincipalID != "" {
			out = append(out, b)
		}
	}
	return out
}

// waldurCalls counts the Waldur calls whose path ends in action.
func (s *site) waldurCalls(action string) int {
	s.t.Helper()
	calls, err := s.admin.Calls(ctx(s.t))
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, c := range calls {
		if strings.HasSuffix(strings.TrimRight(c.Path, "/"), "/"+action) {
			n++
		}
	}
	return n
}
