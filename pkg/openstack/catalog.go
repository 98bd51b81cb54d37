package openstack

import (
	"context"
	"sync"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// Catalog is ranchercluster.Catalog on OpenStack: it logs in to each zone
// with the zone's cloud (once, then reuses the client) and lists its
// flavors and volume types.
type Catalog struct {
	Settings *ranchercluster.Settings
	// Configure, when set, adjusts each zone's Config (tests: timeouts,
	// logger).
	Configure func(*Config)

	mu      sync.Mutex
	clients map[string]*Client
}

var _ ranchercluster.Catalog = (*Catalog)(nil)

// Flavors lists the zone's Nova flavors.
func (k *Catalog) Flavors(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.Flavor, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return nil, err
	}
	return c.Flavors(ctx)
}

// VolumeTypes lists the zone's Cinder volume types.
func (k *Catalog) VolumeTypes(ctx context.Context, az ranchercluster.AZ) ([]ranchercluster.VolumeType, error) {
	c, err := k.client(ctx, az)
	if err != nil {
		return nil, err
	}
	return c.VolumeTypes(ctx)
}

func (k *Catalog) client(ctx context.Context, az ranchercluster.AZ) (*Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.clients[az.UUID]; c != nil {
		return c, nil
	}
	cfg := ConfigFor(k.Settings, az)
	if k.Configure != nil {
		k.Configure(&cfg)
	}
	c, err := Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if k.clients == nil {
		k.clients = map[string]*Client{}
	}
	k.clients[az.UUID] = c
	return c, nil
}
