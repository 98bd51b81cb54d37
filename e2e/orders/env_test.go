package orders_test

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
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

// site is a sitebus process serving the namespace backend, its
// ManagedNamespaces in a namespace of their own of the shared Kubernetes
// API server (unless opts name another cluster).
type site struct {
	*harness.Site
	t testing.TB
}

func newSite(t testing.TB, opts ...harness.SiteOption) *site {
	t.Helper()
	return &site{t: t, Site: harness.NewSite(t, append([]harness.SiteOption{harness.WithCluster(kube.Shared(t)),
		harness.WithOffering(map[string]any{"membership_sync_backend": "k8s-ut-namespace"}), harness.WithGPU(),
		harness.WithSettings(map[string]any{"namespace_prefix": "waldur-", "namespace_labels": map[string]any{"tier": "research"}}),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"keycloak_pending_period": "2s", "saga_lease": "3s"}}),
	}, opts...)...)}
}

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

func (s *site) cr(name string) (*unstructured.Unstructured, error) {
	return s.Cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).Get(ctx(s.t), name, metav1.GetOptions{})
}

func (s *site) mustCR(name string) *unstructured.Unstructured {
	s.t.Helper()
	u, err := s.cr(name)
	if err != nil {
		s.t.Fatalf("ManagedNamespace %s/%s: %v", s.CRNamespace, name, err)
	}
	return u
}

func (s *site) crCount() int {
	s.t.Helper()
	l, err := s.Cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).List(ctx(s.t), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return len(l.Items)
}

func quota(u *unstructured.Unstructured) map[string]string {
	q, _, _ := unstructured.NestedStringMap(u.Object, "spec", "quota")
	return q
}

// createForeignCR makes a ManagedNamespace named name that sitebus did not
// make (no managed-by label), as an operator's hand-made one.
func (s *site) createForeignCR(name string) {
	s.t.Helper()
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "provisioning.hpc.ut.ee/v1", "kind": "ManagedNamespace",
		"metadata": map[string]any{"name": name, "namespace": s.CRNamespace},
		"spec":     map[string]any{"name": name},
	}}
	if _, err := s.Cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).Create(ctx(s.t), foreign, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// undeliveredCreate makes a resource named slug with m on its team, its
// Create order not yet delivered to sitebus.
func (s *site) undeliveredCreate(slug string, m waldursim.TeamMember) crashOrder {
	s.t.Helper()
	res, err := s.Admin.CreateOrder(ctx(s.t), waldursim.CreateOrderRequest{ResourceName: slug, Limits: map[string]int{"cpu": 1, "ram": 2}, Silent: true})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.Admin.SetTeam(ctx(s.t), waldursim.TeamRequest{ResourceUUID: res.Resource.UUID, Member: m, Granted: true, Silent: true}); err != nil {
		s.t.Fatal(err)
	}
	return crashOrder{uuid: res.Order.UUID, typ: "Create", slug: slug, resource: res.Resource.UUID}
}
