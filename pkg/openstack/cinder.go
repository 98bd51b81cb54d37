package openstack

import (
	"context"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// EnsureVolume makes the volume v and waits, bounded by
// Config.VolumeTimeout, until it is available (or in-use: attached by an
// earlier attempt). A volume that goes to error is a terminal error.
func (c *Client) EnsureVolume(ctx context.Context, owner Owner, v VolumeSpec) (Volume, bool, error) {
	return Volume{}, false, errNotImplemented
}

// DeleteVolume deletes the volume (absent: done) if it is owner's. Cinder
// refuses while it is attached (400, terminal): delete its server first.
func (c *Client) DeleteVolume(ctx context.Context, owner Owner, volumeID string) error {
	return errNotImplemented
}

// VolumeTypes lists the Cinder volume types.
func (c *Client) VolumeTypes(ctx context.Context) ([]ranchercluster.VolumeType, error) {
	return nil, errNotImplemented
}
