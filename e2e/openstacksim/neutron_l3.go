package openstacksim

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// badRequest is Neutron's 400 BadRequest about a request for a resource.
func badRequest(resource, msg string) *apiErr {
	return neutronErr(http.StatusBadRequest, "BadRequest", "Bad "+resource+" request: "+msg)
}

// ---- routers

func (s *Server) routerRep(rt *Router) obj {
	var gw any
	if rt.GatewayNetworkID != "" {
		ips := fixedIPsRep(cmp.Or(s.st.ports[rt.GatewayPortID], &Port{}).FixedIPs)
		gw = obj{"network_id": rt.GatewayNetworkID, "enable_snat": true, "external_fixed_ips": ips}
	}
	return stamp(obj{"id": rt.ID, "name": rt.Name, "status": "ACTIVE", "admin_state_up": true,
		"external_gateway_info": gw, "routes": []obj{}, "distributed": false, "ha": rt.HA,
		"availability_zone_hints": []string{}, "availability_zones": []string{"nova"}, "flavor_id": nil},
		&rt.Meta)
}

var routers = neutronCollection("routers", "router", "router",
	func(st *state) map[string]*Router { return st.routers }, (*Server).routerRep)

type routerIn struct {
	attrsIn
	// Gateway null or {} clears the gateway.
	Gateway nullable[struct {
		NetworkID string `json:"network_id"`
	}] `json:"external_gateway_info"`
	// HA is for admins only, as Neutron's default policy has it.
	HA *bool `json:"ha"`
}

// setGateway points rt's gateway at network id ("" removes it), taking an
// address on the external network's first subnet with a gateway port.
func (s *Server) setGateway(rt *Router, id string) *apiErr {
	if id == rt.GatewayNetworkID {
		return nil
	}
	if rt.GatewayNetworkID != "" {
		if simkit.FindBy(s.st.fips, func(f *FloatingIP) bool { return f.RouterID == rt.ID }) != nil {
			return neutronErr(http.StatusConflict, "RouterExternalGatewayInUseByFloatingIp",
				"Gateway cannot be updated for router "+rt.ID+", since a gateway to external network "+
					rt.GatewayNetworkID+" is required by one or more floating IPs.")
		}
		if p := s.st.ports[rt.GatewayPortID]; p != nil {
			s.removePort(p)
		}
		rt.GatewayNetworkID, rt.GatewayPortID = "", ""
	}
	if id == "" {
		return nil
	}
	n := s.st.networks[id]
	if n == nil || !n.External {
		return badRequest("router", "Network "+id+" is not a valid external network.")
	}
	p := &Port{Meta: s.fresh(""), NetworkID: id, MAC: newMAC(), DeviceID: rt.ID, DeviceOwner: ownerRouterGateway,
		SecurityGroups: []string{}}
	ips, e := s.allocateIPs(n, p.ID, nil)
	if e != nil {
		return e
	}
	p.FixedIPs = ips
	s.st.ports[p.ID] = p
	rt.GatewayNetworkID, rt.GatewayPortID = id, p.ID
	return nil
}

func (s *Server) createRouter(c *caller, in routerIn) (*Router, *apiErr) {
	p, e := in.project(c)
	if e := cmp.Or(e, s.checkNeutronQuota(p, "router", 1)); e != nil {
		return nil, e
	}
	rt := &Router{Meta: s.fresh(p)}
	if e := s.updateRouter(c, rt, in); e != nil {
		return nil, e
	}
	s.st.routers[rt.ID] = rt
	return rt, nil
}

func (s *Server) updateRouter(c *caller, rt *Router, in routerIn) *apiErr {
	if in.HA != nil {
		if !c.admin {
			verb := "update"
			if s.st.routers[rt.ID] == nil {
				verb = "create"
			}
			return policy(verb + "_router:ha")
		}
		rt.HA = *in.HA
	}
	if in.Gateway.Set {
		if e := s.setGateway(rt, in.Gateway.V.NetworkID); e != nil {
			return e
		}
	}
	in.apply(&rt.Meta)
	return nil
}

func (s *Server) deleteRouter(c *caller, rt *Router) *apiErr {
	if len(rt.Interfaces) > 0 {
		return neutronErr(http.StatusConflict, "RouterInUse", "Router "+rt.ID+" still has ports")
	}
	if e := s.setGateway(rt, ""); e != nil {
		return e
	}
	delete(s.st.routers, rt.ID)
	return nil
}

// interfaceOn is rt's interface port with an address on subnet, or nil.
func (s *Server) interfaceOn(rt *Router, subnet string) *Port {
	for _, pid := range rt.Interfaces {
		p := s.st.ports[pid]
		if slices.ContainsFunc(p.FixedIPs, func(f FixedIP) bool { return f.SubnetID == subnet }) {
			return p
		}
	}
	return nil
}

type interfaceIn struct {
	SubnetID string `json:"subnet_id"`
	PortID   string `json:"port_id"`
}

func (s *Server) interfaceRep(rt *Router, p *Port) obj {
	subs := simkit.Map(p.FixedIPs, func(f FixedIP) string { return f.SubnetID })
	// subnet_id is the first of subs (ids are never empty, so cmp.Or picks
	// it), "" when there is none.
	return obj{"id": rt.ID, "tenant_id": rt.ProjectID, "project_id": rt.ProjectID, "port_id": p.ID,
		"network_id": p.NetworkID, "subnet_id": cmp.Or(subs...), "subnet_ids": subs}
}

// routerInterface serves a router's add_router_interface or
// remove_router_interface: the router {id} as a show finds it, then the
// {"subnet_id"|"port_id"} body.
func (s *Server) routerInterface(h func(*Server, http.ResponseWriter, *caller, *Router, interfaceIn) *apiErr) handler {
	return routers.On(s, func(w http.ResponseWriter, r *http.Request, c *caller, rt *Router) *apiErr {
		var in interfaceIn
		if e := simkit.Decode(r, &in, badInput); e != nil {
			return e
		}
		return h(s, w, c, rt, in)
	})
}

// addRouterInterface plugs the router into a subnet, on the subnet's
// gateway address, or into an existing unbound port.
func (s *Server) addRouterInterface(w http.ResponseWriter, c *caller, rt *Router, in interfaceIn) *apiErr {
	var p *Port
	switch {
	case in.SubnetID != "" && in.PortID != "":
		return badRequest("router", "Cannot specify both subnet-id and port-id.")
	case in.SubnetID != "":
		sub, e := subnets.Find(s, c, in.SubnetID)
		if e != nil {
			return e
		}
		if e := cmp.Or(refuse(sub.GatewayIP == "", badRequest("router", "Subnet for router interface must have a gateway IP.")),
			refuse(s.interfaceOn(rt, sub.ID) != nil, badRequest("router", "Router already has a port on subnet "+sub.ID+".")),
			s.checkNeutronQuota(rt.ProjectID, "port", 1)); e != nil {
			return e
		}
		p = &Port{Meta: s.fresh(rt.ProjectID), NetworkID: sub.NetworkID, MAC: newMAC(),
			DeviceID: rt.ID, DeviceOwner: ownerRouterInterface, SecurityGroups: []string{}}
		ip, e := sub.allocate(sub.GatewayIP, p.ID)
		if e != nil {
			return e
		}
		p.FixedIPs = []FixedIP{{sub.ID, ip}}
		s.st.ports[p.ID] = p
	case in.PortID != "":
		var e *apiErr
		if p, e = ports.Find(s, c, in.PortID); e != nil {
			return e
		}
		if e := cmp.Or(refuse(p.DeviceID != "", neutronErr(http.StatusConflict, "PortInUse", "Unable to complete operation on port "+
			p.ID+" for network "+p.NetworkID+". Port already has an attached device "+p.DeviceID+".")),
			refuse(len(p.FixedIPs) == 0, badRequest("router", "Router port must have at least one fixed IP."))); e != nil {
			return e
		}
		p.DeviceID, p.DeviceOwner = rt.ID, ownerRouterInterface
	default:
		return badRequest("router", "Either subnet_id or port_id must be specified.")
	}
	rt.Interfaces = append(rt.Interfaces, p.ID)
	simkit.WriteJSON(w, http.StatusOK, s.interfaceRep(rt, p))
	return nil
}

// removeRouterInterface unplugs it and deletes its port, refusing while a
// floating IP reaches a port on that subnet through the router.
func (s *Server) removeRouterInterface(w http.ResponseWriter, c *caller, rt *Router, in interfaceIn) *apiErr {
	p := s.interfaceOn(rt, in.SubnetID)
	if in.PortID != "" {
		p = nil
		if slices.Contains(rt.Interfaces, in.PortID) {
			p = s.st.ports[in.PortID]
		}
	}
	if p == nil {
		if in.PortID != "" {
			return neutronErr(http.StatusNotFound, "RouterInterfaceNotFound", "Router "+rt.ID+" does not have an interface with id "+in.PortID+".")
		}
		return neutronErr(http.StatusNotFound, "RouterInterfaceNotFoundForSubnet", "Router "+rt.ID+" has no interface on subnet "+in.SubnetID+".")
	}
	for _, f := range where(s.st.fips, func(f *FloatingIP) bool { return f.RouterID == rt.ID && s.st.ports[f.PortID] != nil }) {
		for _, fi := range s.st.ports[f.PortID].FixedIPs {
			if slices.ContainsFunc(p.FixedIPs, func(pi FixedIP) bool { return pi.SubnetID == fi.SubnetID }) {
				return neutronErr(http.StatusConflict, "RouterInterfaceInUseByFloatingIP", "Router interface for subnet "+
					fi.SubnetID+" on router "+rt.ID+" cannot be deleted, as it is required by one or more floating IPs.")
			}
		}
	}
	body := s.interfaceRep(rt, p)
	rt.Interfaces = slices.DeleteFunc(rt.Interfaces, func(id string) bool { return id == p.ID })
	s.removePort(p)
	simkit.WriteJSON(w, http.StatusOK, body)
	return nil
}

// ---- floating IPs

func (s *Server) fipRep(f *FloatingIP) obj {
	status := "DOWN"
	if f.PortID != "" {
		status = "ACTIVE"
	}
	return stamp(obj{"id": f.ID, "floating_ip_address": f.Address, "floating_network_id": f.NetworkID,
		"router_id": orNil(f.RouterID), "port_id": orNil(f.PortID), "fixed_ip_address": orNil(f.FixedIPAddress),
		"status": status, "port_details": nil, "port_forwardings": []obj{},
		"dns_domain": "", "dns_name": "", "qos_policy_id": nil}, &f.Meta)
}

var floatingIPs = neutronCollection("floatingips", "floatingip", "floating IP",
	func(st *state) map[string]*FloatingIP { return st.fips }, (*Server).fipRep)

type fipIn struct {
	attrsIn
	NetworkID      string           `json:"floating_network_id"`
	PortID         nullable[string] `json:"port_id"` // null disassociates
	FixedIPAddress string           `json:"fixed_ip_address"`
	Address        string           `json:"floating_ip_address"`
}

// associate points f at port (""): the port's network must reach f's
// external network through a router with an interface on its subnet.
func (s *Server) associate(c *caller, f *FloatingIP, portID, fixed string) *apiErr {
	if portID == "" {
		f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
		return nil
	}
	p, e := ports.Find(s, c, portID)
	if e != nil {
		return e
	}
	i := slices.IndexFunc(p.FixedIPs, func(x FixedIP) bool { return fixed == "" || x.IPAddress == fixed })
	if i < 0 {
		return badRequest("floatingip", "Port "+portID+" does not have fixed ip "+fixed+".")
	}
	ip := p.FixedIPs[i]
	for _, o := range s.st.fips {
		if o.ID != f.ID && o.PortID == portID && o.FixedIPAddress == ip.IPAddress {
			return neutronErr(http.StatusConflict, "FloatingIPPortAlreadyAssociated", "Cannot associate floating IP "+f.Address+
				" ("+f.ID+") with port "+portID+" using fixed IP "+ip.IPAddress+", as that fixed IP already has a floating IP on external network "+o.NetworkID+".")
		}
	}
	for _, rt := range where(s.st.routers, func(rt *Router) bool { return rt.GatewayNetworkID == f.NetworkID }) {
		if s.interfaceOn(rt, ip.SubnetID) != nil {
			f.PortID, f.FixedIPAddress, f.RouterID = portID, ip.IPAddress, rt.ID
			return nil
		}
	}
	return neutronErr(http.StatusNotFound, "ExternalGatewayForFloatingIPNotFound", "External network "+f.NetworkID+
		" is not reachable from subnet "+ip.SubnetID+". Therefore, cannot associate Port "+portID+" with a Floating IP.")
}

func (s *Server) createFloatingIP(c *caller, fin fipIn) (*FloatingIP, *apiErr) {
	n := s.st.networks[fin.NetworkID]
	if n == nil {
		return nil, nfound("network", fin.NetworkID)
	}
	p, e := fin.project(c)
	if e := cmp.Or(refuse(!n.External, badRequest("floatingip", "Network "+n.ID+" is not a valid external network.")),
		e, s.checkNeutronQuota(p, "floatingip", 1)); e != nil {
		return nil, e
	}
	f := &FloatingIP{Meta: s.fresh(p), NetworkID: n.ID}
	fin.apply(&f.Meta)
	var want *[]fixedIPIn
	if fin.Address != "" {
		if !c.admin {
			return nil, policy("create_floatingip:floating_ip_address")
		}
		want = &[]fixedIPIn{{IPAddress: fin.Address}}
	}
	ips, e := s.allocateIPs(n, "floatingip:"+f.ID, want)
	if e != nil {
		return nil, e
	}
	if len(ips) == 0 {
		return nil, neutronErr(http.StatusConflict, "IpAddressGenerationFailure", "No more IP addresses available on network "+n.ID+".")
	}
	f.Address, f.allocSubnet = ips[0].IPAddress, ips[0].SubnetID
	if fin.PortID.Set {
		if e := s.associate(c, f, fin.PortID.V, fin.FixedIPAddress); e != nil {
			s.st.subnets[f.allocSubnet].release(f.Address)
			return nil, e
		}
	}
	s.st.fips[f.ID] = f
	return f, nil
}

func (s *Server) deleteFloatingIP(c *caller, f *FloatingIP) *apiErr {
	if sub := s.st.subnets[f.allocSubnet]; sub != nil {
		sub.release(f.Address)
	}
	delete(s.st.fips, f.ID)
	return nil
}
