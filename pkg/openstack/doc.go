// Package openstack is sitebus's OpenStack client for the
// cluster-provisioner (issue 13), on gophercloud/v2: the Keystone
// projects and users, Neutron networks, subnets, routers, security groups,
// ports and floating IPs, Cinder volumes and Nova servers one rancher-cluster
// order makes (ranchercluster.Plan), made and removed one object at a time
// so a saga can record and compensate each.
//
// # Clients and scope
//
// Connect logs in with a zone's cloud (a clouds.yaml entry read by
// gophercloud's openstack/config/clouds, or the same entry inline;
// password or application credential; TLS verified unless the cloud says
// verify: false, with its cacert). That Client acts in the credentials'
// project and, when the user has the admin role, makes and removes
// projects and users. Scoped returns a Client for another project: the
// same credentials re-authenticated with the project as scope, after
// EnsureProject gave the admin user a role there (Mastermind's
// add_admin_user_to_tenant). Nova makes a server, and Cinder a volume, in
// the project of the token, whatever project_id an admin passes, so a
// token scoped to the tenant is what works on real OpenStack; it is also
// what the simulator enforces. A token from an application credential
// cannot be re-scoped (Keystone refuses), so managed mode needs a password
// credential; Scoped says so with a terminal error.
//
// # Ensure and Delete
//
// Every Ensure first looks for the object by name in the client's project
// and creates it only when absent, so a crash between a create and the
// saga's record of it makes nothing twice. It returns the object, whether
// this call created it, and an error. An object found by name is returned
// only when it is the owner's (below); anything else of that name is a
// terminal error naming it, never adopted. So whatever an Ensure returns
// is the owner's, to record and compensate, whether created or found.
//
// Every Delete is idempotent (absent is done) and refuses, with a terminal
// error naming the object, to delete what is not the owner's. A Delete in a
// project must come before the project's own: once Keystone has deleted a
// project, no token can be scoped to it (and Keystone leaves what it held
// in the other services).
//
// # Ownership
//
// An object is the owner's (Owner, the Waldur resource UUID) only when it
// carries its mark: Mark ("managed by sitebus for <uuid>") in the
// description (Keystone projects and users, Neutron networks, subnets,
// routers, security groups and their rules, ports and floating IPs, Cinder
// volumes) or the metadata key MetadataOwner (Nova servers, which have no
// description before microversion 2.19, and Cinder volumes). Lying in a
// project sitebus made is not enough: an operator may add things there,
// and Neutron puts its own (the default group, router interface ports).
//
// # Errors
//
// Errors are *Error and match the kinds of package fault (see Error for
// the mapping of OpenStack's answers), so that fault.IsTerminal tells a
// saga step whether a retry can help: refusals (400, 403, a quota, which
// also matches ErrQuota and names the quota, a server in ERROR), refused
// credentials (401), an object not the owner's and a 404 where the object
// must exist are terminal; a 409 that clears (ErrConflict), 5xx, 429,
// timeouts and refused connections are retried.
package openstack
