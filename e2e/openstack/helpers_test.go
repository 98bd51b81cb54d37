// Package openstack_test drives pkg/openstack against the OpenStack
// simulator: a rancher-cluster plan's zone built object by object, re-run,
// failed and torn down, as the cluster-provisioner's saga does.
package openstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/openstacksim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// Fixtures: one cluster resource, its zones.
const (
	resourceUUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	imageName    = "ubuntu-22.04"
)

var zoneUUIDs = []string{
	"11111111-1111-4111-8111-111111111111",
	"22222222-2222-4222-8222-222222222222",
	"33333333-3333-4333-8333-333333333333",
}

// ensure is an Ensure call's result: ensured(c.EnsureX(...)).of(t) is
// what it made or found, and fails t on its error (whether it created the
// object is left out; tests that check it keep all three values).
type ensure[T any] struct {
	v   T
	err error
}

func ensured[T any](v T, _ bool, err error) ensure[T] { return ensure[T]{v, err} }

func (e ensure[T]) of(t *testing.T) T {
	t.Helper()
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.v
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newSim starts a simulator with three zones; servers boot on their second
// GET, volumes are available on their first.
func newSim(t *testing.T, opts openstacksim.Options) *openstacksim.Server {
	t.Helper()
	if opts.AvailabilityZones == nil {
		opts.AvailabilityZones = []string{"az-a", "az-b", "az-c"}
	}
	if opts.BuildPolls == 0 {
		opts.BuildPolls = 1
	}
	if opts.VolumePolls == 0 {
		opts.VolumePolls = -1
	}
	opts.Logger = quiet()
	return openstacksim.NewTestServer(t, opts)
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(nopWriter{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// adminCloud is the simulator's admin, as an inline cloud.
func adminCloud(sim *openstacksim.Server) map[string]any {
	o := sim.Options()
	return map[string]any{
		"auth": map[string]any{
			"auth_url": sim.AuthURL(), "username": o.AdminUser, "password": o.AdminPassword,
			"user_domain_name": "Default", "project_name": o.AdminProject, "project_domain_name": "Default",
		},
		"region_name": openstacksim.DefaultRegion,
	}
}

// settings is a managed offering on the simulator with n zones (az-a...),
// every one logging in as the admin.
func settings(t *testing.T, sim *openstacksim.Server, n int) *ranchercluster.Settings {
	t.Helper()
	var zones []any
	for i := range n {
		zones = append(zones, map[string]any{
			"uuid": zoneUUIDs[i], "slug": fmt.Sprintf("az-%c", 'a'+i), "availability_zone": fmt.Sprintf("az-%c", 'a'+i),
			"external_network_id": sim.ExternalNetworkID(), "dns_nameservers": []any{"1.1.1.1"},
			"storage_mode": "fixed", "cloud": adminCloud(sim),
		})
	}
	s, err := ranchercluster.DecodeSettings(map[string]any{
		"backend_url": "https://rancher.example.com", "username": "token-abc", "password": "s3cret-key",
		"base_image_name": imageName, "deployment_mode": "managed",
		"managed_rancher_server_flavor_name":                  "m1.medium",
		"managed_rancher_server_system_volume_size_gb":        10,
		"managed_rancher_server_data_volume_size_gb":          20,
		"managed_rancher_worker_system_volume_size_gb":        10,
		"managed_rancher_load_balancer_flavor_name":           "m1.small",
		"managed_rancher_load_balancer_system_volume_size_gb": 10,
		"openstack_offering_uuid_list":                        zones,
	})
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	return &s
}

// plan is a managed order's plan over the settings' zones, one worker per
// zone, read from the simulator's catalog through ranchercluster.OpenStackCatalog.
func plan(t *testing.T, s *ranchercluster.Settings) *ranchercluster.Plan {
	t.Helper()
	var uuids []string
	for _, az := range s.OpenStackOfferings {
		uuids = append(uuids, az.UUID)
	}
	raw, _ := json.Marshal(map[string]any{
		"name": "production-cluster", "worker_nodes_count": 1, "worker_nodes_flavor_name": "m1.small",
		"worker_nodes_data_volume_size": 10240, "openstack_offering_uuid_list": uuids,
	})
	a, err := ranchercluster.DecodeManagedAttributes(raw)
	if err != nil {
		t.Fatalf("attributes: %v", err)
	}
	cat := &ranchercluster.OpenStackCatalog{Settings: s, Configure: fast}
	p, err := ranchercluster.PlanManaged(ctxT(t), s, a, backend.Resource{UUID: resourceUUID, Slug: "production-cluster",
		ProjectSlug: "physics", Name: "production-cluster"}, cat)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

// fast makes the client poll quickly and log quietly.
func fast(c *openstack.Config) {
	c.PollInterval = 5 * time.Millisecond
	c.Logger = quiet()
}

// connect logs in to a zone of the settings.
func connect(t *testing.T, s *ranchercluster.Settings, az ranchercluster.AZ, configure ...func(*openstack.Config)) *openstack.Client {
	t.Helper()
	cfg := ranchercluster.OpenStackConfig(s, az)
	fast(&cfg)
	for _, f := range configure {
		f(&cfg)
	}
	c, err := openstack.Connect(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

// record is one object an Ensure returned, for teardown in reverse.
type record struct {
	kind, id string
	scoped   bool // deleted through the tenant's client
}

// built is what buildZone made or found.
type built struct {
	project  openstack.Project
	user     openstack.User
	network  openstack.Network
	subnet   openstack.Subnet
	router   openstack.Router
	groups   map[string]openstack.SecurityGroup
	ports    map[string]openstack.Port
	servers  map[string]openstack.Server
	fips     map[string]openstack.FloatingIP
	volumes  map[string]openstack.Volume
	records  []record
	created  int // Ensure calls that answered created
	scoped   *openstack.Client
	admin    *openstack.Client
	vmsCount int
}

// buildZone runs every Ensure of one zone of the plan, in the saga's
// order, and waits for its servers; it stops at the first error.
func buildZone(ctx context.Context, admin *openstack.Client, p *ranchercluster.Plan, zone int) (*built, error) {
	owner := openstack.Owner(p.ResourceUUID)
	tp := p.Tenants[zone]
	b := &built{admin: admin, groups: map[string]openstack.SecurityGroup{}, ports: map[string]openstack.Port{},
		servers: map[string]openstack.Server{}, fips: map[string]openstack.FloatingIP{}, volumes: map[string]openstack.Volume{}}
	note := func(kind, id string, created, scoped bool) {
		if created {
			b.created++
		}
		// Whatever an Ensure returns is the owner's: it is recorded, created
		// or found, and the record is idempotent.
		if !slices.ContainsFunc(b.records, func(r record) bool { return r.kind == kind && r.id == id }) {
			b.records = append(b.records, record{kind, id, scoped})
		}
	}
	var err error
	var created bool
	if b.project, created, err = admin.EnsureProject(ctx, owner, tp.Name, tp.Description); err != nil {
		return b, err
	}
	note("project", b.project.ID, created, false)
	vms := append([]ranchercluster.NodePlan{tp.LoadBalancer}, nodesOf(p, tp.OfferingUUID)...)
	b.vmsCount = len(vms)
	volumes := 0
	for _, vm := range vms {
		volumes += 1 + len(vm.DataVolumes)
	}
	if err := admin.SetQuota(ctx, b.project.ID, tp.Quota, len(vms), volumes); err != nil {
		return b, err
	}
	if b.user, created, err = admin.EnsureUser(ctx, owner, tp.UserName, config.Secret("pw-"+tp.UserName), b.project.ID); err != nil {
		return b, err
	}
	note("user", b.user.ID, created, false)
	c, err := admin.Scoped(ctx, b.project)
	if err != nil {
		return b, err
	}
	b.scoped = c
	if b.network, created, err = c.EnsureNetwork(ctx, owner, tp.Network); err != nil {
		return b, err
	}
	note("network", b.network.ID, created, true)
	if b.subnet, created, err = c.EnsureSubnet(ctx, owner, b.network.ID, tp.Network.Subnet); err != nil {
		return b, err
	}
	note("subnet", b.subnet.ID, created, true)
	if tp.Router != nil {
		if b.router, created, err = c.EnsureRouter(ctx, owner, *tp.Router, b.subnet.ID); err != nil {
			return b, err
		}
		note("router", b.router.ID, created, true)
	}
	for _, g := range tp.SecurityGroups {
		sg, created, err := c.EnsureSecurityGroup(ctx, owner, g)
		if err != nil {
			return b, err
		}
		b.groups[g.Name] = sg
		note("security group", sg.ID, created, true)
	}
	image, err := c.ImageID(ctx, tp.LoadBalancer.Image)
	if err != nil {
		return b, err
	}
	for _, vm := range vms {
		port, created, err := c.EnsurePort(ctx, owner, openstack.PortSpec{Name: vm.Name, NetworkID: b.network.ID,
			SubnetID: b.subnet.ID, FixedIP: vm.FixedIP, SecurityGroups: vm.SecurityGroups})
		if err != nil {
			return b, err
		}
		b.ports[vm.Name] = port
		note("port", port.ID, created, true)
		var vols []string
		for i, v := range append([]ranchercluster.VolumePlan{vm.SystemVolume}, vm.DataVolumes...) {
			spec := openstack.VolumeSpec{VolumePlan: v, AvailabilityZone: tp.AvailabilityZone}
			if i == 0 {
				spec.ImageID = image
			}
			vol, created, err := c.EnsureVolume(ctx, owner, spec)
			if err != nil {
				return b, err
			}
			b.volumes[v.Name] = vol
			note("volume", vol.ID, created, true)
			vols = append(vols, vol.ID)
		}
		srv, created, err := c.EnsureServer(ctx, owner, openstack.ServerSpec{Name: vm.Name, Role: vm.Role, FlavorID: vm.Flavor.ID,
			AvailabilityZone: tp.AvailabilityZone, VolumeIDs: vols, PortIDs: []string{port.ID},
			UserData: []byte("#cloud-config\nhostname: " + vm.Name + "\n")})
		if err != nil {
			return b, err
		}
		b.servers[vm.Name] = srv
		note("server", srv.ID, created, true)
		if vm.FloatingIP {
			fip, created, err := c.EnsureFloatingIP(ctx, owner, tp.Router.ExternalNetworkID, port.ID)
			if err != nil {
				return b, err
			}
			b.fips[vm.Name] = fip
			note("floating IP", fip.ID, created, true)
		}
	}
	for _, vm := range vms {
		srv, err := c.WaitServerActive(ctx, b.servers[vm.Name].ID)
		if err != nil {
			return b, err
		}
		b.servers[vm.Name] = srv
	}
	return b, nil
}

func nodesOf(p *ranchercluster.Plan, offering string) []ranchercluster.NodePlan {
	var out []ranchercluster.NodePlan
	for _, n := range p.Nodes {
		if n.OfferingUUID == offering {
			out = append(out, n)
		}
	}
	return out
}

// teardown deletes what b recorded, in reverse, as a saga compensates.
func teardown(ctx context.Context, b *built, owner openstack.Owner) error {
	if err := teardownOf(ctx, b, owner, true); err != nil {
		return err
	}
	return teardownOf(ctx, b, owner, false)
}

// deleters name, for each kind teardown records, the client call that
// deletes it.
var deleters = map[string]func(*openstack.Client, context.Context, openstack.Owner, string) error{
	"project": (*openstack.Client).DeleteProject, "user": (*openstack.Client).DeleteUser,
	"network": (*openstack.Client).DeleteNetwork, "subnet": (*openstack.Client).DeleteSubnet,
	"router": (*openstack.Client).DeleteRouter, "security group": (*openstack.Client).DeleteSecurityGroup,
	"port": (*openstack.Client).DeletePort, "volume": (*openstack.Client).DeleteVolume,
	"server": (*openstack.Client).DeleteServer, "floating IP": (*openstack.Client).DeleteFloatingIP,
}

// teardownOf deletes, in reverse, what b recorded in the tenant (scoped)
// or the identity objects (not scoped).
func teardownOf(ctx context.Context, b *built, owner openstack.Owner, scoped bool) error {
	for i := len(b.records) - 1; i >= 0; i-- {
		r := b.records[i]
		if r.scoped != scoped {
			continue
		}
		c := b.admin
		if r.scoped {
			c = b.scoped
		}
		del, ok := deleters[r.kind]
		if !ok {
			return fmt.Errorf("unknown record %s", r.kind)
		}
		err := del(c, ctx, owner, r.id)
		if err != nil {
			return fmt.Errorf("delete %s %s: %w", r.kind, r.id, err)
		}
	}
	return nil
}

// writes are the calls that change something, leaving out logins (POST
// auth/tokens), role assignments and quota sets (idempotent PUTs).
func writes(sim *openstacksim.Server) []string {
	var out []string
	for _, c := range sim.Calls() {
		switch {
		case c.Method == "GET" || c.Method == "HEAD":
		case c.Method == "POST" && strings.HasSuffix(c.Path, "/auth/tokens"):
		case c.Method == "PUT" && (strings.Contains(c.Path, "/roles/") || strings.Contains(c.Path, "/os-quota-sets/")):
		default:
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

// tenantOnSim is a fresh simulator with a project sitebus made for the
// fixture's resource and a client scoped to it: where the Ensure and
// Delete tests start.
func tenantOnSim(t *testing.T, name string, opts openstacksim.Options, configure ...func(*openstack.Config)) (context.Context, *openstacksim.Server, *openstack.Client, openstack.Project) {
	t.Helper()
	sim := newSim(t, opts)
	c, p := tenantClient(t, sim, name, configure...)
	return ctxT(t), sim, c, p
}

// tenantClient makes a project for the fixture's owner and returns the
// client acting in it.
func tenantClient(t *testing.T, sim *openstacksim.Server, name string, configure ...func(*openstack.Config)) (*openstack.Client, openstack.Project) {
	t.Helper()
	s := settings(t, sim, 1)
	admin := connect(t, s, s.OpenStackOfferings[0], configure...)
	p, c := scopedProject(t, ctxT(t), admin, openstack.Owner(resourceUUID), name, "")
	return c, p
}

// scopedProject ensures the owner's project of that name with the admin
// client and returns it with a client scoped to it.
func scopedProject(t *testing.T, ctx context.Context, admin *openstack.Client, owner openstack.Owner, name, description string) (openstack.Project, *openstack.Client) {
	t.Helper()
	p, _, err := admin.EnsureProject(ctx, owner, name, description)
	if err != nil {
		t.Fatal(err)
	}
	c, err := admin.Scoped(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// planOnSim is the usual opening of a zone test: a fresh simulator with n
// availability zones offered and the plan of a cluster across them.
// oneZoneBuilt builds the only zone of a one-zone plan on a fresh
// simulator, every Ensure in the saga's order, and fails the test if one
// of them fails: the start of the tests that look at a finished zone.
func oneZoneBuilt(t *testing.T) (context.Context, *openstacksim.Server, *ranchercluster.Plan, *built) {
	t.Helper()
	sim, s, p := planOnSim(t, 1)
	ctx := ctxT(t)
	b, err := buildZone(ctx, connect(t, s, s.OpenStackOfferings[0]), p, 0)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return ctx, sim, p, b
}

func planOnSim(t *testing.T, n int) (*openstacksim.Server, *ranchercluster.Settings, *ranchercluster.Plan) {
	t.Helper()
	sim := newSim(t, openstacksim.Options{})
	s := settings(t, sim, n)
	return sim, s, plan(t, s)
}

// assertNothingLeft fails t if the simulator still holds any object.
func assertNothingLeft(t *testing.T, sim *openstacksim.Server) {
	t.Helper()
	if inv := sim.Inventory(""); !inv.Empty() {
		t.Fatalf("left behind: %+v", inv)
	}
}
