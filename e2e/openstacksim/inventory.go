package openstacksim

import (
	"errors"
	"maps"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Inventory is everything that exists, in creation order, leaving out what
// the simulator starts with (the admin project and user, the external
// network and its subnet).
type Inventory struct {
	Projects       []Project
	Users          []User
	Servers        []Instance
	Volumes        []Volume
	Networks       []Network
	Subnets        []Subnet
	Ports          []Port
	Routers        []Router
	SecurityGroups []SecurityGroup
	FloatingIPs    []FloatingIP
}

// Empty says whether nothing is left but the default security groups
// Neutron made for projects (they outlive a project unless an admin deletes
// them, as in Neutron).
func (inv Inventory) Empty() bool {
	return inv.Total() == len(inv.SecurityGroups) && !slices.ContainsFunc(inv.SecurityGroups, func(g SecurityGroup) bool { return !g.Default })
}

// Inventory lists what exists in project (by id; "" for every project).
// Users are listed when their default project is project (all with "").
// A router's gateway port belongs to no project and shows only with "".
func (s *Server) Inventory(project string) Inventory {
	return s.inventory(func(owner string) bool { return project == "" || owner == project })
}

// inventory is every object but the builtin ones whose owner keep accepts.
func (s *Server) inventory(keep func(owner string) bool) Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Inventory{
		Projects: copies(s, projects, keep, nil),
		Users:    copies(s, users, keep, nil),
		Servers:  copies(s, servers, keep, func(sv *Instance) { *sv = s.serverView(sv) }),
		Volumes:  copies(s, volumes, keep, func(v *Volume) { v.Attachments = slices.Clone(v.Attachments) }),
		Networks: copies(s, networks, keep, nil),
		Subnets: copies(s, subnets, keep, func(sub *Subnet) {
			sub.Pools = slices.Clone(sub.Pools)
			sub.DNSNameservers = slices.Clone(sub.DNSNameservers)
			sub.Allocated = maps.Clone(sub.Allocated)
		}),
		Ports: copies(s, ports, keep, func(p *Port) {
			p.FixedIPs = slices.Clone(p.FixedIPs)
			p.SecurityGroups = slices.Clone(p.SecurityGroups)
		}),
		Routers:        copies(s, routers, keep, func(rt *Router) { rt.Interfaces = slices.Clone(rt.Interfaces) }),
		SecurityGroups: copies(s, secGroups, keep, func(g *SecurityGroup) { g.Rules = slices.Clone(g.Rules) }),
		FloatingIPs:    copies(s, floatingIPs, keep, nil),
	}
}

// copies are the objects of col but the builtin ones whose owner keep
// accepts, in order, each copied and then given its own slices and maps by
// own (nil: the object holds none).
func copies[T any](s *Server, col *collection[T], keep func(owner string) bool, own func(*T)) []T {
	return simkit.Select(col.Items(s), col.Order, func(v *T) bool {
		return !s.st.builtin[v] && keep(col.Owner(v))
	}, func(v *T) T {
		c := *v
		if own != nil {
			own(&c)
		}
		return c
	})
}

// Tenants is everything owned by a project other than the admin's, as
// Inventory lists it, whether Keystone still has the project or not:
// deleting a Keystone project deletes none of its other objects.
func (s *Server) Tenants() Inventory {
	admin := s.AdminProjectID()
	return s.inventory(func(owner string) bool { return owner != admin })
}

// Total is the number of objects, default security groups included.
func (inv Inventory) Total() int {
	return len(inv.Projects) + len(inv.Users) + len(inv.Servers) + len(inv.Volumes) + len(inv.Networks) +
		len(inv.Subnets) + len(inv.Ports) + len(inv.Routers) + len(inv.SecurityGroups) + len(inv.FloatingIPs)
}

// ServersNamed returns the servers called name, in creation order.
func (s *Server) ServersNamed(name string) []Instance {
	return slices.DeleteFunc(s.Inventory("").Servers, func(sv Instance) bool { return sv.Name != name })
}

// RemoveServer deletes a server behind the client's back (an operator, or
// a host lost), with Nova's cleanup of ports and volumes; false when there
// is none.
func (s *Server) RemoveServer(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.st.servers[id]
	if sv != nil {
		s.removeServer(sv)
	}
	return sv != nil
}

// ProjectNamed returns the project called name in the default domain.
func (s *Server) ProjectNamed(name string) (Project, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.st.projectNamed(DefaultDomainID, name); p != nil {
		return *p, true
	}
	return Project{}, false
}

// AdminProjectID is the id of the admin project.
func (s *Server) AdminProjectID() string { return s.st.adminProjectID }

// ExternalNetworkID is the id of the external network.
func (s *Server) ExternalNetworkID() string { return s.st.extNetID }

// AddApplicationCredential creates an application credential for the user
// called userName (default domain) on project (by id), as the user would,
// and returns it with its id.
func (s *Server) AddApplicationCredential(userName, project, name, secret string) (AppCredential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.st.findUser(authUser{Name: userName, Domain: &authDomain{ID: DefaultDomainID}})
	if u == nil || s.st.projects[project] == nil {
		return AppCredential{}, errors.New("openstacksim: no such user or project")
	}
	a := &AppCredential{ID: newHexID(), Name: name, UserID: u.ID, ProjectID: project, Secret: secret}
	s.st.appCreds[a.ID] = a
	return *a, nil
}
