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
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
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
	t        *testing.T
	nats     *harness.NATSCluster
	broker   *rabbitmq.Broker
	cluster  *kube.Cluster
	sim      *waldursim.Server
	admin    *waldursim.AdminClient
	kc       *keycloaksim.Server
	sb       *harness.Distributed
	crNS     string
	offering string // hex
	projects []string
}

func newSite(t *testing.T, o siteOptions) *site {
	t.Helper()
	rabbitmq.Require(t)
	kube.Require(t)
	s := &site{t: t, nats: harness.StartNATSCluster(t, 3)}
	if o.dedicated {
		s.broker = rabbitmq.StartForTest(t, rabbitmq.Options{})
		s.cluster = kube.StartForTest(t, kube.Options{})
	} else {
		s.broker = rabbitmq.Shared(t)
		s.cluster = kube.Shared(t)
	}
	s.crNS = s.prepareCRNamespace()

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
	s.sim = waldursim.NewTestServer(t, waldursim.Config{
		Fixture: fx, Latency: o.waldurLatency,
		Rabbit: &waldursim.RabbitConfig{MgmtURL: s.broker.MgmtURL(), STOMPAddr: s.broker.STOMPAddr(),
			AdminUser: s.broker.AdminUser, AdminPass: s.broker.AdminPass},
	})
	s.admin = s.sim.Admin()
	cfg, err := harness.FixtureSite(fx, s.sim, s.broker)
	if err != nil {
		t.Fatal(err)
	}
	s.offering = strings.ReplaceAll(cfg.OfferingUUID, "-", "")
	cfg.Kubeconfig, cfg.CRNamespace = s.cluster.Kubeconfig, s.crNS
	if o.ordering == "" {
		o.ordering = "cluster"
	}
	if o.slots == 0 {
		o.slots = bus.DefaultSlots
	}
	cfg.Sitebus = "  streams: {replicas: 3}\n  periods: {keycloak_pending_period: 2s, saga_lease: 3s}\n" +
		fmt.Sprintf("  ordering: {mode: %s, slots: %d}\n", o.ordering, o.slots)
	if o.keycloak {
		s.kc = keycloaksim.NewTestServer(t, keycloaksim.Config{AdminPassword: kcAdminPassword,
			Realms: []keycloaksim.Realm{{Name: "waldur", Users: harness.KeycloakUsers}}})
		cfg.MembershipBackend = "k8s-ut-namespace"
		cfg.KeycloakURL, cfg.KeycloakPassword = s.kc.URL(), kcAdminPassword
	}
	replicas := o.replicas
	if replicas == nil {
		replicas = map[string]int{"order": 2, "quota": 2}
	}
	s.sb = harness.StartDistributed(t, harness.DistributedOptions{
		Config: cfg.YAML(), NATSURL: s.nats.URL(), Services: app.ServiceNames, Replicas: replicas,
		Env: o.env,
	})
	// Orders arrive over STOMP: wait until the bridge consumes the queue.
	s.sb.Service("stomp-bridge")[0].WaitOrderSubscription(s.offering)
	return s
}

// prepareCRNamespace installs the ManagedNamespace CRD and makes the
// namespace this test's CRs live in.
func (s *site) prepareCRNamespace() string {
	root, err := harness.RepoRoot()
	if err != nil {
		s.t.Fatal(err)
	}
	c := harness.Context(s.t, time.Minute)
	if err := s.cluster.ApplyFile(c, filepath.Join(root, "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml")); err != nil {
		s.t.Fatal(err)
	}
	name := "dist-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(s.t.Name()))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := s.cluster.Dynamic().Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Create(c, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		s.t.Fatal(err)
	}
	return name
}

// crs lists the ManagedNamespaces by name with their quota.
func (s *site) crs(ctx context.Context) (map[string]map[string]string, error) {
	l, err := s.cluster.Dynamic().Resource(mnsGVR).Namespace(s.crNS).List(ctx, metav1.ListOptions{})
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
