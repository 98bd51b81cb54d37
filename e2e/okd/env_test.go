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
