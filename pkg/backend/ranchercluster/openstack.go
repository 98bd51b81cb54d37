package ranchercluster

import (
	"context"
	"sync"

	"github.com/sitebus/sitebus/pkg/openstack"
)

// The OpenStack objects a plan asks for are package openstack's types: the
// planner writes what the client makes. The plan names them as it always
// has, so plans, settings and their callers read the same.
type (
	Cloud             = openstack.Cloud
	Flavor            = openstack.Flavor
	VolumeType        = openstack.VolumeType
	Quota             = openstack.Quota
	NetworkPlan       = openstack.NetworkPlan
	SubnetPlan        = openstack.SubnetPlan
	AllocationPool    = openstack.AllocationPool
	RouterPlan        = openstack.RouterPlan
	SecurityGroupPlan = openstack.SecurityGroupPlan
	RulePlan          = openstack.RulePlan
	VolumePlan        = openstack.VolumePlan
	Subnet            = openstack.Subnet
	SecurityGroup     = openstack.SecurityGroup
)

// OpenStackConfig is the openstack.Config of one zone of the offering.
func OpenStackConfig(s *Settings, az AZ) openstack.Config {
	return openstack.Config{Cloud: az.Cloud, CloudsYAML: s.CloudsYAML, Region: az.Region}
}

// OpenStackCatalog is Catalog on OpenStack: it logs in to each zone with
// the zone's cloud (once, then reuses the client) and lists its flavors,
// volume types, subnets and security groups.
type OpenStackCatalog struct {
	Settings *Settings
	// Configure, when set, adjusts each zone's Config (tests: timeouts,
	// logger).
	Configure func(*openstack.Config)

	mu      sync.Mutex
	clients map[string]*openstack.Client
}

var _ Catalog = (*OpenStackCatalog)(nil)

// Flavors lists the zone's Nova flavors.
func (k *OpenStackCatalog) Flavors(ctx context.Context, az AZ) ([]Flavor, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return nil, err
	}
	return c.Flavors(ctx)
}

// VolumeTypes lists the zone's Cinder volume types.
func (k *OpenStackCatalog) VolumeTypes(ctx context.Context, az AZ) ([]VolumeType, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return nil, err
	}
	return c.VolumeTypes(ctx)
}

// Subnet finds a subnet the zone's credentials may use.
func (k *OpenStackCatalog) Subnet(ctx context.Context, az AZ, id string) (Subnet, bool, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return Subnet{}, false, err
	}
	return c.UsableSubnet(ctx, id)
}

// SecurityGroups lists the security groups of the zone credentials'
// project.
func (k *OpenStackCatalog) SecurityGroups(ctx context.Context, az AZ) ([]SecurityGroup, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return nil, err
	}
	return c.SecurityGroups(ctx)
}

// SubnetReaches reports whether a router connects the subnet to the
// external network.
func (k *OpenStackCatalog) SubnetReaches(ctx context.Context, az AZ, subnetID, externalNetworkID string) (bool, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return false, err
	}
	return c.SubnetReaches(ctx, subnetID, externalNetworkID)
}

func (k *OpenStackCatalog) client(ctx context.Context, az AZ) (*openstack.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.clients[az.UUID]; c != nil {
		return c, nil
	}
	cfg := OpenStackConfig(k.Settings, az)
	if k.Configure != nil {
		k.Configure(&cfg)
	}
	c, err := openstack.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if k.clients == nil {
		k.clients = map[string]*openstack.Client{}
	}
	k.clients[az.UUID] = c
	return c, nil
}
