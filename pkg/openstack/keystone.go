package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	volumequotas "github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/quotasets"
	computequotas "github.com/gophercloud/gophercloud/v2/openstack/compute/v2/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// EnsureProject makes the Keystone project name (in the connecting user's
// domain) with description and owner's mark, and gives the connecting
// user Config.AdminRole on it, as Mastermind's add_admin_user_to_tenant,
// so Scoped can act there. A project of that name that is not owner's is
// a terminal error.
func (c *Client) EnsureProject(ctx context.Context, owner Owner, name, description string) (Project, bool, error) {
	obj := "project " + name
	page, err := projects.List(c.identity, projects.ListOpts{Name: name, DomainID: c.domainID}).AllPages(ctx)
	if err != nil {
		return Project{}, false, classify("list projects", obj, err)
	}
	found, err := projects.ExtractProjects(page)
	if err != nil {
		return Project{}, false, classify("list projects", obj, err)
	}
	var p Project
	created := false
	switch {
	case len(found) > 0:
		if !owner.Marks(found[0].Description) {
			return Project{}, false, notManaged("use", obj, "", owner)
		}
		p = projectOf(&found[0])
	default:
		r, err := projects.Create(ctx, c.identity, projects.CreateOpts{Name: name, DomainID: c.domainID,
			Description: owner.describe(description)}).Extract()
		if err != nil {
			return Project{}, false, classify("create", obj, err)
		}
		p, created = projectOf(r), true
		c.log.InfoContext(ctx, "created project", "project", name, "id", r.ID, "owner", string(owner))
	}
	// Assigning is a PUT, idempotent: a crash after the create is healed
	// by the next attempt.
	if err := c.assignRole(ctx, c.cfg.AdminRole, c.userID, p.ID); err != nil {
		return p, created, err
	}
	return p, created, nil
}

// DeleteProject deletes the project (absent: done) if it is owner's.
// Keystone leaves what the project held in the other services: delete
// that first.
func (c *Client) DeleteProject(ctx context.Context, owner Owner, projectID string) error {
	obj := "project " + projectID
	r, err := projects.Get(ctx, c.identity, projectID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return classify("read", obj, err)
	}
	obj = fmt.Sprintf("project %s (%s)", r.Name, r.ID)
	if !owner.Marks(r.Description) {
		return notManaged("delete", obj, "", owner)
	}
	if err := projects.Delete(ctx, c.identity, projectID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return classify("delete", obj, err)
	}
	c.log.InfoContext(ctx, "deleted project", "project", r.Name, "id", r.ID, "owner", string(owner))
	return nil
}

// EnsureUser makes the Keystone user name with password, projectID as its
// default project and Config.MemberRole there (Waldur's tenant user). An
// existing user keeps its password; one of that name that is not owner's
// is a terminal error.
func (c *Client) EnsureUser(ctx context.Context, owner Owner, name string, password config.Secret, projectID string) (User, bool, error) {
	obj := "user " + name
	page, err := users.List(c.identity, users.ListOpts{Name: name, DomainID: c.domainID}).AllPages(ctx)
	if err != nil {
		return User{}, false, classify("list users", obj, err)
	}
	found, err := users.ExtractUsers(page)
	if err != nil {
		return User{}, false, classify("list users", obj, err)
	}
	var u User
	created := false
	switch {
	case len(found) > 0:
		if !owner.Marks(found[0].Description) {
			return User{}, false, notManaged("use", obj, "", owner)
		}
		u = userOf(&found[0])
	default:
		r, err := users.Create(ctx, c.identity, users.CreateOpts{Name: name, DomainID: c.domainID,
			DefaultProjectID: projectID, Password: string(password), Description: owner.Mark()}).Extract()
		if err != nil {
			return User{}, false, classify("create", obj, err)
		}
		u, created = userOf(r), true
		c.log.InfoContext(ctx, "created user", "user", name, "id", r.ID, "owner", string(owner))
	}
	if err := c.assignRole(ctx, c.cfg.MemberRole, u.ID, projectID); err != nil {
		return u, created, err
	}
	return u, created, nil
}

// DeleteUser deletes the user (absent: done) if it is owner's.
func (c *Client) DeleteUser(ctx context.Context, owner Owner, userID string) error {
	obj := "user " + userID
	r, err := users.Get(ctx, c.identity, userID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return classify("read", obj, err)
	}
	obj = fmt.Sprintf("user %s (%s)", r.Name, r.ID)
	if !owner.Marks(r.Description) {
		return notManaged("delete", obj, "", owner)
	}
	if err := users.Delete(ctx, c.identity, userID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return classify("delete", obj, err)
	}
	c.log.InfoContext(ctx, "deleted user", "user", r.Name, "id", r.ID, "owner", string(owner))
	return nil
}

// assignRole gives user the role (by name) on project.
func (c *Client) assignRole(ctx context.Context, role, userID, projectID string) error {
	page, err := roles.List(c.identity, roles.ListOpts{Name: role}).AllPages(ctx)
	if err != nil {
		return classify("list roles", "role "+role, err)
	}
	rs, err := roles.ExtractRoles(page)
	if err != nil {
		return classify("list roles", "role "+role, err)
	}
	if len(rs) == 0 {
		return newError("find", "role "+role, "Keystone has no role of that name", fault.Invalid, fault.NotFound)
	}
	err = roles.Assign(ctx, c.identity, rs[0].ID, roles.AssignOpts{UserID: userID, ProjectID: projectID}).ExtractErr()
	return classify("assign", fmt.Sprintf("role %s to user %s on project %s", role, userID, projectID), err)
}

// SetQuota sets the project's Nova cores, RAM and instances and its Cinder
// gigabytes (in total and per volume type) and volumes, Waldur's
// push_tenant_quotas. Instances and volumes are the counts the plan puts
// there (Cinder's default of 10 volumes is less than a zone of a cluster
// needs). It needs the admin role.
func (c *Client) SetQuota(ctx context.Context, projectID string, q Quota, instances, volumes int) error {
	obj := "quota of project " + projectID
	_, err := computequotas.Update(ctx, c.compute, projectID, computequotas.UpdateOpts{
		Cores: &q.Cores, RAM: &q.RAMMB, Instances: &instances}).Extract()
	if err != nil {
		return classify("set Nova", obj, err)
	}
	opts := volumequotas.UpdateOpts{Gigabytes: &q.Gigabytes, Volumes: &volumes}
	if len(q.GigabytesByType) > 0 {
		opts.Extra = map[string]any{}
		for t, gb := range q.GigabytesByType {
			opts.Extra["gigabytes_"+t] = gb
		}
	}
	if _, err := volumequotas.Update(ctx, c.volume, projectID, opts).Extract(); err != nil {
		return classify("set Cinder", obj, err)
	}
	return nil
}

func projectOf(p *projects.Project) Project {
	return Project{ID: p.ID, Name: p.Name, DomainID: p.DomainID, Description: p.Description}
}

func userOf(u *users.User) User {
	return User{ID: u.ID, Name: u.Name, DomainID: u.DomainID, DefaultProjectID: u.DefaultProjectID}
}
