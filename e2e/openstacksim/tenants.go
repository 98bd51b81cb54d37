package openstacksim

import "slices"

// Tenants is everything owned by a project other than the admin's, as
// Inventory lists it but with Neutron's default security groups, whether
// Keystone still has the project or not: deleting a Keystone project
// deletes none of its Neutron, Cinder or Nova objects, so what a removed
// tenant leaves shows here, owned by a project id nobody has.
func (s *Server) Tenants() Inventory {
	inv := s.Inventory("")
	admin := s.AdminProjectID()
	return Inventory{
		Projects:       notOwnedBy(projects, inv.Projects, admin),
		Users:          notOwnedBy(users, inv.Users, admin),
		Servers:        notOwnedBy(servers, inv.Servers, admin),
		Volumes:        notOwnedBy(volumes, inv.Volumes, admin),
		Networks:       notOwnedBy(networks, inv.Networks, admin),
		Subnets:        notOwnedBy(subnets, inv.Subnets, admin),
		Ports:          notOwnedBy(ports, inv.Ports, admin),
		Routers:        notOwnedBy(routers, inv.Routers, admin),
		SecurityGroups: notOwnedBy(secGroups, inv.SecurityGroups, admin),
		FloatingIPs:    notOwnedBy(floatingIPs, inv.FloatingIPs, admin),
	}
}

// Total is the number of objects, default security groups included.
func (inv Inventory) Total() int {
	n := inv.Count()
	for _, g := range inv.SecurityGroups {
		if g.Default {
			n++
		}
	}
	return n
}

// notOwnedBy is items without those project owns (col names the owner).
func notOwnedBy[T any](col *collection[T], items []T, project string) []T {
	return slices.DeleteFunc(items, func(v T) bool { return col.Owner(&v) == project })
}
