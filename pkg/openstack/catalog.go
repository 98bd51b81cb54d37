package openstack

import (
	"context"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// Catalog is ranchercluster.Catalog on OpenStack: it logs in to each zone
// with the zone's cloud and lists its flavors and volume types.
type Catalog struct {
	Settings *ranchercluster.Settings
	// Configure, when set, adjusts each zone's Config (tests: timeouts,
	// logger).
	Configure func(*Config)
}

var _ ranchercluster.Catalog = (*Catalog)(nil)

// Flavors lists the zone's Nova flavors.
func (k *Catalog) Flavors(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.Flavor, error) {
	return nil, errNotImplemented
}

// VolumeTypes lists the zone's Cinder volume types.
func (k *Catalog) VolumeTypes(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.VolumeType, error) {
	return nil, errNotImplemented
}
