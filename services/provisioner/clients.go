package provisioner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/vault"
)

// The saga reaches OpenStack, Rancher and Vault through these interfaces:
// the production ones wrap pkg/openstack, rancher.ClusterClient and
// vault.Client; the unit tests use in-memory fakes that record calls.

// OpenStack opens the zones' clients (pkg/openstack).
type OpenStack interface {
	// Connect logs in to the zone with its cloud, in the credentials'
	// project.
	Connect(ctx context.Context, az ranchercluster.AZ) (Zone, error)
	// Scoped is admin's credentials acting in project, which
	// EnsureProject made.
	Scoped(ctx context.Context, admin Zone, project openstack.Project) (Zone, error)
	// Forget drops what is kept for a project that was deleted.
	Forget(projectID string)
}

// Zone is one zone's OpenStack in one project: *openstack.Client. Every
// Ensure adopts the owner's object of the same name (a retried step makes
// nothing twice) and refuses anyone else's; every Delete is idempotent and
// deletes only the owner's.
type Zone interface {
	ProjectID() string
	Flavors(ctx context.Context) ([]ranchercluster.Flavor, error)
	VolumeTypes(ctx context.Context) ([]ranchercluster.VolumeType, error)
	ImageID(ctx context.Context, name string) (string, error)
	UsableSubnet(ctx context.Context, id string) (openstack.Subnet, bool, error)
	SecurityGroups(ctx context.Context) ([]openstack.SecurityGroup, error)
	SubnetReaches(ctx context.Context, subnetID, externalNetworkID string) (bool, error)

	EnsureProject(ctx context.Context, owner openstack.Owner, name, description string) (openstack.Project, bool, error)
	DeleteProject(ctx context.Context, owner openstack.Owner, projectID string) error
	EnsureUser(ctx context.Context, owner openstack.Owner, name string, password config.Secret, projectID string) (openstack.User, bool, error)
	DeleteUser(ctx context.Context, owner openstack.Owner, userID string) error
	SetQuota(ctx context.Context, projectID string, q ranchercluster.Quota, instances, volumes int) error

	EnsureNetwork(ctx context.Context, owner openstack.Owner, n ranchercluster.NetworkPlan) (openstack.Network, bool, error)
	DeleteNetwork(ctx context.Context, owner openstack.Owner, networkID string) error
	EnsureSubnet(ctx context.Context, owner openstack.Owner, networkID string, s ranchercluster.SubnetPlan) (openstack.Subnet, bool, error)
	DeleteSubnet(ctx context.Context, owner openstack.Owner, subnetID string) error
	EnsureRouter(ctx context.Context, owner openstack.Owner, r ranchercluster.RouterPlan, subnetID string) (openstack.Router, bool, error)
	DeleteRouter(ctx context.Context, owner openstack.Owner, routerID string) error
	EnsureSecurityGroup(ctx context.Context, owner openstack.Owner, g ranchercluster.SecurityGroupPlan) (openstack.SecurityGroup, bool, error)
	DeleteSecurityGroup(ctx context.Context, owner openstack.Owner, groupID string) error
	EnsurePort(ctx context.Context, owner openstack.Owner, p openstack.PortSpec) (openstack.Port, bool, error)
	DeletePort(ctx context.Context, owner openstack.Owner, portID string) error
	EnsureFloatingIP(ctx context.Context, owner openstack.Owner, externalNetworkID, portID string) (openstack.FloatingIP, bool, error)
	DeleteFloatingIP(ctx context.Context, owner openstack.Owner, fipID string) error

	EnsureVolume(ctx context.Context, owner openstack.Owner, v openstack.VolumeSpec) (openstack.Volume, bool, error)
	DeleteVolume(ctx context.Context, owner openstack.Owner, volumeID string) error
	EnsureServer(ctx context.Context, owner openstack.Owner, s openstack.ServerSpec) (openstack.Server, bool, error)
	WaitServerActive(ctx context.Context, serverID string) (openstack.Server, error)
	DeleteServer(ctx context.Context, owner openstack.Owner, serverID string) error
	// OwnedServers lists owner's servers in the client's project, by id,
	// in one call (the cluster pass reads each project once).
	OwnedServers(ctx context.Context, owner openstack.Owner) (map[string]openstack.Server, error)
	// OwnedSecurityGroups (with their rules) and OwnedFloatingIPs list
	// owner's in the client's project, by id, one call each: the cluster
	// pass finds what was deleted by hand.
	OwnedSecurityGroups(ctx context.Context, owner openstack.Owner) (map[string]openstack.SecurityGroup, error)
	OwnedFloatingIPs(ctx context.Context, owner openstack.Owner) (map[string]openstack.FloatingIP, error)

	// EmptyProject deletes everything left in the client's project (an
	// owner's), Neutron's default security group included.
	EmptyProject(ctx context.Context, owner openstack.Owner, projectID string) (openstack.Emptied, error)
}

var _ Zone = (*openstack.Client)(nil)

// clouds is OpenStack on pkg/openstack. It keeps each zone's clients for
// the process's life (a Client renews its token itself), so the steps of
// a create log in once per zone and project, not once per step.
type clouds struct {
	settings  *ranchercluster.Settings
	configure func(*openstack.Config)

	mu     sync.Mutex
	admins map[string]*openstack.Client // by zone UUID
	scoped map[string]*openstack.Client // by zone UUID and project id
}

// NewOpenStack reaches the offering's zones with their clouds; configure,
// when set, adjusts each zone's Config (logger, timeouts).
func NewOpenStack(s *ranchercluster.Settings, configure func(*openstack.Config)) OpenStack {
	return &clouds{settings: s, configure: configure, admins: map[string]*openstack.Client{}, scoped: map[string]*openstack.Client{}}
}

func (c *clouds) Connect(ctx context.Context, az ranchercluster.AZ) (Zone, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.admins[az.UUID]; ok {
		return cl, nil
	}
	cfg := ranchercluster.OpenStackConfig(c.settings, az)
	if c.configure != nil {
		c.configure(&cfg)
	}
	cl, err := openstack.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c.admins[az.UUID] = cl
	return cl, nil
}

func (c *clouds) Scoped(ctx context.Context, admin Zone, p openstack.Project) (Zone, error) {
	cl, ok := admin.(*openstack.Client)
	if !ok {
		return nil, fmt.Errorf("openstack: cannot scope a %T", admin)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A project id is unique within its cloud; the admin client's
	// address keys the cloud.
	key := fmt.Sprintf("%p/%s", cl, p.ID)
	if s, ok := c.scoped[key]; ok {
		return s, nil
	}
	s, err := cl.Scoped(ctx, p)
	if err != nil {
		return nil, err
	}
	c.scoped[key] = s
	return s, nil
}

func (c *clouds) Forget(projectID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.scoped {
		if strings.HasSuffix(k, "/"+projectID) {
			delete(c.scoped, k)
		}
	}
}

// Rancher is what the saga asks of Rancher (rancher.ClusterClient).
type Rancher interface {
	CreateProvisioningCluster(ctx context.Context, spec rancher.ClusterSpec) (rancher.ProvisioningCluster, error)
	WaitV3ClusterID(ctx context.Context, name string, timeout time.Duration) (string, error)
	CreateRegistrationToken(ctx context.Context, ref rancher.ClusterRef) (rancher.RegistrationToken, error)
	GetRegistrationToken(ctx context.Context, clusterID string) (rancher.RegistrationToken, bool, error)
	ListClusterNodes(ctx context.Context, clusterID string) ([]rancher.Node, error)
	WaitNodesActive(ctx context.Context, clusterID string, hostnames []string, timeout time.Duration, progress func(rancher.NodeProgress)) error
	GetCluster(ctx context.Context, id string) (rancher.Cluster, error)
	WaitClusterActive(ctx context.Context, id string, timeout time.Duration, progress func(rancher.Cluster)) (rancher.Cluster, bool, error)
	DrainNode(ctx context.Context, ref rancher.ClusterRef, nodeID string, in rancher.DrainInput) error
	WaitDrained(ctx context.Context, nodeID string, timeout time.Duration) error
	DeleteNode(ctx context.Context, ref rancher.ClusterRef, nodeID string) error
	DeleteCluster(ctx context.Context, ref rancher.ClusterRef) error
	RenameCluster(ctx context.Context, ref rancher.ClusterRef, name string) error
	EnsureClusterGroupBinding(ctx context.Context, ref rancher.ClusterRef, role, group string) (bool, error)
	DeleteClusterGroupBinding(ctx context.Context, ref rancher.ClusterRef, role, group string) error
	GenerateKubeconfig(ctx context.Context, ref rancher.ClusterRef) (config.Secret, error)
}

var _ Rancher = (*rancher.ClusterClient)(nil)

// Vault is what the saga asks of Vault (vault.Client).
type Vault interface {
	Address() string
	Ensure(ctx context.Context, cl vault.Cluster, registrationToken string) error
	RoleID(ctx context.Context, cl vault.Cluster) (string, error)
	NewSecretID(ctx context.Context, cl vault.Cluster, node string) (string, error)
	Cleanup(ctx context.Context, cl vault.Cluster) error
}

var _ Vault = (*vault.Client)(nil)

// Members applies a resource's Waldur team to its access now; the
// production one sends the membership service's sync-resource.
type Members interface {
	Sync(ctx context.Context, key, offeringHex, resourceUUID string) error
}

// Groups makes and removes Keycloak groups; the production one sends
// keycloak-sync's ensure-groups and delete-groups commands (keycloak-sync
// is the only writer to Keycloak).
type Groups interface {
	// Ensure makes parent, then each child under it, and reports which it
	// created (names).
	Ensure(ctx context.Context, key, offeringHex string, parent string, children []string) (created []string, err error)
	// Delete removes the named groups, children first; absent ones are
	// success.
	Delete(ctx context.Context, key, offeringHex string, parent string, children []string) error
}
