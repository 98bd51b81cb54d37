package okd_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/okd"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

// projectUUID is the fixture's project, where every order goes (customer
// acme, project genomics).
const projectUUID = "5e4d3c2b1a0948f7a6e5d4c3b2a19087"

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
	*harness.Site
	t testing.TB
	// roleEvents numbers the user_role events sent, for distinct ids.
	roleEvents int
}

func newSite(t testing.TB, opts ...harness.SiteOption) *site {
	t.Helper()
	opts = append([]harness.SiteOption{harness.WithCluster(kube.Shared(t)), harness.WithOKD(),
		harness.WithSettings(map[string]any{"default_role": "view"})}, opts...)
	return &site{t: t, Site: harness.NewSite(t, opts...)}
}

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

func member(user, role string) waldursim.TeamMember { return harness.Member(user, role) }

// setTeam changes the resource's team in Waldur and tells sitebus with a
// user_role event for the fixture's project, as Waldur does.
func (s *site) setTeam(resUUID string, m waldursim.TeamMember, granted bool) {
	s.t.Helper()
	if _, err := s.Admin.SetTeam(ctx(s.t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: granted, Silent: true}); err != nil {
		s.t.Fatal(err)
	}
	s.roleEvents++
	body := fmt.Sprintf(`{"user_uuid": "c0000000000040008000000000000%03d", "user_username": "%s", "project_uuid": "%s", "role_name": "%s", "granted": %v, "offering_uuid": "%s"}`,
		s.roleEvents, m.Username, projectUUID, m.Role, granted, s.OfferingHex)
	id := fmt.Sprintf("role-%s-%d", resUUID, s.roleEvents)
	if _, err := s.Admin.PublishRaw(ctx(s.t), waldursim.RawEventRequest{OfferingUUID: s.OfferingHex, ObjectType: "user_role", Body: body, MessageID: id}); err != nil {
		s.t.Fatal(err)
	}
}

// hardQuota is waldur-quota's spec.hard in project ns (nil without one).
func (s *site) hardQuota(ns string) map[string]string {
	s.t.Helper()
	q, err := s.Cluster.Dynamic().Resource(quotaGVR).Namespace(ns).Get(ctx(s.t), okd.QuotaName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	hard, _, _ := unstructured.NestedStringMap(q.Object, "spec", "hard")
	return hard
}

// bindings are the project's waldur-* RoleBindings: user → ClusterRole.
func (s *site) bindings(ns string) map[string]string {
	s.t.Helper()
	list, err := s.Cluster.Dynamic().Resource(roleBindingGVR).Namespace(ns).List(ctx(s.t), metav1.ListOptions{})
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

// createDone orders a project with these limits and team and fails the
// test unless the order ends done; it returns the resource as Waldur then
// holds it, its backend_id the OpenShift project's name.
func (s *site) createDone(name string, limits map[string]int, team ...waldursim.TeamMember) (resUUID string, res *waldursim.APIResource) {
	s.t.Helper()
	orderUUID, resUUID := s.Create(name, limits, team...)
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		s.t.Fatalf("create: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	res, err := s.Admin.Resource(ctx(s.t), resUUID)
	if err != nil {
		s.t.Fatal(err)
	}
	return resUUID, res
}

// terminateDone orders the resource terminated, fails t unless the order
// ends done, and waits until its OpenShift project ns is gone.
func (s *site) terminateDone(t testing.TB, resUUID, ns string) {
	t.Helper()
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID})
	if o := s.WaitOrder(term, "done", "erred"); o.State != "done" {
		t.Fatalf("terminate of project %s: %s (%s)", ns, o.State, o.ErrorMessage)
	}
	harness.Eventually(t, 90*time.Second, "project "+ns+" gone", func() bool {
		_, found, err := s.OKD.Project(ctx(t), ns)
		return err == nil && !found
	})
}
