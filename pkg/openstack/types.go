package openstack

import (
	"strings"
)

// Owner is the sitebus resource (the Waldur resource UUID) objects are
// made for; only its objects are ever deleted.
type Owner string

// MarkPrefix starts every ownership mark.
const MarkPrefix = "managed by sitebus for "

// Metadata keys sitebus sets on Nova servers and Cinder volumes.
const (
	// MetadataOwner holds the Owner.
	MetadataOwner = "sitebus_resource"
	// MetadataRole holds the node's role (ranchercluster's RoleServer,
	// RoleAgent, or RoleLoadBalancer).
	MetadataRole = "sitebus_role"
)

// RoleLoadBalancer is the MetadataRole of a zone's load balancer, which is
// no cluster node: Usage does not count it.
const RoleLoadBalancer = "load-balancer"

// Mark is the text an object's description carries: "managed by sitebus
// for <uuid>".
func (o Owner) Mark() string { return MarkPrefix + string(o) }

// Marks reports whether description carries o's mark.
func (o Owner) Marks(description string) bool {
	return o != "" && strings.Contains(description, o.Mark())
}

// describe is the description of an object made for o: its own text, then
// the mark.
func (o Owner) describe(text string) string {
	if text == "" {
		return o.Mark()
	}
	return text + " (" + o.Mark() + ")"
}

// Project is a Keystone project.
type Project struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DomainID    string `json:"domain_id"`
	Description string `json:"description"`
}

// User is a Keystone user.
type User struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	DomainID         string `json:"domain_id"`
	DefaultProjectID string `json:"default_project_id"`
}

// Network is a Neutron network.
type Network struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ProjectID string `json:"project_id"`
}

// Subnet is a Neutron subnet.
type Subnet struct {
	ID              string           `json:"id"`
	Name            string           `json:"name"`
	ProjectID       string           `json:"project_id"`
	NetworkID       string           `json:"network_id"`
	CIDR            string           `json:"cidr"`
	GatewayIP       string           `json:"gateway_ip"`
	AllocationPools []AllocationPool `json:"allocation_pools"`
	DNSNameservers  []string         `json:"dns_nameservers,omitempty"`
}

// Router is a Neutron router: its gateway network and the subnets it has
// an interface on.
type Router struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	ProjectID         string   `json:"project_id"`
	ExternalNetworkID string   `json:"external_network_id,omitempty"`
	SubnetIDs         []string `json:"subnet_ids,omitempty"`
}

// SecurityGroup is a Neutron security group and its rules.
type SecurityGroup struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ProjectID string `json:"project_id"`
	Rules     []Rule `json:"rules"`
}

// Rule is a security group rule.
type Rule struct {
	ID string `json:"id"`
	RulePlan
}

// FixedIP is one address of a port.
type FixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

// Port is a Neutron port.
type Port struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	ProjectID        string    `json:"project_id"`
	NetworkID        string    `json:"network_id"`
	FixedIPs         []FixedIP `json:"fixed_ips"`
	SecurityGroupIDs []string  `json:"security_group_ids"`
	// DeviceID is the server using the port ("" unbound).
	DeviceID string `json:"device_id,omitempty"`
}

// PortSpec is a port to ensure.
type PortSpec struct {
	Name      string
	NetworkID string
	// SubnetID and FixedIP: the address to take ("" FixedIP: the next free
	// one of the subnet's pools).
	SubnetID string
	FixedIP  string
	// SecurityGroups are names or ids of groups in the project.
	SecurityGroups []string
}

// FloatingIP is a Neutron floating IP.
type FloatingIP struct {
	ID        string `json:"id"`
	Address   string `json:"address"`
	NetworkID string `json:"network_id"`
	PortID    string `json:"port_id,omitempty"`
	FixedIP   string `json:"fixed_ip,omitempty"`
}

// Volume is a Cinder volume.
type Volume struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	SizeGB           int    `json:"size_gb"`
	Type             string `json:"type,omitempty"`
	AvailabilityZone string `json:"availability_zone,omitempty"`
	// Status is Cinder's: creating, available, in-use, error, ...
	Status string `json:"status"`
	// ServerIDs are the servers it is attached to.
	ServerIDs []string `json:"server_ids,omitempty"`
}

// VolumeSpec is a volume to ensure: the plan's volume in a zone, from an
// image (a bootable system volume) or blank.
type VolumeSpec struct {
	VolumePlan
	AvailabilityZone string
	// ImageID makes the volume from a Glance image ("" blank).
	ImageID string
}

// Server is a Nova server.
type Server struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Status           string `json:"status"`
	FlavorID         string `json:"flavor_id"`
	AvailabilityZone string `json:"availability_zone,omitempty"`
	// Fault is the fault message of a server in ERROR.
	Fault    string            `json:"fault,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// VolumeIDs are the attached volumes.
	VolumeIDs []string `json:"volume_ids,omitempty"`
	// Addresses are its fixed and floating IPs.
	Addresses []string `json:"addresses,omitempty"`
}

// ServerSpec is a server to ensure: booted from volumes on ports.
type ServerSpec struct {
	Name string
	// Role goes to the MetadataRole key (the usage counts every role but
	// RoleLoadBalancer).
	Role             string
	FlavorID         string
	AvailabilityZone string
	// VolumeIDs: the first is the boot (system) volume; all are attached
	// in order, so the guest sees them as vda, vdb, ... (the devices
	// cloud-init's disk_setup names). Nova deletes them with the server.
	VolumeIDs []string
	// PortIDs are the server's ports (their security groups apply).
	PortIDs  []string
	UserData []byte
	KeyName  string
}

// Usage is what a cluster's VMs take: nodes, their flavors' vCPUs and RAM,
// and the size of their volumes.
type Usage struct {
	Nodes     int `json:"nodes"`
	VCPUs     int `json:"vcpus"`
	RAMMB     int `json:"ram_mb"`
	StorageGB int `json:"storage_gb"`
}

// Add sums two usages (a cluster's zones).
func (u Usage) Add(o Usage) Usage {
	return Usage{Nodes: u.Nodes + o.Nodes, VCPUs: u.VCPUs + o.VCPUs, RAMMB: u.RAMMB + o.RAMMB, StorageGB: u.StorageGB + o.StorageGB}
}
