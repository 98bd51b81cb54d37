package harness

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// KubeCluster is what a site needs of a Kubernetes API server (a
// kube.Cluster, which imports this package and so cannot be named here).
type KubeCluster interface {
	KubeconfigPath() string
	RESTConfig() *rest.Config
	Dynamic() dynamic.Interface
	ApplyFile(ctx context.Context, path string) error
}

// Site is one simulated site as the end-to-end suites set it up: a Waldur
// simulator seeded from the standard fixture, a RabbitMQ, the simulators
// and cluster its backend talks to, and sitebus configured against them
// (one `sitebus run`, or every service its own process).
type Site struct {
	t       testing.TB
	Broker  *rabbitmq.Broker
	Cluster KubeCluster
	Fixture *waldursim.Fixture
	Waldur  *waldursim.Server
	Admin   *waldursim.AdminClient
	// OfferingUUID is the fixture's offering as the config names it
	// (dashed); OfferingHex without dashes; Token is its user's API token.
	OfferingUUID, OfferingHex, Token string
	Keycloak                         *keycloaksim.Server
	Rancher                          *ranchersim.Server
	OKD                              *okdsim.Server
	OpenStack                        *openstacksim.Server
	// OKDTokenFile is the file sitebus reads the OKD token from; a test may
	// rotate it as an external system would.
	OKDTokenFile string
	// CRNamespace is where the ManagedNamespaces live (namespace backend
	// with a cluster).
	CRNamespace string
	// Prefix starts the names of this site's Rancher projects or OKD
	// namespaces in a shared API server.
	Prefix string
	// Config is sitebus's configuration file.
	Config      string
	Sitebus     *Sitebus
	Distributed *Distributed
	o           siteOptions
}

// SiteOption shapes a Site.
type SiteOption func(*siteOptions)

type siteOptions struct {
	broker                 *rabbitmq.Broker
	cluster                KubeCluster
	fixture                *waldursim.Fixture
	latency                time.Duration
	kcPassword             string
	kcUsers                []keycloaksim.User
	rancher                *ranchersim.Options
	okd                    bool
	openstack              *openstacksim.Options
	offering, settings, sb []map[string]any
	offeringYAML           func(*Site) string
	env                    []string
	natsURL                string
	services               []string
	replicas               map[string]int
	only                   string
	args                   []string
	noStart, noBroker, gpu bool
}

// WithBroker uses broker instead of the shared RabbitMQ.
func WithBroker(b *rabbitmq.Broker) SiteOption { return func(o *siteOptions) { o.broker = b } }

// WithoutBroker runs no RabbitMQ: the offering has no STOMP, for services
// that only poll (the usage reporter).
func WithoutBroker() SiteOption { return func(o *siteOptions) { o.noBroker = true } }

// WithCluster puts the site's platform on c: the namespace backend gets
// the ManagedNamespace CRD and a CR namespace of the test's own, the
// Rancher and OKD simulators make their namespaces there.
func WithCluster(c KubeCluster) SiteOption { return func(o *siteOptions) { o.cluster = c } }

// WithFixture seeds the Waldur simulator with fx instead of the standard
// fixture without its pending order.
func WithFixture(fx *waldursim.Fixture) SiteOption { return func(o *siteOptions) { o.fixture = fx } }

// WithWaldurLatency delays every Waldur API answer by d.
func WithWaldurLatency(d time.Duration) SiteOption { return func(o *siteOptions) { o.latency = d } }

// WithKeycloak starts a Keycloak simulator with realm waldur holding users,
// whose admin logs in with adminPassword, and turns the offering's access
// groups on.
func WithKeycloak(adminPassword string, users ...keycloaksim.User) SiteOption {
	return func(o *siteOptions) { o.kcPassword, o.kcUsers = adminPassword, users }
}

// WithRancher starts a Rancher simulator (on the site's cluster unless
// opts.Kube says otherwise) and serves a rancher offering.
func WithRancher(opts ranchersim.Options) SiteOption {
	return func(o *siteOptions) { o.rancher = &opts }
}

// WithOKD starts an OKD simulator on the site's cluster and serves an okd
// offering.
func WithOKD() SiteOption { return func(o *siteOptions) { o.okd = true } }

// WithOpenStack starts an OpenStack simulator.
func WithOpenStack(opts openstacksim.Options) SiteOption {
	return func(o *siteOptions) { o.openstack = &opts }
}

// WithOffering merges fields into the offering's entry of the config.
func WithOffering(fields map[string]any) SiteOption {
	return func(o *siteOptions) { o.offering = append(o.offering, fields) }
}

// WithSettings merges fields into the offering's backend_settings.
func WithSettings(fields map[string]any) SiteOption {
	return func(o *siteOptions) { o.settings = append(o.settings, fields) }
}

// WithSitebusConfig merges fields into the config's sitebus section.
func WithSitebusConfig(fields map[string]any) SiteOption {
	return func(o *siteOptions) { o.sb = append(o.sb, fields) }
}

// WithOfferingYAML makes the offering's entry f's (an item of the
// offerings list, e.g. ClusterOffering.YAML), for a backend whose settings
// the site does not write itself.
func WithOfferingYAML(f func(*Site) string) SiteOption {
	return func(o *siteOptions) { o.offeringYAML = f }
}

// WithGPU adds a gpu component (a limit, in units) to the offering's cpu,
// ram and storage.
func WithGPU() SiteOption { return func(o *siteOptions) { o.gpu = true } }

// WithEnv adds env to every sitebus start.
func WithEnv(env ...string) SiteOption { return func(o *siteOptions) { o.env = append(o.env, env...) } }

// WithNATS points sitebus at an external NATS (e.g. a cluster's URLs).
func WithNATS(url string) SiteOption { return func(o *siteOptions) { o.natsURL = url } }

// WithDistributed runs every one of services as its own process (replicas
// of each; one where not listed), as the Helm chart deploys them; it
// needs WithNATS.
func WithDistributed(services []string, replicas map[string]int) SiteOption {
	return func(o *siteOptions) { o.services, o.replicas = services, replicas }
}

// WithOnly runs one service alone (`--only service`), e.g. the STOMP
// bridge for tests of ingestion that need no platform; Start then waits
// for readiness only, the tests wait for what their service does.
func WithOnly(service string) SiteOption { return func(o *siteOptions) { o.only = service } }

// WithArgs adds arguments to `sitebus run` (e.g. the Python agent's
// `-m MODE`).
func WithArgs(args ...string) SiteOption {
	return func(o *siteOptions) { o.args = append(o.args, args...) }
}

// WithoutStart prepares sitebus without starting it; Start does.
func WithoutStart() SiteOption { return func(o *siteOptions) { o.noStart = true } }

// quietPolling keeps the periodic passes out of a test's way: events come
// over STOMP, as a test sends them.
var quietPolling = []string{"WALDUR_SITE_AGENT_ORDER_PROCESS_PERIOD_MINUTES=60", "WALDUR_SITE_AGENT_MEMBERSHIP_SYNC_PERIOD_MINUTES=60"}

// NewSite starts a site for t, everything stopped when t ends, and (unless
// WithoutStart) sitebus, waiting until it is ready and consumes the
// offering's orders.
func NewSite(t testing.TB, opts ...SiteOption) *Site {
	t.Helper()
	s := &Site{t: t}
	for _, opt := range opts {
		opt(&s.o)
	}
	o := &s.o
	if s.Broker = o.broker; s.Broker == nil && !o.noBroker {
		rabbitmq.Require(t)
		s.Broker = rabbitmq.Shared(t)
	}
	s.Cluster, s.Fixture = o.cluster, o.fixture
	if s.Fixture == nil {
		s.Fixture = Fixture(t)
		// Only the orders the test makes: the reconciler would pick the
		// fixture's pending one up at start.
		s.Fixture.Orders = nil
	}
	s.OfferingHex, s.Token = strings.ReplaceAll(s.Fixture.Offerings[0].UUID, "-", ""), s.Fixture.Users[0].Token
	h := s.OfferingHex
	s.OfferingUUID = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	wc := waldursim.Config{Fixture: s.Fixture, Latency: o.latency}
	if s.Broker != nil {
		wc.Rabbit = &waldursim.RabbitConfig{MgmtURL: s.Broker.MgmtURL(), STOMPAddr: s.Broker.STOMPAddr(),
			AdminUser: s.Broker.AdminUser, AdminPass: s.Broker.AdminPass}
	}
	s.Waldur = waldursim.NewTestServer(t, wc)
	s.Admin = s.Waldur.Admin()
	if o.kcPassword != "" {
		s.Keycloak = keycloaksim.NewTestServer(t, keycloaksim.Config{AdminPassword: o.kcPassword,
			Realms: []keycloaksim.Realm{{Name: "waldur", Users: o.kcUsers}}})
	}
	if o.openstack != nil {
		s.OpenStack = openstacksim.NewTestServer(t, *o.openstack)
	}
	s.startPlatform()
	s.Config = s.render()
	o.env = append(append([]string(nil), quietPolling...), o.env...)
	if o.services == nil {
		var args []string
		if o.only != "" {
			args = []string{"--only", o.only}
		}
		args = append(args, o.args...)
		s.Sitebus = PrepareSitebus(t, SitebusOptions{Config: s.Config, NATSURL: o.natsURL, Args: args})
	}
	if !o.noStart {
		s.Start()
	}
	return s
}

// Start starts sitebus (again, after a Kill or Stop) with extraEnv, and
// waits until it is ready and, unless one service runs alone, consumes the
// offering's orders.
func (s *Site) Start(extraEnv ...string) {
	s.t.Helper()
	env := append(append([]string(nil), s.o.env...), extraEnv...)
	if s.o.services != nil {
		s.Distributed = StartDistributed(s.t, DistributedOptions{Config: s.Config, NATSURL: s.o.natsURL,
			Services: s.o.services, Replicas: s.o.replicas, Env: env})
		s.Distributed.Service("stomp-bridge")[0].WaitOrderSubscription(s.OfferingHex)
		return
	}
	s.Sitebus.Start(env...)
	s.Sitebus.WaitReady(60 * time.Second)
	if s.o.only == "" {
		s.Sitebus.WaitOrderSubscription(s.OfferingHex)
	}
}

// Reconfigure renders the configuration again (the offering function of
// WithOfferingYAML reads the test's current settings) for sitebus's next
// Start: a change an operator makes by editing the file and restarting.
func (s *Site) Reconfigure() {
	s.t.Helper()
	s.Config = s.render()
	s.Sitebus.Rewrite(s.Config)
}

// Env is the environment of every start (before Start's extraEnv).
func (s *Site) Env() []string { return s.o.env }

// startPlatform starts the backend's simulators, or prepares the
// namespace backend's cluster.
func (s *Site) startPlatform() {
	o := &s.o
	switch {
	case o.rancher != nil:
		if o.rancher.Kube == nil && s.Cluster != nil {
			o.rancher.Kube = s.Cluster.RESTConfig()
		}
		s.Rancher = ranchersim.NewTestServer(s.t, *o.rancher)
		s.Prefix = "r" + randomHex(3) + "-"
	case o.okd:
		s.OKD = okdsim.NewTestServer(s.t, okdsim.Options{Kube: s.Cluster.RESTConfig()})
		s.Prefix = "o" + randomHex(3) + "-"
		s.OKDTokenFile = filepath.Join(s.t.TempDir(), "okd-token")
		if err := os.WriteFile(s.OKDTokenFile, []byte(s.OKD.Token()+"\n"), 0o600); err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(func() { deleteNamespaces(s.Cluster.Dynamic(), s.Prefix) })
	case s.Cluster != nil && o.offeringYAML == nil:
		s.CRNamespace = s.prepareCRNamespace()
	}
}

// render returns the configuration file.
func (s *Site) render() string {
	o := &s.o
	sitebus := map[string]any{"log_format": "text"}
	for _, p := range o.sb {
		merge(sitebus, p)
	}
	if o.offeringYAML != nil {
		sb, err := yaml.Marshal(map[string]any{"sitebus": sitebus})
		if err != nil {
			s.t.Fatal(err)
		}
		return "offerings:\n" + o.offeringYAML(s) + string(sb)
	}
	backend, unit, membership := "k8s-ut-namespace", "GiB", s.Keycloak != nil
	settings := map[string]any{}
	switch {
	case s.Rancher != nil:
		backend, unit, membership = "rancher", "GB", true
		ro := s.Rancher.Options()
		merge(settings, map[string]any{"backend_url": s.Rancher.URL(), "username": ro.AccessKey, "password": ro.SecretKey,
			"cluster_id": ro.ClusterID, "project_prefix": s.Prefix})
	case s.OKD != nil:
		backend, unit, membership = "okd", "GB", true
		merge(settings, map[string]any{"api_url": s.OKD.URL(), "verify_cert": false, "namespace_prefix": s.Prefix,
			"token_config": map[string]any{"token_type": "file", "token_file_path": s.OKDTokenFile}})
	case s.CRNamespace != "":
		merge(settings, map[string]any{"kubeconfig_path": s.Cluster.KubeconfigPath(), "cr_namespace": s.CRNamespace})
	}
	if s.Keycloak != nil {
		merge(settings, map[string]any{"keycloak_enabled": true, "keycloak_use_user_id": false, "keycloak": map[string]any{
			"keycloak_url": s.Keycloak.URL() + "/", "keycloak_realm": "waldur", "keycloak_user_realm": "master",
			"keycloak_username": "admin", "keycloak_password": o.kcPassword}})
	}
	for _, p := range o.settings {
		merge(settings, p)
	}
	component := func(typ, unit, label string) map[string]any {
		return map[string]any{"type": typ, "measured_unit": unit, "accounting_type": "limit", "label": label}
	}
	components := map[string]any{"cpu": component("cpu", "cores", "CPU"), "ram": component("ram", unit, "RAM"),
		"storage": component("storage", unit, "Storage")}
	if o.gpu {
		components["gpu"] = component("gpu", "units", "GPU")
	}
	offering := map[string]any{
		"name": "e2e-" + backend, "waldur_api_url": s.Waldur.URL() + "/api/", "waldur_api_token": s.Token,
		"waldur_offering_uuid": s.OfferingUUID, "backend_type": backend, "order_processing_backend": backend,
		"backend_components": components,
	}
	if s.Broker != nil {
		host, port, _ := strings.Cut(s.Broker.WebSTOMPAddr(), ":")
		merge(offering, map[string]any{"stomp_enabled": true, "websocket_use_tls": false, "stomp_ws_host": host,
			"stomp_ws_port": port, "stomp_ws_path": rabbitmq.WebSTOMPPath})
	}
	if membership {
		offering["membership_sync_backend"] = backend
	}
	if len(settings) > 0 {
		offering["backend_settings"] = settings
	}
	for _, p := range o.offering {
		merge(offering, p)
	}
	b, err := yaml.Marshal(map[string]any{"offerings": []any{offering}, "sitebus": sitebus})
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// prepareCRNamespace installs the ManagedNamespace CRD and makes the
// namespace this test's CRs live in, named after the test.
func (s *Site) prepareCRNamespace() string {
	c := Context(s.t, time.Minute)
	if err := InstallManagedNamespaceCRD(c, s.Cluster); err != nil {
		s.t.Fatal(err)
	}
	name := "sitebus-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "'", "").Replace(s.t.Name()))
	if len(name) > 63 {
		// Subtests share long prefixes: keep the names apart by a hash.
		sum := sha256.Sum256([]byte(s.t.Name()))
		name = strings.TrimRight(name[:50], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := s.Cluster.Dynamic().Resource(namespaces).Create(c, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		s.t.Fatal(err)
	}
	return name
}

// InstallManagedNamespaceCRD installs the ManagedNamespace CRD of
// deploy/crds in c (again: applying is idempotent).
func InstallManagedNamespaceCRD(ctx context.Context, c KubeCluster) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	return c.ApplyFile(ctx, filepath.Join(root, "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml"))
}

var namespaces = corev1.SchemeGroupVersion.WithResource("namespaces")

// deleteNamespaces deletes the namespaces whose names start with prefix.
func deleteNamespaces(dyn dynamic.Interface, prefix string) {
	list, err := dyn.Resource(namespaces).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.GetName(), prefix) {
			_ = dyn.Resource(namespaces).Delete(context.Background(), ns.GetName(), metav1.DeleteOptions{})
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// merge copies patch into dst, merging the maps both have (a map is
// copied, never shared with the caller); a nil value deletes the key.
func merge(dst, patch map[string]any) {
	for k, v := range patch {
		pm, ok := v.(map[string]any)
		switch {
		case v == nil:
			delete(dst, k)
			continue
		case !ok:
			dst[k] = v
			continue
		}
		dm, ok := dst[k].(map[string]any)
		if !ok {
			dm = map[string]any{}
			dst[k] = dm
		}
		merge(dm, pm)
	}
}

// Order creates an order in the simulator (which publishes its event) and
// returns its UUID and its resource's.
func (s *Site) Order(req waldursim.CreateOrderRequest) (orderUUID, resourceUUID string) {
	s.t.Helper()
	res, err := s.Admin.CreateOrder(Context(s.t, 2*time.Minute), req)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.Order.UUID, res.Resource.UUID
}

// Create makes a resource whose team is set before its create order is
// delivered, then delivers the order.
func (s *Site) Create(name string, limits map[string]int, team ...waldursim.TeamMember) (orderUUID, resourceUUID string) {
	s.t.Helper()
	res := CreateOrderSilent(s.t, s.Admin, name, limits, team...)
	s.Deliver(res.Order.UUID)
	return res.Order.UUID, res.Resource.UUID
}

// Deliver publishes the order's pending-provider event (DeliverOrder).
func (s *Site) Deliver(orderUUID string) {
	s.t.Helper()
	DeliverOrder(s.t, s.Admin, s.OfferingHex, orderUUID)
}

// WaitOrder waits for the order to reach one of states (WaitOrder).
func (s *Site) WaitOrder(uuid string, states ...string) *waldursim.APIOrder {
	s.t.Helper()
	return WaitOrder(s.t, s.Admin, s.Sitebus, 60, uuid, states...)
}

// Metric returns the value of the /metrics sample named by series (name
// and labels as Prometheus prints them, labels sorted); "" if absent.
func (s *Site) Metric(series string) string {
	_, m := s.Sitebus.Get("/metrics")
	for _, l := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}
