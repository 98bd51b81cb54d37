package openstack

import (
	"context"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// EnsureServer boots the server s from its volumes
// (block_device_mapping_v2) on its ports, with its user_data and
// availability zone, and the owner and role in its metadata. It does not
// wait: see WaitServerActive.
func (c *Client) EnsureServer(ctx context.Context, owner Owner, s ServerSpec) (Server, bool, error) {
	return Server{}, false, errNotImplemented
}

// WaitServerActive polls the server until it is ACTIVE, bounded by
// Config.ServerTimeout. ERROR is a terminal error (ErrServerFailed) with
// Nova's fault message; running out of time is terminal too (ErrTimeout).
func (c *Client) WaitServerActive(ctx context.Context, serverID string) (Server, error) {
	return Server{}, errNotImplemented
}

// GetServer reads a server (backend.ErrNotFound when absent).
func (c *Client) GetServer(ctx context.Context, serverID string) (Server, error) {
	return Server{}, errNotImplemented
}

// DeleteServer deletes the server (absent: done) if it is owner's, waits
// (bounded by Config.DeleteTimeout) until it is gone, then deletes the
// owner's volumes it had that Nova left.
func (c *Client) DeleteServer(ctx context.Context, owner Owner, serverID string) error {
	return errNotImplemented
}

// Flavors lists the Nova flavors.
func (c *Client) Flavors(ctx context.Context) ([]ranchercluster.Flavor, error) {
	return nil, errNotImplemented
}

// ImageID finds a Glance image by name (a terminal error when there is
// none, or more than one).
func (c *Client) ImageID(ctx context.Context, name string) (string, error) {
	return "", errNotImplemented
}

// Usage sums what owner's servers in the project take, leaving out its
// load balancers (MetadataRole ranchercluster.RoleLoadBalancer): nodes,
// their flavors' vCPUs and RAM, and the sizes of their volumes.
func (c *Client) Usage(ctx context.Context, owner Owner) (Usage, error) {
	return Usage{}, errNotImplemented
}
