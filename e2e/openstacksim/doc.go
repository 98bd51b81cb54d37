// Package openstacksim is a stateful stand-in for the parts of OpenStack
// the cluster-provisioner drives through gophercloud: Keystone v3, Nova,
// Neutron, Cinder v3 and Glance v2, on one port under /identity/v3,
// /compute/v2.1, /network/v2.0, /volume/v3/{project_id} and /image/v2, each
// advertised in the catalog of a project-scoped token (network and image
// versionless, with version documents at /network/ and /image/, as
// devstack publishes them and gophercloud discovers them).
//
// Every answer parses with gophercloud's own Extract functions; the tests
// drive the simulator only through gophercloud/v2.
//
// What it keeps and enforces, as the real services do:
//
//   - Keystone: password, token and application credential (id, or name
//     and user) authentication; a token is scoped only to a project the
//     user has a role on (else the same 401 as a bad password); projects
//     and users unique by name per domain (409); identity writes need the
//     admin role (403); deleting a project revokes its tokens and role
//     assignments and leaves what it owned in the other services, which the
//     inventory then shows. Every service checks X-Auth-Token (401, with
//     keystonemiddleware's body, for a missing, unknown or expired token).
//   - Neutron: real IPAM. A port gets the next free address of its subnet's
//     allocation pools (Neutron picks at random: a client must not count on
//     the order), or the one asked for if inside the CIDR and free (400
//     InvalidIpForSubnet, 409 IpAddressAlreadyAllocated), in the pools or
//     not. Pools lie inside the CIDR, do not overlap nor hold the gateway. A
//     pool update stranding an address allocated from the old pools is a
//     409 SubnetInUse: Neutron keeps such allocations, the simulator is
//     strict so a client narrowing a pool it took from is caught. Deletes
//     in use are refused (NetworkInUse, SubnetInUse, SecurityGroupInUse,
//     RouterInUse, L3PortInUse). Every project gets its "default" security
//     group (4 rules) on its first Neutron call, every new group Neutron's
//     two egress rules; a duplicate rule is 409 SecurityGroupRuleExists. A
//     floating IP only reaches a port whose subnet has a router with a
//     gateway on the floating network (404
//     ExternalGatewayForFloatingIPNotFound). Quotas per project (409
//     OverQuota). Non-admins see their project's objects (and shared and
//     external networks); an admin sees all and may create for another
//     project (project_id/tenant_id).
//   - Nova: servers boot from an image or from block_device_mapping_v2
//     (image or blank → new volume, or an existing available volume), on
//     given ports (which must be unbound: 409) or on networks (Nova makes the
//     port and deletes it with the server). A server answers BUILD for
//     Options.BuildPolls GETs, then boots: Options.OnBoot runs once, outside
//     every lock, with the decoded user_data, addresses and volumes, and its
//     error puts the server in ERROR with that fault; ServerErrorRule makes
//     the Nth server (by name and/or availability zone) go ERROR without
//     booting. A deleted server stays, task_state deleting, for
//     Options.DeletePolls API requests (each request is a tick of the
//     simulator's clock); then Nova's cleanup unbinds the ports it was
//     given, deletes the ones it made, detaches volumes and deletes those
//     marked delete_on_termination. A client must wait for the 404 before
//     it deletes what the server held. The name filter of a list is a regular
//     expression, as in Nova. Quotas instances, cores, ram (403).
//   - Cinder: volumes answer creating for Options.VolumePolls GETs, then
//     available; in-use while attached, and then not deletable (400);
//     unknown type 404; quotas volumes, gigabytes and gigabytes_<type> (413
//     overLimit).
//   - Glance: the configured images.
//
// Objects can carry an owner's mark, as the real services allow, and be
// found by it: Keystone and Neutron descriptions, Nova server metadata,
// Cinder volume metadata (?metadata={'k':'v'}).
//
// Lists page with limit and marker and link the next page the way each
// service does (Nova/Neutron/Cinder <resource>_links, Glance next); a
// filter is any query parameter naming a field of the resource, with the
// value as rendered (Neutron's behaviour without strict filtering).
//
// Tests inspect the simulator with Go methods (Inventory, Calls, CallCount)
// and inject faults (FailCall, AddFault, FailServers, SetQuota, Down,
// ExpireTokens). Inventory leaves out what the simulator starts with
// (admin project and user, external network), and Inventory.Empty ignores
// the default security groups, which outlive their project in Neutron.
//
//	sim := openstacksim.NewTestServer(t, openstacksim.Options{AvailabilityZones: []string{"az-a", "az-b", "az-c"}})
//	o := sim.Options()
//	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
//		IdentityEndpoint: sim.AuthURL(), Username: o.AdminUser, Password: o.AdminPassword, DomainName: "Default",
//		Scope: &gophercloud.AuthScope{ProjectName: o.AdminProject, DomainName: "Default"}})
//	...
//	if inv := sim.Inventory(""); !inv.Empty() { t.Fatalf("left behind: %+v", inv) }
package openstacksim
