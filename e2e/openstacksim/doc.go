// Package openstacksim is a stateful stand-in for the parts of OpenStack
// the cluster-provisioner drives through gophercloud: Keystone v3, Nova,
// Neutron, Cinder v3 and Glance v2 on one port, under /identity/v3,
// /compute/v2.1, /network/v2.0, /volume/v3/{project_id} and /image/v2, in
// the catalog of a project-scoped token (network and image versionless,
// with version documents at /network/ and /image/, as devstack publishes
// them). Every answer parses with gophercloud's Extract functions, and the
// tests drive the simulator only through gophercloud/v2.
//
// What it enforces, as the real services do:
//
//   - Keystone: password, token and application credential auth; a token
//     is scoped only to a project the user has a role on (else the same
//     401 as a bad password); names unique per domain (409); identity
//     writes need the admin role (403); deleting a project revokes its
//     tokens and roles and leaves what it owned in the other services.
//     Every service checks X-Auth-Token (401, keystonemiddleware's body).
//   - Neutron: real IPAM. A port gets a free address of its subnet's pools
//     (Neutron picks at random: a client must not count on the order) or
//     the one asked for (400 InvalidIpForSubnet, 409
//     IpAddressAlreadyAllocated). A pool update stranding an allocated
//     address is a 409 SubnetInUse: Neutron keeps such allocations, the
//     simulator is strict so a client narrowing a pool it took from is
//     caught. Deletes in use are refused (NetworkInUse, SubnetInUse,
//     SecurityGroupInUse, RouterInUse, L3PortInUse). Every project gets its
//     "default" security group on its first Neutron call; a duplicate rule
//     is 409 SecurityGroupRuleExists; a floating IP needs a router from the
//     port's subnet to the floating network (404
//     ExternalGatewayForFloatingIPNotFound); quotas are 409 OverQuota.
//     Admins see and create for every project.
//   - Nova: servers boot from an image or block_device_mapping_v2, on given
//     (unbound: else 409) ports or on networks (Nova makes the port and
//     deletes it with the server). A server answers BUILD for
//     Options.BuildPolls GETs, then Options.OnBoot runs once, outside every
//     lock; its error, or a ServerErrorRule, puts the server in ERROR. A
//     deleted server stays, task_state deleting, for Options.DeletePolls
//     API requests; then Nova's cleanup unbinds the ports it was given,
//     deletes the ones it made and the volumes marked
//     delete_on_termination: a client must wait for the 404 before it
//     deletes what the server held. The name filter is a regular
//     expression, as in Nova. Quotas instances, cores, ram (403).
//   - Cinder: volumes are creating for Options.VolumePolls GETs, in-use
//     while attached and then not deletable (400); quotas volumes,
//     gigabytes and gigabytes_<type> (413 overLimit).
//
// Owners mark objects as the real services allow and find them by it:
// Keystone and Neutron descriptions, Nova server and Cinder volume
// metadata. Lists page with limit and marker and link the next page as
// each service does; a filter is any query parameter naming a rendered
// field (Neutron without strict filtering).
//
// Tests inspect the simulator with Go methods (Inventory, Tenants, Calls)
// and inject faults (FailCall, AddFault, FailServers, SetQuota, Down,
// ExpireTokens). Inventory leaves out what the simulator starts with, and
// Inventory.Empty ignores the default security groups, which outlive their
// project in Neutron.
//
//	sim := openstacksim.NewTestServer(t, openstacksim.Options{AvailabilityZones: []string{"az-a", "az-b"}})
//	o := sim.Options()
//	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
//		IdentityEndpoint: sim.AuthURL(), Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
//		Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"}})
//	...
//	if inv := sim.Inventory(""); !inv.Empty() { t.Fatalf("left behind: %+v", inv) }
package openstacksim
