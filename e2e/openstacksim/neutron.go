package openstacksim

import (
	"cmp"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Neutron device owners the simulator gives meaning to.
const (
	ownerRouterInterface = "network:router_interface"
	ownerRouterGateway   = "network:router_gateway"
)

// neutron runs h as a Neutron call, making the default security group of
// a project whose groups are listed first (ensureListedDefaultSG).
func (s *Server) neutron(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		s.ensureListedDefaultSG(r, c)
		return h(w, r, c)
	}
}

// ensureListedDefaultSG makes the default security group of the project
// whose groups a list asks for (the first project_id or tenant_id filter,
// else the caller's), as Neutron's get_security_groups does without asking
// Keystone: a list filtered on a deleted project makes its group again.
func (s *Server) ensureListedDefaultSG(r *http.Request, c *caller) {
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/security-groups") {
		return
	}
	q := r.URL.Query()
	s.ensureDefaultSG(append(append(q["project_id"], q["tenant_id"]...), c.projectID)[0])
}

// nfound is Neutron's 404 for the kind of resource ("security group"),
// whose NeutronError type is the kind's words run together
// (SecurityGroupNotFound).
func nfound(kind, id string) *apiErr {
	typ := ""
	for w := range strings.FieldsSeq(kind) {
		typ += strings.ToUpper(w[:1]) + w[1:]
	}
	return neutronErr(http.StatusNotFound, typ+"NotFound", strings.ToUpper(kind[:1])+kind[1:]+" "+id+" could not be found.")
}

func policy(rule string) *apiErr {
	return neutronErr(http.StatusForbidden, "PolicyNotAuthorized", "rule:"+rule+" is disallowed by policy")
}

// owns says whether c may see and change what project owns.
func (c *caller) owns(project string) bool { return c.admin || project == c.projectID }

// project is the project a create acts for: the body's
// project_id/tenant_id (admin only when not the caller's) or the caller's.
func (in attrsIn) project(c *caller) (string, *apiErr) {
	p := cmp.Or(in.ProjectID, in.TenantID)
	if p == "" {
		return c.projectID, nil
	}
	if p != c.projectID && !c.admin {
		return "", neutronBad("Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
	}
	return p, nil
}

// stamp adds the standard attributes every Neutron resource has.
func stamp(o obj, m *Meta) obj {
	o["tenant_id"], o["project_id"] = m.ProjectID, m.ProjectID
	o["created_at"], o["updated_at"] = fmtTime(m.Created), fmtTime(m.Created)
	o["revision_number"], o["description"] = 1, m.Description
	o["tags"] = []string{}
	return o
}

// fresh is the Meta of a new object of project.
func (s *Server) fresh(project string) Meta {
	return Meta{ID: simkit.NewUUID(), ProjectID: project, Created: s.now(), seq: s.st.next()}
}

// attrsIn are the standard attributes a create or update may set.
type attrsIn struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	ProjectID   string  `json:"project_id"`
	TenantID    string  `json:"tenant_id"`
}

// apply sets what in carries.
func (in attrsIn) apply(m *Meta) {
	simkit.Set(&m.Name, in.Name)
	simkit.Set(&m.Description, in.Description)
}

// ---- networks

func (s *Server) netRep(n *Network) obj {
	subs := simkit.Map(where(s.st.subnets, func(sub *Subnet) bool { return sub.NetworkID == n.ID }),
		func(sub *Subnet) string { return sub.ID })
	return stamp(obj{"id": n.ID, "name": n.Name, "admin_state_up": true, "status": "ACTIVE", "subnets": subs,
		"shared": n.Shared, "router:external": n.External, "mtu": n.MTU, "port_security_enabled": true,
		"availability_zones": []string{"nova"}, "availability_zone_hints": []string{}, "ipv4_address_scope": nil,
		"ipv6_address_scope": nil, "is_default": false}, &n.Meta)
}

// networks are every project's networks; shared and external ones are
// everyone's to see.
var networks = func() *collection[Network] {
	col := neutronCollection("networks", "network", "network",
		func(st *state) map[string]*Network { return st.networks }, (*Server).netRep)
	col.Visible = func(_ *Server, c *caller, n *Network) bool { return c.owns(n.ProjectID) || n.Shared || n.External }
	return col
}()

type networkIn struct {
	attrsIn
	Shared   *bool `json:"shared"`
	External *bool `json:"router:external"`
	MTU      int   `json:"mtu"`
}

func (s *Server) createNetwork(c *caller, nin networkIn) (*Network, *apiErr) {
	p, e := nin.project(c)
	n := &Network{MTU: cmp.Or(max(nin.MTU, 0), 1450)}
	simkit.Set(&n.Shared, nin.Shared)
	simkit.Set(&n.External, nin.External)
	if e := cmp.Or(e, refuse((n.Shared || n.External) && !c.admin, policy("create_network:shared")),
		s.checkNeutronQuota(p, "network", 1)); e != nil {
		return nil, e
	}
	s.ensureDefaultSG(p)
	n.Meta = s.fresh(p)
	nin.apply(&n.Meta)
	s.st.networks[n.ID] = n
	return n, nil
}

// deleteNetwork refuses while a port is on the network (409 NetworkInUse)
// and takes the network's subnets with it, as Neutron.
func (s *Server) deleteNetwork(c *caller, n *Network) *apiErr {
	id := n.ID
	inUse := simkit.FindBy(s.st.ports, func(p *Port) bool { return p.NetworkID == id }) != nil
	if e := cmp.Or(refuse(!c.owns(n.ProjectID) || s.st.builtin[n], policy("delete_network")),
		refuse(inUse, neutronErr(http.StatusConflict, "NetworkInUse", "Unable to complete operation on network "+id+
			". There are one or more ports still in use on the network."))); e != nil {
		return e
	}
	maps.DeleteFunc(s.st.subnets, func(_ string, sub *Subnet) bool { return sub.NetworkID == id })
	delete(s.st.networks, id)
	return nil
}

// ---- subnets

func (s *Server) subnetRep(sub *Subnet) obj {
	pools := simkit.Map(sub.Pools, func(p Pool) obj { return obj{"start": p.Start, "end": p.End} })
	return stamp(obj{"id": sub.ID, "name": sub.Name, "network_id": sub.NetworkID, "cidr": sub.CIDR,
		"gateway_ip": orNil(sub.GatewayIP), "ip_version": 4, "enable_dhcp": sub.EnableDHCP, "allocation_pools": pools,
		"dns_nameservers": slices.Clone(sub.DNSNameservers), "host_routes": []obj{}, "ipv6_address_mode": nil,
		"ipv6_ra_mode": nil, "subnetpool_id": nil, "service_types": []string{}, "dns_publish_fixed_ip": false},
		&sub.Meta)
}

// subnets are seen with their network.
var subnets = func() *collection[Subnet] {
	col := neutronCollection("subnets", "subnet", "subnet",
		func(st *state) map[string]*Subnet { return st.subnets }, (*Server).subnetRep)
	col.Visible = func(s *Server, c *caller, sub *Subnet) bool { return networks.Lookup(s, c, sub.NetworkID) != nil }
	return col
}()

type subnetIn struct {
	attrsIn
	NetworkID  string           `json:"network_id"`
	CIDR       string           `json:"cidr"`
	IPVersion  int              `json:"ip_version"`
	GatewayIP  nullable[string] `json:"gateway_ip"`
	Pools      *[]Pool          `json:"allocation_pools"`
	DNS        *[]string        `json:"dns_nameservers"`
	EnableDHCP *bool            `json:"enable_dhcp"`
}

// gateway reads gateway_ip: absent nil, null "", else the address.
func (in subnetIn) gateway() *string {
	if !in.GatewayIP.Set {
		return nil
	}
	return &in.GatewayIP.V
}

func (s *Server) createSubnet(c *caller, sin subnetIn) (*Subnet, *apiErr) {
	n, e := networks.Find(s, c, sin.NetworkID)
	if e != nil {
		return nil, e
	}
	p, e := sin.project(c)
	if e := cmp.Or(e, refuse(!c.admin && n.ProjectID != p, policy("create_subnet:network")),
		refuse(sin.IPVersion != 0 && sin.IPVersion != 4, badInput("the simulator serves IPv4 subnets only.")),
		s.checkNeutronQuota(p, "subnet", 1)); e != nil {
		return nil, e
	}
	spec := subnetSpec{projectID: p, networkID: n.ID, cidr: sin.CIDR, gateway: sin.gateway(), dhcp: true}
	simkit.Set(&spec.pools, sin.Pools)
	simkit.Set(&spec.dns, sin.DNS)
	simkit.Set(&spec.dhcp, sin.EnableDHCP)
	sub, e := s.st.newSubnet(spec, s.now())
	if e != nil {
		return nil, e
	}
	sin.apply(&sub.Meta)
	return sub, nil
}

func (s *Server) updateSubnet(c *caller, sub *Subnet, sin subnetIn) *apiErr {
	gw := sub.GatewayIP
	simkit.Set(&gw, sin.gateway())
	a, err := netip.ParseAddr(gw)
	moved := gw != sub.GatewayIP && gw != ""
	if e := cmp.Or(refuse(!c.owns(sub.ProjectID), policy("update_subnet")),
		refuse(sin.CIDR != "" && sin.CIDR != sub.CIDR, badInput("Cannot update read-only attribute cidr")),
		refuse(moved && (err != nil || !sub.prefix.Contains(a)), badInput("Gateway is not valid on subnet.")),
		refuse(moved && sub.inPools(a), neutronErr(http.StatusConflict, "GatewayConflictWithAllocationPools",
			"Gateway ip "+gw+" conflicts with allocation pool."))); e != nil {
		return e
	}
	sub.GatewayIP = gw
	if sin.Pools != nil {
		if e := sub.setPools(*sin.Pools); e != nil {
			return e
		}
	}
	sin.apply(&sub.Meta)
	simkit.Set(&sub.DNSNameservers, sin.DNS)
	simkit.Set(&sub.EnableDHCP, sin.EnableDHCP)
	return nil
}

func (s *Server) deleteSubnet(c *caller, sub *Subnet) *apiErr {
	// Floating IPs allocate in a subnet too, but only ports keep it in use.
	inUse := slices.ContainsFunc(slices.Collect(maps.Values(sub.Allocated)), func(pid string) bool { return s.st.ports[pid] != nil })
	if e := cmp.Or(refuse(!c.owns(sub.ProjectID) || s.st.builtin[sub], policy("delete_subnet")),
		refuse(inUse, neutronErr(http.StatusConflict, "SubnetInUse", "Unable to complete operation on subnet "+sub.ID+
			": One or more ports have an IP allocation from this subnet."))); e != nil {
		return e
	}
	delete(s.st.subnets, sub.ID)
	return nil
}

// ---- ports

// fixedIPsRep are a port's fixed_ips, as ports and router gateways show them.
func fixedIPsRep(ips []FixedIP) []obj {
	return simkit.Map(ips, func(f FixedIP) obj { return obj{"subnet_id": f.SubnetID, "ip_address": f.IPAddress} })
}

func (s *Server) portRep(p *Port) obj {
	status := "DOWN"
	if p.DeviceID != "" {
		status = "ACTIVE"
	}
	return stamp(obj{"id": p.ID, "name": p.Name, "network_id": p.NetworkID, "mac_address": p.MAC,
		"admin_state_up": true, "status": status, "device_id": p.DeviceID, "device_owner": p.DeviceOwner,
		"fixed_ips": fixedIPsRep(p.FixedIPs), "security_groups": slices.Clone(p.SecurityGroups), "allowed_address_pairs": []obj{},
		"extra_dhcp_opts": []obj{}, "port_security_enabled": p.PortSecurity, "binding:vnic_type": "normal",
		"propagate_uplink_status": false}, &p.Meta)
}

var ports = func() *collection[Port] {
	col := neutronCollection("ports", "port", "port",
		func(st *state) map[string]*Port { return st.ports }, (*Server).portRep)
	col.Filters = fixedIPsFilter
	return col
}()

// fixedIPsFilter is Neutron's ?fixed_ips=ip_address=…&fixed_ips=subnet_id=…:
// a port matches when one of its addresses has every given key.
var fixedIPsFilter = map[string]simkit.Filter{
	"fixed_ips": func(o obj, vals []string) bool {
		return slices.ContainsFunc(o["fixed_ips"].([]obj), func(f obj) bool {
			return !slices.ContainsFunc(vals, func(v string) bool {
				k, want, _ := strings.Cut(v, "=")
				return simkit.Scalar(f[k]) != want
			})
		})
	},
}

type fixedIPIn struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

type portIn struct {
	attrsIn
	NetworkID      string       `json:"network_id"`
	FixedIPs       *[]fixedIPIn `json:"fixed_ips"`
	SecurityGroups *[]string    `json:"security_groups"`
	DeviceID       *string      `json:"device_id"`
	DeviceOwner    *string      `json:"device_owner"`
	PortSecurity   *bool        `json:"port_security_enabled"`
}

// allocateIPs takes the addresses asked for on network n for port id:
// none asked: one from the network's first subnet with a free address.
// On error nothing stays allocated.
func (s *Server) allocateIPs(n *Network, id string, want *[]fixedIPIn) (out []FixedIP, e *apiErr) {
	subs := where(s.st.subnets, func(sub *Subnet) bool { return sub.NetworkID == n.ID })
	defer func() {
		if e != nil {
			s.releaseIPs(out)
			out = nil
		}
	}()
	if want == nil {
		var last *apiErr // nil when the network has no subnet
		for _, sub := range subs {
			ip, e := sub.allocate("", id)
			if e == nil {
				return []FixedIP{{sub.ID, ip}}, nil
			}
			last = e
		}
		return nil, last
	}
	for _, f := range *want {
		var sub *Subnet
		switch {
		case f.SubnetID != "":
			sub = s.st.subnets[f.SubnetID]
			if sub == nil || sub.NetworkID != n.ID {
				return out, badInput("Failed to create port on network " + n.ID + ", because fixed_ips included invalid subnet " + f.SubnetID + ".")
			}
		case f.IPAddress != "":
			a, err := netip.ParseAddr(f.IPAddress)
			for _, x := range subs {
				if err == nil && x.prefix.Contains(a) {
					sub = x
				}
			}
			if sub == nil {
				return out, neutronErr(http.StatusBadRequest, "InvalidIpForNetwork",
					"IP address "+f.IPAddress+" is not a valid IP for any of the subnets on the specified network.")
			}
		default:
			return out, badInput("IP allocation requires subnet_id or ip_address")
		}
		ip, e := sub.allocate(f.IPAddress, id)
		if e != nil {
			return out, e
		}
		out = append(out, FixedIP{sub.ID, ip})
	}
	return out, nil
}

func (s *Server) releaseIPs(ips []FixedIP) {
	for _, f := range ips {
		if sub := s.st.subnets[f.SubnetID]; sub != nil {
			sub.release(f.IPAddress)
		}
	}
}

// resolveGroups checks group ids against what project may use.
func (s *Server) resolveGroups(c *caller, project string, ids []string) ([]string, *apiErr) {
	out := []string{}
	for _, id := range ids {
		g := s.st.secGroups[id]
		if g == nil || !c.admin && g.ProjectID != project {
			return nil, nfound("security group", id)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// newPort makes a port on n for project; Nova uses it too.
func (s *Server) newPort(c *caller, n *Network, project string, in portIn) (*Port, *apiErr) {
	if e := s.checkNeutronQuota(project, "port", 1); e != nil {
		return nil, e
	}
	s.ensureDefaultSG(project)
	p := &Port{Meta: s.fresh(project), NetworkID: n.ID, MAC: newMAC(), PortSecurity: true}
	simkit.Set(&p.DeviceID, in.DeviceID)
	simkit.Set(&p.DeviceOwner, in.DeviceOwner)
	simkit.Set(&p.PortSecurity, in.PortSecurity)
	in.apply(&p.Meta)
	switch {
	case in.SecurityGroups != nil:
		ids, e := s.resolveGroups(c, project, *in.SecurityGroups)
		if e != nil {
			return nil, e
		}
		p.SecurityGroups = ids
	case p.PortSecurity && !strings.HasPrefix(p.DeviceOwner, "network:"):
		p.SecurityGroups = []string{s.defaultSG(project).ID}
	default:
		p.SecurityGroups = []string{}
	}
	ips, e := s.allocateIPs(n, p.ID, in.FixedIPs)
	if e != nil {
		return nil, e
	}
	p.FixedIPs = ips
	s.st.ports[p.ID] = p
	return p, nil
}

func (s *Server) createPort(c *caller, in portIn) (*Port, *apiErr) {
	if in.NetworkID == "" {
		// As Neutron: a port is made on a network, never found from its
		// fixed_ips' subnet.
		return nil, neutronBad("Failed to parse request. Required attribute 'network_id' not specified")
	}
	n, e := networks.Find(s, c, in.NetworkID)
	if e != nil {
		return nil, e
	}
	project, e := in.project(c)
	if e := cmp.Or(e, refuse(!c.admin && n.ProjectID != project && !n.Shared, policy("create_port:network"))); e != nil {
		return nil, e
	}
	return s.newPort(c, n, project, in)
}

func (s *Server) updatePort(c *caller, p *Port, pin portIn) *apiErr {
	if pin.SecurityGroups != nil {
		ids, e := s.resolveGroups(c, p.ProjectID, *pin.SecurityGroups)
		if e != nil {
			return e
		}
		p.SecurityGroups = ids
	}
	if pin.FixedIPs != nil {
		// Keep what stays, allocate what is new, release the rest.
		old := p.FixedIPs
		s.releaseIPs(old)
		ips, e := s.allocateIPs(s.st.networks[p.NetworkID], p.ID, pin.FixedIPs)
		if e != nil {
			for _, f := range old {
				s.st.subnets[f.SubnetID].Allocated[f.IPAddress] = p.ID
			}
			return e
		}
		p.FixedIPs = ips
	}
	pin.apply(&p.Meta)
	simkit.Set(&p.DeviceID, pin.DeviceID)
	simkit.Set(&p.DeviceOwner, pin.DeviceOwner)
	simkit.Set(&p.PortSecurity, pin.PortSecurity)
	return nil
}

func (s *Server) deletePort(c *caller, p *Port) *apiErr {
	if p.DeviceOwner == ownerRouterInterface || p.DeviceOwner == ownerRouterGateway {
		return neutronErr(http.StatusConflict, "L3PortInUse", "Port "+p.ID+" has owner "+p.DeviceOwner+
			" and therefore cannot be deleted directly via the port API.")
	}
	s.removePort(p)
	return nil
}

// removePort deletes p, releasing its addresses and disassociating its
// floating IPs.
func (s *Server) removePort(p *Port) {
	s.releaseIPs(p.FixedIPs)
	for _, f := range s.st.fips {
		if f.PortID == p.ID {
			f.PortID, f.FixedIPAddress, f.RouterID = "", "", ""
		}
	}
	delete(s.st.ports, p.ID)
}

// ---- security groups and rules

func (s *Server) ruleRep(rl *Rule) obj {
	o := obj{"id": rl.ID, "security_group_id": rl.SecurityGroupID, "direction": rl.Direction,
		"ethertype": rl.EtherType, "protocol": orNil(rl.Protocol), "port_range_min": nil, "port_range_max": nil,
		"remote_ip_prefix": orNil(rl.RemoteIPPrefix), "remote_group_id": orNil(rl.RemoteGroupID),
		"remote_address_group_id": nil, "normalized_cidr": orNil(rl.RemoteIPPrefix)}
	if rl.PortRangeMin != 0 || rl.PortRangeMax != 0 {
		o["port_range_min"], o["port_range_max"] = rl.PortRangeMin, rl.PortRangeMax
	}
	return stamp(o, &rl.Meta)
}

func (s *Server) sgRep(g *SecurityGroup) obj {
	rules := simkit.Map(g.Rules, func(rl Rule) obj { return s.ruleRep(&rl) })
	return stamp(obj{"id": g.ID, "name": g.Name, "security_group_rules": rules, "stateful": true, "shared": false},
		&g.Meta)
}

func (s *Server) defaultSG(project string) *SecurityGroup {
	return simkit.FindBy(s.st.secGroups, func(g *SecurityGroup) bool { return g.ProjectID == project && g.Default })
}

// newRule is a rule of g, Created with g.
func (s *Server) newRule(g *SecurityGroup, direction, etherType string) Rule {
	return Rule{Meta: Meta{ID: simkit.NewUUID(), ProjectID: g.ProjectID, Created: g.Created, seq: s.st.next()},
		SecurityGroupID: g.ID, Direction: direction, EtherType: etherType}
}

// ensureDefaultSG makes project's "default" group as Neutron does: ingress
// from its own members and egress anywhere, for IPv4 and IPv6.
func (s *Server) ensureDefaultSG(project string) {
	if project == "" || s.defaultSG(project) != nil {
		return
	}
	g := &SecurityGroup{Meta: s.fresh(project), Default: true}
	g.Name, g.Description = "default", "Default security group"
	for _, et := range []string{"IPv4", "IPv6"} {
		in := s.newRule(g, "ingress", et)
		in.RemoteGroupID = g.ID
		g.Rules = append(g.Rules, in, s.newRule(g, "egress", et))
	}
	s.st.secGroups[g.ID] = g
}

var secGroups = neutronCollection("security_groups", "security_group", "security group",
	func(st *state) map[string]*SecurityGroup { return st.secGroups }, (*Server).sgRep)

// createSecGroup makes a group with Neutron's two egress rules.
func (s *Server) createSecGroup(c *caller, in attrsIn) (*SecurityGroup, *apiErr) {
	p, e := in.project(c)
	if e != nil {
		return nil, e
	}
	s.ensureDefaultSG(p)
	if e := cmp.Or(refuse(in.Name != nil && *in.Name == "default", neutronErr(http.StatusConflict,
		"SecurityGroupDefaultAlreadyExists", "Default security group already exists.")),
		s.checkNeutronQuota(p, "security_group", 1), s.checkNeutronQuota(p, "security_group_rule", 2)); e != nil {
		return nil, e
	}
	g := &SecurityGroup{Meta: s.fresh(p)}
	in.apply(&g.Meta)
	g.Rules = []Rule{s.newRule(g, "egress", "IPv4"), s.newRule(g, "egress", "IPv6")}
	s.st.secGroups[g.ID] = g
	return g, nil
}

func (s *Server) deleteSecGroup(c *caller, g *SecurityGroup) *apiErr {
	id := g.ID
	inUse := simkit.FindBy(s.st.ports, func(p *Port) bool { return slices.Contains(p.SecurityGroups, id) }) != nil
	if e := cmp.Or(refuse(g.Default && !c.admin, neutronErr(http.StatusConflict, "SecurityGroupCannotRemoveDefault",
		"Insufficient rights for removing default security group.")),
		refuse(inUse, neutronErr(http.StatusConflict, "SecurityGroupInUse", "Security Group "+id+" in use."))); e != nil {
		return e
	}
	delete(s.st.secGroups, id)
	for _, o := range s.st.secGroups {
		o.Rules = slices.DeleteFunc(o.Rules, func(rl Rule) bool { return rl.RemoteGroupID == id })
	}
	return nil
}

// rules are the rules of every group, seen with their group's project.
var rules = neutronCollection("security_group_rules", "security_group_rule", "security group rule",
	func(st *state) map[string]*Rule {
		m := map[string]*Rule{}
		for _, g := range st.secGroups {
			for i := range g.Rules {
				m[g.Rules[i].ID] = &g.Rules[i]
			}
		}
		return m
	}, (*Server).ruleRep)

type ruleIn struct {
	SecurityGroupID string  `json:"security_group_id"`
	Direction       string  `json:"direction"`
	EtherType       string  `json:"ethertype"`
	Protocol        *string `json:"protocol"`
	PortRangeMin    *int    `json:"port_range_min"`
	PortRangeMax    *int    `json:"port_range_max"`
	RemoteIPPrefix  *string `json:"remote_ip_prefix"`
	RemoteGroupID   *string `json:"remote_group_id"`
	Description     string  `json:"description"`
}

func (s *Server) createRule(c *caller, rin ruleIn) (*Rule, *apiErr) {
	g, e := secGroups.Find(s, c, rin.SecurityGroupID)
	if e != nil {
		return nil, e
	}
	rl := Rule{Meta: Meta{ID: simkit.NewUUID(), ProjectID: g.ProjectID, Description: rin.Description},
		SecurityGroupID: g.ID, Direction: rin.Direction, EtherType: cmp.Or(rin.EtherType, "IPv4")}
	if rin.Protocol != nil {
		rl.Protocol = strings.ToLower(*rin.Protocol)
	}
	simkit.Set(&rl.PortRangeMin, rin.PortRangeMin)
	simkit.Set(&rl.PortRangeMax, rin.PortRangeMax)
	remote := ""
	simkit.Set(&remote, rin.RemoteIPPrefix)
	prefix, err := netip.ParsePrefix(remote)
	if rin.RemoteIPPrefix != nil {
		rl.RemoteIPPrefix = prefix.Masked().String()
	}
	simkit.Set(&rl.RemoteGroupID, rin.RemoteGroupID)
	ranged := rin.PortRangeMin != nil || rin.PortRangeMax != nil
	if e := cmp.Or(
		refuse(rl.Direction != "ingress" && rl.Direction != "egress", badInput("direction "+rin.Direction+" is not in [ingress, egress].")),
		refuse(rl.EtherType != "IPv4" && rl.EtherType != "IPv6", badInput("ethertype "+rin.EtherType+" is not in [IPv4, IPv6].")),
		refuse(ranged && rl.Protocol == "", neutronErr(http.StatusBadRequest, "SecurityGroupProtocolRequiredWithPorts",
			"Must also specify protocol if port range is given.")),
		refuse((rl.Protocol == "tcp" || rl.Protocol == "udp") && rl.PortRangeMin > rl.PortRangeMax && rin.PortRangeMax != nil,
			neutronErr(http.StatusBadRequest, "SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")),
		refuse(rin.RemoteIPPrefix != nil && rin.RemoteGroupID != nil, neutronErr(http.StatusBadRequest,
			"SecurityGroupRemoteGroupAndRemoteIpPrefix", "Only remote_ip_prefix or remote_group_id may be provided.")),
		refuse(rin.RemoteIPPrefix != nil && err != nil, badInput("'"+remote+"' is not a valid IP subnet.")),
		refuse(rin.RemoteGroupID != nil && s.st.secGroups[rl.RemoteGroupID] == nil, nfound("security group", rl.RemoteGroupID)),
	); e != nil {
		return nil, e
	}
	// A rule is a duplicate when all but its Meta is the same.
	same := func(x Rule) Rule { x.Meta = Meta{}; return x }
	for _, o := range g.Rules {
		if same(o) == same(rl) {
			return nil, neutronErr(http.StatusConflict, "SecurityGroupRuleExists", "Security group rule already exists. Rule id is "+o.ID+".")
		}
	}
	if e := s.checkNeutronQuota(g.ProjectID, "security_group_rule", 1); e != nil {
		return nil, e
	}
	rl.seq, rl.Created = s.st.next(), s.now()
	g.Rules = append(g.Rules, rl)
	return &g.Rules[len(g.Rules)-1], nil
}

func (s *Server) deleteRule(_ *caller, rl *Rule) *apiErr {
	g := s.st.secGroups[rl.SecurityGroupID]
	g.Rules = slices.DeleteFunc(g.Rules, func(o Rule) bool { return o.ID == rl.ID })
	return nil
}
