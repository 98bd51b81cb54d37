package openstack

import (
	"context"

	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/config"
)

// EnsureProject makes the Keystone project name (in the connecting user's
// domain) with description and owner's mark, and gives the connecting
// user Config.AdminRole on it, as Mastermind's add_admin_user_to_tenant,
// so Scoped can act there. A project of that name that is not owner's is
// a terminal error.
func (c *Client) EnsureProject(ctx context.Context, owner Owner, name, description string) (Project, bool, error) {
	return Project{}, false, errNotImplemented
}

// DeleteProject deletes the project (absent: done) if it is owner's.
// Keystone leaves what the project held in the other services: delete
// that first.
func (c *Client) DeleteProject(ctx context.Context, owner Owner, projectID string) error {
	return errNotImplemented
}

// EnsureUser makes the Keystone user name with password, projectID as its
// default project and Config.MemberRole there (Waldur's tenant user). An
// existing user keeps its password. A user of that name whose default
// project is not projectID is a terminal error.
func (c *Client) EnsureUser(ctx context.Context, owner Owner, name string, password config.Secret, projectID string) (User, bool, error) {
	return User{}, false, errNotImplemented
}

// DeleteUser deletes the user (absent: done) if its default project is
// owner's.
func (c *Client) DeleteUser(ctx context.Context, owner Owner, userID string) error {
	return errNotImplemented
}

// SetQuota sets the project's Nova cores, RAM and instances and its Cinder
// gigabytes (in total and per volume type), Waldur's push_tenant_quotas.
// Instances is the number of VMs the plan puts there.
func (c *Client) SetQuota(ctx context.Context, projectID string, q ranchercluster.Quota, instances int) error {
	return errNotImplemented
}
