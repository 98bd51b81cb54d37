package openstack

import (
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// What sitebus asks OpenStack for and reads back from it: the cloud to log
// in to, a zone's flavors and volume types, a tenant's quota, network,
// router and security groups, and volumes. A cluster's plan
// (ranchercluster.Plan) is written in these types and names them under the
// same names; they are the client's vocabulary, so they live here and the
// planner imports them.

// Cloud is how sitebus reaches one zone's OpenStack: an entry of
// clouds.yaml by name, or the same entry written inline (auth, auth_type,
// region_name, interface, verify, cacert), password or application
// credential, as gophercloud's openstack/config/clouds reads it.
type Cloud struct {
	// Name is the clouds.yaml entry; the other fields are then unset.
	Name string

	AuthType                    string
	AuthURL                     string
	Username, UserID            string
	Password                    config.Secret
	UserDomainName              string
	UserDomainID                string
	ProjectName, ProjectID      string
	ProjectDomainName           string
	ProjectDomainID             string
	DomainName, DomainID        string
	ApplicationCredentialID     string
	ApplicationCredentialName   string
	ApplicationCredentialSecret config.Secret

	RegionName string
	Interface  string
	Verify     bool
	CACert     string
}

// ApplicationCredential reports whether the cloud logs in with an
// application credential rather than a password.
func (c Cloud) ApplicationCredential() bool {
	return c.ApplicationCredentialSecret != "" || strings.Contains(c.AuthType, "applicationcredential")
}

// Flavor is a Nova flavor of a zone.
type Flavor struct {
	ID     string
	Name   string
	VCPUs  int
	RAMMB  int
	DiskGB int
}

// VolumeType is a Cinder volume type of a zone.
type VolumeType struct {
	ID   string
	Name string
}

// Quota is a tenant's limits in OpenStack's units: Nova cores and RAM (MB),
// Cinder gigabytes in total and, in dynamic storage mode, per volume type.
type Quota struct {
	Cores           int            `json:"cores"`
	RAMMB           int            `json:"ram_mb"`
	Gigabytes       int            `json:"gigabytes"`
	GigabytesByType map[string]int `json:"gigabytes_by_type,omitempty"`
}

// Add returns the sum of two quotas.
func (q Quota) Add(o Quota) Quota {
	out := Quota{Cores: q.Cores + o.Cores, RAMMB: q.RAMMB + o.RAMMB, Gigabytes: q.Gigabytes + o.Gigabytes}
	for _, m := range []map[string]int{q.GigabytesByType, o.GigabytesByType} {
		for k, v := range m {
			if out.GigabytesByType == nil {
				out.GigabytesByType = map[string]int{}
			}
			out.GigabytesByType[k] += v
		}
	}
	return out
}

// Times is the quota of n of what q is the quota of (n VMs alike).
func (q Quota) Times(n int) Quota {
	out := Quota{Cores: q.Cores * n, RAMMB: q.RAMMB * n, Gigabytes: q.Gigabytes * n}
	for k, v := range q.GigabytesByType {
		if out.GigabytesByType == nil {
			out.GigabytesByType = map[string]int{}
		}
		out.GigabytesByType[k] = v * n
	}
	return out
}

// NetworkPlan is the tenant's network and subnet.
type NetworkPlan struct {
	Name   string     `json:"name"`
	Subnet SubnetPlan `json:"subnet"`
}

// SubnetPlan is the tenant's subnet: the pool leaves .1-.10 to the gateway
// and the load balancer.
type SubnetPlan struct {
	Name            string           `json:"name"`
	CIDR            string           `json:"cidr"`
	GatewayIP       string           `json:"gateway_ip"`
	AllocationPools []AllocationPool `json:"allocation_pools"`
	DNSNameservers  []string         `json:"dns_nameservers,omitempty"`
	IPVersion       int              `json:"ip_version"`
	EnableDHCP      bool             `json:"enable_dhcp"`
}

// AllocationPool is one DHCP range.
type AllocationPool struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// RouterPlan connects the subnet to the external network.
type RouterPlan struct {
	Name              string `json:"name"`
	ExternalNetworkID string `json:"external_network_id"`
}

// SecurityGroupPlan is a group and its rules (Mastermind makes k8s_admin
// and k8s_public without any).
type SecurityGroupPlan struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Rules       []RulePlan `json:"rules"`
}

// RulePlan is one ingress rule.
type RulePlan struct {
	Direction      string `json:"direction"`
	EtherType      string `json:"ethertype"`
	Protocol       string `json:"protocol"`
	PortRangeMin   int    `json:"port_range_min"`
	PortRangeMax   int    `json:"port_range_max"`
	RemoteIPPrefix string `json:"remote_ip_prefix"`
}

// VolumePlan is one Cinder volume; Type is "" for the zone's default.
type VolumePlan struct {
	Name   string `json:"name"`
	SizeGB int    `json:"size_gb"`
	Type   string `json:"type,omitempty"`
	// Device, MountPoint and Filesystem are for data volumes: cloud-init
	// formats Device with Filesystem and mounts it on MountPoint.
	Device     string `json:"device,omitempty"`
	MountPoint string `json:"mount_point,omitempty"`
	Filesystem string `json:"filesystem,omitempty"`
}
