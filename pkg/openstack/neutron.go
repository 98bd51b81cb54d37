package openstack

import (
	"context"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
)

// EnsureNetwork makes the network n.Name in the client's project.
func (c *Client) EnsureNetwork(ctx context.Context, owner Owner, n ranchercluster.NetworkPlan) (Network, bool, error) {
	return Network{}, false, errNotImplemented
}

// DeleteNetwork deletes the network (absent: done) if it is owner's.
// Neutron refuses while ports use it (409, retryable).
func (c *Client) DeleteNetwork(ctx context.Context, owner Owner, networkID string) error {
	return errNotImplemented
}

// EnsureSubnet makes the subnet s on networkID: CIDR, gateway, allocation
// pools (the plan's .11-.200), DNS servers, DHCP. An existing subnet whose
// pools differ from the plan's is updated to them (Mastermind narrows the
// pool after the tenant is made).
func (c *Client) EnsureSubnet(ctx context.Context, owner Owner, networkID string, s ranchercluster.SubnetPlan) (Subnet, bool, error) {
	return Subnet{}, false, errNotImplemented
}

// DeleteSubnet deletes the subnet (absent: done) if it is owner's.
func (c *Client) DeleteSubnet(ctx context.Context, owner Owner, subnetID string) error {
	return errNotImplemented
}

// EnsureRouter makes the router r with its gateway on r.ExternalNetworkID
// and gives it an interface on subnetID when it has none there.
func (c *Client) EnsureRouter(ctx context.Context, owner Owner, r ranchercluster.RouterPlan, subnetID string) (Router, bool, error) {
	return Router{}, false, errNotImplemented
}

// DeleteRouter removes the router's interfaces and deletes it (absent:
// done) if it is owner's.
func (c *Client) DeleteRouter(ctx context.Context, owner Owner, routerID string) error {
	return errNotImplemented
}

// EnsureSecurityGroup makes the group g with its rules; on an existing
// group it adds the rules that are missing (none is removed).
func (c *Client) EnsureSecurityGroup(ctx context.Context, owner Owner, g ranchercluster.SecurityGroupPlan) (SecurityGroup, bool, error) {
	return SecurityGroup{}, false, errNotImplemented
}

// DeleteSecurityGroup deletes the group (absent: done) if it is owner's.
func (c *Client) DeleteSecurityGroup(ctx context.Context, owner Owner, groupID string) error {
	return errNotImplemented
}

// EnsurePort makes the port p (its fixed IP and security groups). A port
// of that name with another address is a terminal error.
func (c *Client) EnsurePort(ctx context.Context, owner Owner, p PortSpec) (Port, bool, error) {
	return Port{}, false, errNotImplemented
}

// DeletePort deletes the port (absent: done) if it is owner's.
func (c *Client) DeletePort(ctx context.Context, owner Owner, portID string) error {
	return errNotImplemented
}

// EnsureFloatingIP gives portID a floating IP from externalNetworkID (the
// one it has, if any).
func (c *Client) EnsureFloatingIP(ctx context.Context, owner Owner, externalNetworkID, portID string) (FloatingIP, bool, error) {
	return FloatingIP{}, false, errNotImplemented
}

// DeleteFloatingIP releases the floating IP (absent: done) if it is
// owner's.
func (c *Client) DeleteFloatingIP(ctx context.Context, owner Owner, fipID string) error {
	return errNotImplemented
}
