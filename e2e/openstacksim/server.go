package openstacksim

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Defaults of Options.
const (
	DefaultRegion        = "RegionOne"
	DefaultAdminUser     = "admin"
	DefaultAdminPassword = "sim-admin-password"
	DefaultAdminProject  = "admin"
	DefaultDomainID      = "default"
	DefaultDomainName    = "Default"
	DefaultBuildPolls    = 2
	DefaultVolumePolls   = 1
	DefaultDeletePolls   = 1
	DefaultTokenTTL      = time.Hour // a token's lifetime, Keystone's default
)

// Flavor is a Nova flavor.
type Flavor struct {
	ID    string
	Name  string
	VCPUs int
	RAM   int // MiB
	Disk  int // GiB
}

// Image is a Glance image.
type Image struct {
	ID      string
	Name    string
	MinDisk int // GiB
	// Private images (Owner set) are seen by their owner project only.
	Owner string
}

// VolumeType is a Cinder volume type.
type VolumeType struct {
	ID   string
	Name string
}

// ExternalNetwork is the provider network routers and floating IPs use,
// owned by the admin project and visible to every project.
type ExternalNetwork struct {
	Name      string
	CIDR      string // e.g. 172.24.4.0/24; a subnet without gateway, every host in its pool
	NetworkID string // default: generated
}

// Options configure a simulator. The zero value serves one region with an
// admin user, one availability zone "nova", three flavors, one image, the
// __DEFAULT__ volume type and an external network "public".
type Options struct {
	Region string
	// AdminUser/AdminPassword authenticate as the cloud admin (role admin
	// on AdminProject), in the default domain.
	AdminUser, AdminPassword, AdminProject string
	// AvailabilityZones are Nova's and Cinder's zones; default ["nova"].
	AvailabilityZones []string
	Flavors           []Flavor
	Images            []Image
	// VolumeTypes; the first is the default type.
	VolumeTypes []VolumeType
	// ExternalNetwork; the zero value is "public" on 172.24.4.0/24.
	ExternalNetwork ExternalNetwork
	// BuildPolls is how many GETs of a server answer BUILD before it
	// boots (0: DefaultBuildPolls; negative: it boots on the first GET).
	BuildPolls int
	// BootAfter, when set, also keeps a server in BUILD until that long
	// after its create (boottime.go).
	BootAfter time.Duration
	// VolumePolls is how many GETs of a volume answer creating before it
	// is available (0: DefaultVolumePolls; negative: available at once).
	VolumePolls int
	// DeletePolls is how many API requests (of any kind) still see a
	// deleted server, deleting, before Nova's cleanup runs (0:
	// DefaultDeletePolls; negative: at once).
	DeletePolls int
	// OnBoot runs once per server when it leaves BUILD, outside every
	// lock: the "VM running its cloud-init". An error puts the server in
	// ERROR with the error as its fault message.
	OnBoot func(ctx context.Context, srv Instance) error
	// Quotas are the per-project defaults by resource name (see Quotas);
	// names not set take Neutron's, Nova's and Cinder's own defaults.
	Quotas Quotas
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the simulator: Keystone, Nova, Neutron, Cinder and Glance on one
// port. All state sits behind one mutex, never held while OnBoot runs.
type Server struct {
	opts Options
	log  *slog.Logger

	mu sync.Mutex
	st *state

	simkit.Base
}

// New builds a simulator; it does not listen (see Start, NewTestServer,
// Handler).
func New(opts Options) (*Server, error) {
	opts.Region = cmp.Or(opts.Region, DefaultRegion)
	opts.AdminUser = cmp.Or(opts.AdminUser, DefaultAdminUser)
	opts.AdminPassword = cmp.Or(opts.AdminPassword, DefaultAdminPassword)
	opts.AdminProject = cmp.Or(opts.AdminProject, DefaultAdminProject)
	if len(opts.AvailabilityZones) == 0 {
		opts.AvailabilityZones = []string{"nova"}
	}
	if len(opts.Flavors) == 0 {
		opts.Flavors = []Flavor{
			{ID: "1", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
			{ID: "2", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
			{ID: "3", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
		}
	}
	if len(opts.Images) == 0 {
		opts.Images = []Image{{Name: "ubuntu-22.04", MinDisk: 10}}
	}
	for i := range opts.Images {
		opts.Images[i].ID = cmp.Or(opts.Images[i].ID, simkit.NewUUID())
	}
	if len(opts.VolumeTypes) == 0 {
		opts.VolumeTypes = []VolumeType{{Name: "__DEFAULT__"}}
	}
	for i := range opts.VolumeTypes {
		opts.VolumeTypes[i].ID = cmp.Or(opts.VolumeTypes[i].ID, simkit.NewUUID())
	}
	ext := &opts.ExternalNetwork
	ext.Name = cmp.Or(ext.Name, "public")
	ext.CIDR = cmp.Or(ext.CIDR, "172.24.4.0/24")
	ext.NetworkID = cmp.Or(ext.NetworkID, simkit.NewUUID())
	if _, err := netip.ParsePrefix(ext.CIDR); err != nil {
		return nil, fmt.Errorf("openstacksim: external network CIDR: %w", err)
	}
	opts.BuildPolls = cmp.Or(opts.BuildPolls, DefaultBuildPolls)
	opts.VolumePolls = cmp.Or(opts.VolumePolls, DefaultVolumePolls)
	opts.DeletePolls = cmp.Or(opts.DeletePolls, DefaultDeletePolls)
	opts.Quotas = opts.Quotas.withDefaults()
	log := simkit.Defaults("openstacksim", &opts.Now, &opts.Logger)
	s := &Server{opts: opts, log: log}
	s.Faults = newFaults()
	st, err := newState(&s.opts, s.now())
	if err != nil {
		return nil, fmt.Errorf("openstacksim: %w", err)
	}
	s.st = st
	s.Init(s.routes(), s.log)
	return s, nil
}

// AuthURL is Keystone's v3 endpoint: gophercloud's IdentityEndpoint, a
// clouds.yaml auth_url.
func (s *Server) AuthURL() string { return s.URL() + "/identity/v3" }

// Options returns the effective options (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// NewTestServer starts a simulator on 127.0.0.1 (an httptest server) closed
// by t.Cleanup.
func NewTestServer(t testing.TB, opts Options) *Server { return simkit.NewTestServer(t, New, opts) }

func (s *Server) now() time.Time { return s.opts.Now().UTC() }
