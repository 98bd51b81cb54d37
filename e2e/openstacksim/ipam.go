package openstacksim

import (
	"cmp"
	"encoding/binary"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// subnetSpec is a subnet as asked for.
type subnetSpec struct {
	name, projectID, networkID, cidr string
	// gateway nil: the first host; "": none.
	gateway *string
	pools   []Pool // nil: the whole CIDR less network, broadcast and gateway
	dns     []string
	dhcp    bool
}

func badInput(msg string) *apiErr {
	return neutronErr(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: "+msg)
}

// hostRange is the first and last usable address of p, an IPv4 prefix:
// without the network and broadcast addresses but on a /31 or /32; none
// for what is not an IPv4 prefix.
func hostRange(p netip.Prefix) (netip.Addr, netip.Addr) {
	if !p.Addr().Is4() {
		return netip.Addr{}, netip.Addr{}
	}
	a := p.Masked().Addr().As4()
	first := netip.AddrFrom4(a)
	binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])|(1<<(32-p.Bits())-1))
	last := netip.AddrFrom4(a)
	if p.Bits() < 31 {
		return first.Next(), last.Prev()
	}
	return first, last
}

// parsePools checks pools against the subnet as Neutron does: inside the
// CIDR, start ≤ end, no overlap, not holding the gateway.
func parsePools(prefix netip.Prefix, gateway string, pools []Pool) ([][2]netip.Addr, *apiErr) {
	var out [][2]netip.Addr
	for _, p := range pools {
		s, err1 := netip.ParseAddr(p.Start)
		e, err2 := netip.ParseAddr(p.End)
		bad := badInput("Invalid allocation pool " + p.Start + "-" + p.End + ".")
		if err := cmp.Or(refuse(err1 != nil || err2 != nil, bad), refuse(!prefix.Contains(s) || !prefix.Contains(e),
			neutronErr(http.StatusBadRequest, "OutOfBoundsAllocationPool",
				"The allocation pool "+p.Start+"-"+p.End+" spans beyond the subnet cidr "+prefix.String()+".")),
			refuse(e.Less(s), bad)); err != nil {
			return nil, err
		}
		for _, o := range out {
			if !e.Less(o[0]) && !o[1].Less(s) {
				return nil, neutronErr(http.StatusBadRequest, "OverlappingAllocationPools",
					"Found overlapping allocation pools: "+p.Start+"-"+p.End+" and "+o[0].String()+"-"+o[1].String()+" for subnet "+prefix.String()+".")
			}
		}
		if g, err := netip.ParseAddr(gateway); err == nil && !g.Less(s) && !e.Less(g) {
			return nil, neutronErr(http.StatusConflict, "GatewayConflictWithAllocationPools",
				"Gateway ip "+gateway+" conflicts with allocation pool "+p.Start+"-"+p.End+".")
		}
		out = append(out, [2]netip.Addr{s, e})
	}
	return out, nil
}

// newSubnet validates spec and stores the subnet. Call with s.mu held.
func (st *state) newSubnet(spec subnetSpec, now time.Time) (*Subnet, *apiErr) {
	prefix, err := netip.ParsePrefix(spec.cidr)
	prefix = prefix.Masked()
	overlap := simkit.FindBy(st.subnets, func(o *Subnet) bool { return o.NetworkID == spec.networkID && o.prefix.Overlaps(prefix) })
	first, last := hostRange(prefix)
	gw := first.String()
	simkit.Set(&gw, spec.gateway)
	g, gerr := netip.ParseAddr(gw)
	if e := cmp.Or(refuse(err != nil, badInput("'"+spec.cidr+"' is not a valid IP subnet.")),
		refuse(!prefix.Addr().Is4(), badInput("the simulator serves IPv4 subnets only.")),
		refuse(overlap != nil, badInput("Requested subnet with cidr: "+prefix.String()+" for network: "+spec.networkID+
			" overlaps with another subnet.")),
		refuse(gw != "" && (gerr != nil || !prefix.Contains(g)), badInput("Gateway is not valid on subnet."))); e != nil {
		return nil, e
	}
	pools := spec.pools
	if pools == nil {
		switch {
		case gw == "" || g.Less(first) || last.Less(g):
			pools = []Pool{{first.String(), last.String()}}
		default:
			if first.Less(g) {
				pools = append(pools, Pool{first.String(), g.Prev().String()})
			}
			if g.Less(last) {
				pools = append(pools, Pool{g.Next().String(), last.String()})
			}
		}
	}
	if _, e := parsePools(prefix, gw, pools); e != nil {
		return nil, e
	}
	sub := &Subnet{Meta: Meta{ID: simkit.NewUUID(), Name: spec.name, ProjectID: spec.projectID, Created: now, seq: st.next()},
		NetworkID: spec.networkID, CIDR: prefix.String(), GatewayIP: gw, Pools: pools, DNSNameservers: append([]string{}, spec.dns...),
		EnableDHCP: spec.dhcp, Allocated: map[string]string{}, prefix: prefix}
	st.subnets[sub.ID] = sub
	return sub, nil
}

// setPools replaces the pools of sub, refusing pools that leave out an
// address in use inside the old pools, so a narrowed pool never strands
// an allocation made from it.
func (sub *Subnet) setPools(pools []Pool) *apiErr {
	parsed, e := parsePools(sub.prefix, sub.GatewayIP, pools)
	if e != nil {
		return e
	}
	for ip := range sub.Allocated {
		a := netip.MustParseAddr(ip)
		if !sub.inPools(a) || ip == sub.GatewayIP {
			continue
		}
		if !slices.ContainsFunc(parsed, func(p [2]netip.Addr) bool { return !a.Less(p[0]) && !p[1].Less(a) }) {
			return neutronErr(http.StatusConflict, "SubnetInUse", "Unable to complete operation on subnet "+sub.ID+
				": IP address "+ip+" is allocated to port "+sub.Allocated[ip]+" and outside the new allocation pools.")
		}
	}
	sub.Pools = pools
	return nil
}

func (sub *Subnet) inPools(a netip.Addr) bool {
	return slices.ContainsFunc(sub.Pools, func(p Pool) bool {
		return !a.Less(netip.MustParseAddr(p.Start)) && !netip.MustParseAddr(p.End).Less(a)
	})
}

// allocate takes want (any free pool address when empty) for portID.
func (sub *Subnet) allocate(want, portID string) (string, *apiErr) {
	if want != "" {
		// The network address is no host's, as in Neutron.
		if a, err := netip.ParseAddr(want); err != nil || !sub.prefix.Contains(a) || a == sub.prefix.Masked().Addr() {
			return "", neutronErr(http.StatusBadRequest, "InvalidIpForSubnet",
				"IP address "+want+" is not a valid IP for the specified subnet.")
		}
		if _, used := sub.Allocated[want]; used {
			return "", neutronErr(http.StatusConflict, "IpAddressAlreadyAllocated",
				"IP address "+want+" already allocated in subnet "+sub.ID)
		}
		sub.Allocated[want] = portID
		return want, nil
	}
	for _, p := range sub.Pools {
		for a := netip.MustParseAddr(p.Start); !netip.MustParseAddr(p.End).Less(a); a = a.Next() {
			ip := a.String()
			if _, used := sub.Allocated[ip]; !used && ip != sub.GatewayIP {
				sub.Allocated[ip] = portID
				return ip, nil
			}
		}
	}
	return "", neutronErr(http.StatusConflict, "IpAddressGenerationFailure",
		"No more IP addresses available on network "+sub.NetworkID+".")
}

func (sub *Subnet) release(ip string) { delete(sub.Allocated, ip) }
