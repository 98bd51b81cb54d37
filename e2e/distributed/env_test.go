// Package distributed_test runs sitebus as the Helm chart deploys it: every
// service its own process (two replicas of order and quota) on a cluster of
// three nats-server processes, with RabbitMQ, a Kubernetes API server and
// the Waldur and Keycloak simulators; then the same under a seeded schedule
// of faults.
package distributed_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/services/app"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

var mnsGVR = schema.GroupVersionResource{Group: "provisioning.hpc.ut.ee", Version: "v1", Resource: "managednamespaces"}

// kcAdminPassword is long enough for the harness's grep of every process's
// output for configured secrets.
const kcAdminPassword = "kc-admin-7c2e9a41d5"

// siteOptions shape one distributed site.
type siteOptions struct {
	// dedicated starts a RabbitMQ and a control plane of the test's own
	// (the chaos soak restarts and freezes them); otherwise the shared ones.
	dedicated bool
	// keycloak runs orders as sagas with Keycloak groups and membership.
	keycloak bool
	// projects is how many Waldur projects there are. The workload gives
	// each resource its own: Waldur's teams are per project, and two
	// projects' identical role changes would be one message id (Mastermind
	// derives it from the payload), deduplicated as the same event.
	projects int
	// replicas per service (default: two of order and quota).
	replicas map[string]int
	// waldurLatency delays every Waldur API answer.
	waldurLatency time.Duration
	// env is added to every process (e.g. the polling periods).
	env []string
	// ordering is sitebus.ordering.mode; default cluster: events of one
	// resource in order and one at a time across all replicas.
	ordering string
	// slots is sitebus.ordering.slots; 0: bus.DefaultSlots.
	slots int
}

// site is the running topology.
type site struct {
	*harness.Site
	t        *testing.T
	nats     *harness.NATSCluster
	cluster  *kube.Cluster
	projects []string
}

func newSite(t *testing.T, o siteOptions) *site {
	t.Helper()
	rabbitmq.Require(t)
	kube.Require(t)
	s := &site{t: t, nats: harness.StartNATSCluster(t, 3)}
	var opts []harness.SiteOption
	if o.dedicated {
		opts = append(opts, harness.WithBroker(rabbitmq.StartForTest(t, rabbitmq.Options{})))
		s.cluster = kube.StartForTest(t, kube.Options{})
	} else {
		s.cluster = kube.Shared(t)
	}
	fx := harness.Fixture(t)
	// Only the orders the test makes, in projects of its own.
	fx.Orders = nil
	for i := range max(o.projects, 1) {
		p := fx.Projects[0]
		p.UUID = fmt.Sprintf("d1570000000040008000%012x", i+1)
		p.Name, p.Slug = fmt.Sprintf("Project %d", i+1), fmt.Sprintf("project-%d", i+1)
		fx.Projects = append(fx.Projects, p)
		s.projects = append(s.projects, p.UUID)
	}
	if o.ordering == "" {
		o.ordering = "cluster"
	}
	if o.slots == 0 {
		o.slots = bus.DefaultSlots
	}
	if o.keycloak {
		opts = append(opts, harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...))
	}
	replicas := o.replicas
	if replicas == nil {
		replicas = map[string]int{"order": 2, "quota": 2}
	}
	s.Site = harness.NewSite(t, append(opts, harness.WithCluster(s.cluster), harness.WithFixture(fx), harness.WithWaldurLatency(o.waldurLatency),
		harness.WithOffering(map[string]any{"waldur_offering_uuid": fx.Offerings[0].UUID}),
		harness.WithSitebusConfig(map[string]any{"streams": map[string]any{"replicas": 3},
			"periods":  map[string]any{"keycloak_pending_period": "2s", "saga_lease": "3s"},
			"ordering": map[string]any{"mode": o.ordering, "slots": o.slots}}),
		harness.WithNATS(s.nats.URL()), harness.WithDistributed(app.ServiceNames, replicas), harness.WithEnv(o.env...))...)
	return s
}

// crs lists the ManagedNamespaces by name with their quota.
func (s *site) crs(ctx context.Context) (map[string]map[string]string, error) {
	l, err := s.cluster.Dynamic().Resource(mnsGVR).Namespace(s.CRNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, u := range l.Items {
		q, _, _ := unstructured.NestedStringMap(u.Object, "spec", "quota")
		out[u.GetName()] = q
	}
	return out, nil
}
