package ranchercluster

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"

	"github.com/sitebus/sitebus/pkg/backend"
)

// PlanVersion is the version of Plan's JSON; a saga that finds another in
// its stored state must not guess what it means.
const PlanVersion = 1

// Plan is everything one cluster order makes, computed before anything is
// made: the saga persists it, creates what it lists in order and, on
// failure or terminate, removes what it lists in reverse. It holds no
// secret (no credentials, no tokens) and is deterministic: the same
// settings, attributes, resource and catalog give the same JSON.
type Plan struct {
	Version      int    `json:"version"`
	Mode         string `json:"mode"`
	ResourceUUID string `json:"resource_uuid"`
	// ClusterUUIDHex names the Vault, Keycloak and ArgoCD objects; it is
	// the resource's UUID, Mastermind's cluster UUID.
	ClusterUUIDHex string      `json:"cluster_uuid_hex"`
	Cluster        ClusterSpec `json:"cluster"`
	// Tenants are the managed mode's per-zone OpenStack projects (empty in
	// self-managed mode), in the order's zone order.
	Tenants []TenantPlan `json:"tenants,omitempty"`
	// Nodes are the cluster's VMs in creation order: per zone its servers,
	// then its agents (Mastermind creates servers before agents).
	Nodes    []NodePlan    `json:"nodes"`
	Keycloak *KeycloakPlan `json:"keycloak,omitempty"`
	// Vault says whether nodes get their registration token through Vault
	// (the objects' names are pkg/vault's).
	Vault bool `json:"vault"`
	// ArgoCDSecret is the ArgoCD cluster Secret's name, "" without ArgoCD.
	ArgoCDSecret    string `json:"argocd_secret,omitempty"`
	InstallLonghorn bool   `json:"install_longhorn"`
	// WorkersPerZone is the managed order's worker_nodes_count.
	WorkersPerZone int `json:"workers_per_zone,omitempty"`
}

// ClusterSpec are the inputs of Rancher's v1 provisioning cluster (RKE2
// custom cluster, reference A.3).
type ClusterSpec struct {
	Name              string `json:"name"`
	Namespace         string `json:"namespace"`
	KubernetesVersion string `json:"kubernetes_version"`
	// DisplayName is the order's name, which update orders may change.
	DisplayName string `json:"display_name"`
	Description string `json:"description,omitempty"`
	// PrivateRegistry is the registry host ("" for none); its credentials
	// come from the settings when the saga makes the registry secret.
	PrivateRegistry string          `json:"private_registry,omitempty"`
	CNI             string          `json:"cni"`
	DataDirectories DataDirectories `json:"data_directories"`
}

// DataDirectories put every RKE2 directory on the data volume.
type DataDirectories struct {
	SystemAgent  string `json:"system_agent"`
	Provisioning string `json:"provisioning"`
	K8sDistro    string `json:"k8s_distro"`
}

// TenantPlan is one zone's OpenStack project and what is made in it.
type TenantPlan struct {
	OfferingUUID     string `json:"offering_uuid"`
	OfferingSlug     string `json:"offering_slug"`
	AvailabilityZone string `json:"availability_zone,omitempty"`
	Region           string `json:"region,omitempty"`
	// Name is the Keystone project; UserName its user.
	Name           string              `json:"name"`
	Description    string              `json:"description"`
	UserName       string              `json:"user_name"`
	Quota          Quota               `json:"quota"`
	Network        NetworkPlan         `json:"network"`
	Router         *RouterPlan         `json:"router,omitempty"`
	SecurityGroups []SecurityGroupPlan `json:"security_groups"`
	LoadBalancer   NodePlan            `json:"load_balancer"`
}

// NodePlan is one VM: a cluster node or a zone's load balancer.
type NodePlan struct {
	Name string `json:"name"`
	// Number is n of <cluster>-rancher-node-<n> (0 for a load balancer).
	Number       int    `json:"number,omitempty"`
	Role         string `json:"role"`
	OfferingUUID string `json:"offering_uuid"`
	// Tenant is the Keystone project (managed mode); SubnetID the order's
	// subnet (self-managed mode), else the tenant's subnet.
	Tenant   string `json:"tenant,omitempty"`
	SubnetID string `json:"subnet_id,omitempty"`
	// FixedIP is the load balancer's address.
	FixedIP        string       `json:"fixed_ip,omitempty"`
	Flavor         FlavorRef    `json:"flavor"`
	Image          string       `json:"image"`
	SystemVolume   VolumePlan   `json:"system_volume"`
	DataVolumes    []VolumePlan `json:"data_volumes,omitempty"`
	SecurityGroups []string     `json:"security_groups"`
	FloatingIP     bool         `json:"floating_ip"`
	SSHPublicKey   string       `json:"ssh_public_key,omitempty"`
}

// FlavorRef is a flavor as the catalog listed it when the plan was made.
type FlavorRef struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	VCPUs int    `json:"vcpus"`
	RAMMB int    `json:"ram_mb"`
}

// KeycloakPlan are the cluster's Keycloak groups and the cluster role
// template each child group is bound with.
type KeycloakPlan struct {
	ParentGroup string            `json:"parent_group"`
	RoleGroups  []KeycloakBinding `json:"role_groups"`
}

// KeycloakBinding is one child group and its role template.
type KeycloakBinding struct {
	Group        string `json:"group"`
	RoleTemplate string `json:"role_template"`
}

// Marshal returns the plan's JSON, indented, as the saga stores it.
func (p *Plan) Marshal() ([]byte, error) { return json.MarshalIndent(p, "", "  ") }

// UnmarshalPlan reads a stored plan, refusing another version.
func UnmarshalPlan(b []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("rancher-cluster plan: %w", err)
	}
	if p.Version != PlanVersion {
		return nil, fmt.Errorf("rancher-cluster plan: version %d, this sitebus reads %d", p.Version, PlanVersion)
	}
	return &p, nil
}

// Agents returns the plan's agent nodes of one zone ("" for all).
func (p *Plan) Agents(offeringUUID string) []NodePlan {
	var out []NodePlan
	for _, n := range p.Nodes {
		if n.Role == RoleAgent && (offeringUUID == "" || n.OfferingUUID == offeringUUID) {
			out = append(out, n)
		}
	}
	return out
}

// NodeNames are the names of every node of the plan, servers and agents,
// in plan order: a new node's number must be free among all of them.
func (p *Plan) NodeNames() []string {
	out := make([]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// Servers returns the plan's server nodes.
func (p *Plan) Servers() []NodePlan {
	var out []NodePlan
	for _, n := range p.Nodes {
		if n.Role == RoleServer {
			out = append(out, n)
		}
	}
	return out
}

// securityGroups are the rules Mastermind's seed documents and its code
// leaves out: SSH and the Kubernetes API on k8s_admin (from adminCIDRs),
// HTTP and HTTPS on k8s_public.
func securityGroups(adminCIDRs []string) []SecurityGroupPlan {
	tcp := func(port int, from string) RulePlan {
		return RulePlan{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: port, PortRangeMax: port, RemoteIPPrefix: from}
	}
	admin := SecurityGroupPlan{Name: SecurityGroupAdmin, Description: "SSH and Kubernetes API of the cluster's load balancer"}
	for _, c := range adminCIDRs {
		admin.Rules = append(admin.Rules, tcp(22, c), tcp(6443, c))
	}
	return []SecurityGroupPlan{admin, {
		Name: SecurityGroupPublic, Description: "HTTP and HTTPS ingress of the cluster",
		Rules: []RulePlan{tcp(80, "0.0.0.0/0"), tcp(443, "0.0.0.0/0")},
	}}
}

// subnetPlan lays out a zone's subnet: gateway .1, load balancer .10, pool
// .11-.200 (offsets from the network address, as Mastermind adds them).
func subnetPlan(tenant string, az AZ) (SubnetPlan, string, error) {
	_, n, err := net.ParseCIDR(az.SubnetCIDR)
	if err != nil || n.IP.To4() == nil {
		return SubnetPlan{}, "", fmt.Errorf("subnet_cidr %q: not an IPv4 CIDR", az.SubnetCIDR)
	}
	at := func(off int) string {
		ip := slices.Clone(n.IP.To4())
		v := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
		v += uint32(off)
		return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).String()
	}
	return SubnetPlan{
		Name:            SubnetName(tenant),
		CIDR:            n.String(),
		GatewayIP:       at(1),
		AllocationPools: []AllocationPool{{Start: at(PoolStartOctet), End: at(PoolEndOctet)}},
		DNSNameservers:  slices.Clone(az.DNSNameservers),
		IPVersion:       4,
		EnableDHCP:      true,
	}, at(LBHostOctet), nil
}

// clusterSpec is the v1 cluster's inputs.
func clusterSpec(s *Settings, name, display, description string) ClusterSpec {
	return ClusterSpec{
		Name: name, Namespace: RancherNamespace, KubernetesVersion: s.K8sVersion,
		DisplayName: display, Description: description,
		PrivateRegistry: s.PrivateRegistryURL, CNI: "cilium",
		DataDirectories: DataDirectories{
			SystemAgent:  RKE2StorageMount + "/agent",
			Provisioning: RKE2StorageMount + "/provisioning",
			K8sDistro:    RKE2StorageMount + "/rke2",
		},
	}
}

// common fills what both modes' plans share.
func common(s *Settings, r backend.Resource, mode string) *Plan {
	h := hexUUID(r.UUID)
	p := &Plan{Version: PlanVersion, Mode: mode, ResourceUUID: r.UUID, ClusterUUIDHex: h, Vault: s.Vault.Enabled()}
	if s.KeycloakEnabled {
		kp := &KeycloakPlan{ParentGroup: KeycloakParentGroup(h), RoleGroups: []KeycloakBinding{}}
		for _, role := range s.ClusterRoles {
			kp.RoleGroups = append(kp.RoleGroups, KeycloakBinding{Group: KeycloakRoleGroup(h, role), RoleTemplate: role})
		}
		p.Keycloak = kp
	}
	if s.ArgoCDKubeconfig != "" {
		p.ArgoCDSecret = ArgoCDSecretName(h)
	}
	return p
}

// checkResource refuses a resource whose UUID or slugs cannot name what
// the plan makes.
func checkResource(r backend.Resource, managed bool) error {
	var errs []error
	if hexUUID(r.UUID) == "" {
		errs = append(errs, &AttributeError{Msg: fmt.Sprintf("the resource UUID %q is not a UUID", r.UUID)})
	}
	if msg := checkResourceSlug(r.Slug); msg != "" {
		errs = append(errs, &AttributeError{Msg: msg})
	}
	if managed {
		if msg := checkSlug("the project slug", r.ProjectSlug); msg != "" {
			errs = append(errs, &AttributeError{Msg: msg})
		}
	}
	return joinAttr(errs)
}

// gbOf converts an order's MB to the GB a Cinder volume is made with,
// rounding up as Waldur does.
func gbOf(mb int) int { return (mb + 1023) / 1024 }
