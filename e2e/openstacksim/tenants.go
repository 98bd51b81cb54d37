package openstacksim

// Tenants is everything owned by a project other than the admin's, as
// Inventory lists it but with Neutron's default security groups, whether
// Keystone still has the project or not: deleting a Keystone project
// deletes none of its Neutron, Cinder or Nova objects, so what a removed
// tenant leaves shows here, owned by a project id nobody has.
func (s *Server) Tenants() Inventory {
	admin := s.AdminProjectID()
	return s.inventory(func(owner string) bool { return owner != admin })
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
