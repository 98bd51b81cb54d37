// Package provisioner_test runs `sitebus run` as a process with a
// rancher-cluster offering against the OpenStack, Rancher, Keycloak and
// Waldur simulators and a real Vault dev server, the simulated VMs
// running their cloud-init (e2e/vmboot): a node registers with Rancher
// only if its user_data logs in to Vault and reads the token Rancher
// issued.
package provisioner_test

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/vmboot"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }

const (
	kcAdminPassword = "kc-admin-cl4st3r-91"
	osAdminPassword = "os-admin-pr0v1s10n-42"
	extNetworkID    = "9e8d7c6b-5a49-4838-a271-605f4e3d2c1b"
	image           = "SLE Micro 6.1"
)

// zones are the three availability zones of the offering, one OpenStack
// simulator with three Nova zones.
var zones = []struct{ uuid, slug, az string }{
	{"11111111-1111-4111-8111-111111111111", "az-a", "nova-a"},
	{"22222222-2222-4222-8222-222222222222", "az-b", "nova-b"},
	{"33333333-3333-4333-8333-333333333333", "az-c", "nova-c"},
}

// site is a sitebus process serving a rancher-cluster offering.
type site struct {
	*harness.Site
	t     testing.TB
	vault *harness.Vault
	// vaultCalls counts the requests that reach Vault (sitebus's and the
	// VMs'), by method and path.
	vaultCalls *counter
	// boots counts the VMs' first boots by hostname.
	boots *counter
}

type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k]++
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m)
}

// newSite starts sitebus with env added to its environment (at this
// start only).
func newSite(t testing.TB, env ...string) *site {
	t.Helper()
	return newSiteWith(t, siteOptions{}, env...)
}

// siteOptions change the offering of a site.
type siteOptions struct {
	// membership runs the membership service over the offering, a pass
	// each second, with roleMapping as backend_settings.role_mapping.
	membership  bool
	roleMapping map[string]string
	// argoKubeconfig (a file) and argoNamespace register the clusters with
	// ArgoCD there.
	argoKubeconfig, argoNamespace string
	// pullPeriod and readyTimeout, when set, are
	// sitebus.periods.cluster_pull_period and cluster_ready_timeout.
	pullPeriod, readyTimeout string
	// bootAfter is how long a VM takes from its create to its boot
	// (openstacksim.Options.BootAfter); vmConcurrency, when set, is
	// sitebus.cluster_vm_concurrency.
	bootAfter     time.Duration
	vmConcurrency int
	// volumePolls, when set, is openstacksim.Options.VolumePolls (else a
	// volume is available at the first look).
	volumePolls int
	// selfManaged makes the offering self-managed, every node with a
	// floating IP, and its third zone without an external network.
	selfManaged bool
}

func newSiteWith(t testing.TB, opts siteOptions, env ...string) *site {
	t.Helper()
	s := &site{t: t, vaultCalls: &counter{m: map[string]int{}}, boots: &counter{m: map[string]int{}}}
	s.vault = harness.StartVault(t)
	// Vault behind a counting proxy: every Vault call of a create, by
	// sitebus or by a VM, goes through it (nodes get its address).
	target, err := url.Parse(s.vault.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	vp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.vaultCalls.add(r.Method + " " + r.URL.Path)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(vp.Close)

	register := vmboot.RancherSim(nil)
	periods := map[string]any{"saga_lease": "3s"}
	if opts.membership {
		periods["membership_sync_period"] = "1s"
	}
	if opts.pullPeriod != "" {
		periods["cluster_pull_period"] = opts.pullPeriod
	}
	if opts.readyTimeout != "" {
		periods["cluster_ready_timeout"] = opts.readyTimeout
	}
	s.Site = harness.NewSite(t, harness.WithoutStart(), harness.WithRancher(ranchersim.Options{}), harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...),
		harness.WithOpenStack(openstacksim.Options{
			AdminPassword:     osAdminPassword,
			AvailabilityZones: []string{"nova-a", "nova-b", "nova-c"},
			Flavors: []openstacksim.Flavor{
				{ID: "f-medium", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
				{ID: "f-large", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
				{ID: "f-xlarge", Name: "m1.xlarge", VCPUs: 8, RAM: 16384, Disk: 160},
			},
			Images:          []openstacksim.Image{{ID: "5b0c1a2e-0000-4000-8000-000000000001", Name: image}},
			ExternalNetwork: openstacksim.ExternalNetwork{Name: "public", CIDR: "172.24.4.0/24", NetworkID: extNetworkID},
			// Volumes and VMs are ready at the first look: the create's wall
			// time is sitebus's, not the simulator's pacing.
			BuildPolls: -1, VolumePolls: cmp.Or(opts.volumePolls, -1), DeletePolls: -1, BootAfter: opts.bootAfter,
			OnBoot: func(ctx context.Context, v openstacksim.Instance) error {
				if strings.HasPrefix(v.Name, "k8s-lb-") {
					return nil // the load balancer runs no RKE2
				}
				s.boots.add(v.Name)
				return vmboot.Boot(ctx, v.UserData, v.Name, register)
			},
		}),
		harness.WithOfferingYAML(func(hs *harness.Site) string {
			o := clusterOffering(hs, vp.URL, s.vault.RootToken)
			o.MembershipSync, o.RoleMapping = opts.membership, opts.roleMapping
			o.ArgoCDKubeconfig, o.ArgoCDNamespace = opts.argoKubeconfig, opts.argoNamespace
			if opts.selfManaged {
				o.SelfManaged, o.FloatingIPs = true, true
				o.Zones[2].ExternalNetworkID = ""
			}
			return o.YAML()
		}),
		harness.WithSitebusConfig(sitebusConfig(periods, opts.vmConcurrency)))
	s.Start(env...)
	return s
}

// sitebusConfig is the sitebus section of the site's configuration.
func sitebusConfig(periods map[string]any, vmConcurrency int) map[string]any {
	c := map[string]any{"periods": periods}
	if vmConcurrency != 0 {
		c["cluster_vm_concurrency"] = vmConcurrency
	}
	return c
}

// clusterOffering is the rancher-cluster offering over the zones, its
// nodes given their registration token through Vault at vaultURL.
func clusterOffering(s *harness.Site, vaultURL, vaultToken string) harness.ClusterOffering {
	o := s.Rancher.Options()
	offering := harness.ClusterOffering{
		Name:      "e2e-clusters",
		WaldurURL: s.Waldur.URL(), Token: s.Token, OfferingUUID: s.OfferingUUID,
		WebSTOMPAddr: s.Broker.WebSTOMPAddr(), WebSTOMPPath: rabbitmq.WebSTOMPPath,
		RancherURL: s.Rancher.URL(), RancherAccessKey: o.AccessKey, RancherSecretKey: o.SecretKey,
		Image:        image,
		Server:       harness.ClusterNodeProfile{Flavor: "m1.large", SystemGB: 80, DataGB: 100},
		Worker:       harness.ClusterNodeProfile{SystemGB: 40},
		LoadBalancer: harness.ClusterNodeProfile{Flavor: "m1.medium", SystemGB: 20},
		VaultURL:     vaultURL, VaultToken: vaultToken,
		KeycloakURL: s.Keycloak.URL(), KeycloakPassword: kcAdminPassword,
	}
	for _, z := range zones {
		offering.Zones = append(offering.Zones, harness.ClusterZone{
			UUID: z.uuid, Slug: z.slug, Name: "Zone " + strings.TrimPrefix(z.slug, "az-"), AvailabilityZone: z.az,
			ExternalNetworkID: extNetworkID, AuthURL: s.OpenStack.AuthURL(), Password: osAdminPassword,
		})
	}
	return offering
}

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

// order makes an order (its event delivered) and returns its UUID and
// its resource's.
func (s *site) order(req waldursim.CreateOrderRequest) (orderUUID, resourceUUID string) {
	s.t.Helper()
	req.Silent = true
	orderUUID, resourceUUID = s.Order(req)
	s.Deliver(orderUUID)
	return orderUUID, resourceUUID
}

// orderDone makes an order as order does and fails t unless it ends
// done; what names the order in the failure. It returns the resource's
// UUID.
func (s *site) orderDone(t testing.TB, what string, req waldursim.CreateOrderRequest) (resourceUUID string) {
	t.Helper()
	orderUUID, resourceUUID := s.order(req)
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("%s %s: %s", what, o.State, o.ErrorMessage)
	}
	return resourceUUID
}

// createAttributes are a managed order over the zones with workers
// agents per zone and Longhorn.
func createAttributes(name string, workers int) map[string]any {
	var list []any
	for _, z := range zones {
		list = append(list, z.uuid)
	}
	return map[string]any{
		"name": name, "worker_nodes_count": workers, "worker_nodes_flavor_name": "m1.xlarge",
		"worker_nodes_data_volume_size": 102400, "openstack_offering_uuid_list": list,
		"install_longhorn": true, "worker_nodes_longhorn_volume_size": 204800,
	}
}
