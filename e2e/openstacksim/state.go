package openstacksim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Project is a Keystone project.
type Project struct {
	ID          string
	Name        string
	DomainID    string
	Description string
	Enabled     bool
	Created     time.Time
	seq         uint64
}

// User is a Keystone user. The password is never shown.
type User struct {
	ID               string
	Name             string
	DomainID         string
	DefaultProjectID string
	Description      string
	Enabled          bool
	password         string
	seq              uint64
}

// Role is a Keystone role.
type Role struct {
	ID   string
	Name string
}

// AppCredential is a Keystone application credential: it authenticates as
// its user, scoped to its project, with the user's roles there.
type AppCredential struct {
	ID        string
	Name      string
	UserID    string
	ProjectID string
	Secret    string `json:"-"`
}

type token struct {
	id        string
	userID    string
	projectID string // "" unscoped
	methods   []string
	issued    time.Time
	expires   time.Time
	appCredID string
}

// Meta is what every Neutron resource, Nova server and Cinder volume has:
// id, name, project, description and creation time.
type Meta struct {
	ID          string
	Name        string
	ProjectID   string
	Description string
	Created     time.Time
	seq         uint64
}

func (m *Meta) meta() *Meta { return m }

// Network is a Neutron network.
type Network struct {
	Meta
	External bool
	Shared   bool
	MTU      int
}

// Pool is an allocation pool, inclusive.
type Pool struct{ Start, End string }

// Subnet is a Neutron subnet; Allocated maps each IP in use to its port.
type Subnet struct {
	Meta
	NetworkID      string
	CIDR           string
	GatewayIP      string // "" none
	Pools          []Pool
	DNSNameservers []string
	EnableDHCP     bool
	Allocated      map[string]string // ip → port id
	prefix         netip.Prefix
}

// FixedIP is one address of a port.
type FixedIP struct{ SubnetID, IPAddress string }

// Port is a Neutron port.
type Port struct {
	Meta
	NetworkID      string
	MAC            string
	FixedIPs       []FixedIP
	SecurityGroups []string // ids
	DeviceID       string
	DeviceOwner    string
	PortSecurity   bool
	// novaCreated: made by Nova for a networks[{uuid}] entry, deleted with
	// its server.
	novaCreated bool
}

// Rule is a security group rule.
type Rule struct {
	Meta
	SecurityGroupID string
	Direction       string // ingress, egress
	EtherType       string // IPv4, IPv6
	Protocol        string // "" any
	PortRangeMin    int    // 0 none
	PortRangeMax    int
	RemoteIPPrefix  string
	RemoteGroupID   string
}

// SecurityGroup is a Neutron security group with its rules.
type SecurityGroup struct {
	Meta
	// Default is the group Neutron makes for every project; it outlives
	// the project unless deleted by an admin.
	Default bool
	Rules   []Rule
}

// Router is a Neutron router. GatewayNetworkID is "" without a gateway;
// Interfaces are its router_interface port ids.
type Router struct {
	Meta
	GatewayNetworkID string
	GatewayPortID    string
	Interfaces       []string
	HA               bool
}

// FloatingIP is a Neutron floating IP.
type FloatingIP struct {
	Meta
	NetworkID      string
	Address        string
	PortID         string
	FixedIPAddress string
	RouterID       string
	allocSubnet    string // the external subnet Address is allocated in
}

// Attachment is a volume attached to a server.
type Attachment struct {
	ID                  string // attachment id
	VolumeID            string
	ServerID            string
	Device              string
	DeleteOnTermination bool
	Attached            time.Time
}

// Volume is a Cinder volume.
type Volume struct {
	Meta
	Metadata         map[string]string
	Size             int // GiB
	VolumeType       string
	AvailabilityZone string
	ImageID          string
	Status           string // creating, available, in-use, error
	Attachments      []Attachment
	Bootable         bool
	polls            int
}

// Instance is a Nova server (Nova calls them instances) as the simulator
// keeps it and as OnBoot and the inventory see it; ports, addresses and
// volumes are filled in when it is read.
type Instance struct {
	Meta
	UserID           string
	FlavorID         string
	ImageID          string
	AvailabilityZone string
	KeyName          string
	Status           string // BUILD, ACTIVE, ERROR
	UserData         []byte // decoded
	Metadata         map[string]string
	SecurityGroups   []string // names
	Fault            string
	Launched         time.Time
	// Ports are the server's ports (device_id == ID), FixedIPs and
	// FloatingIPs their addresses, Volumes the attached volume ids in
	// device order.
	Ports       []string
	FixedIPs    []string
	FloatingIPs []string
	Volumes     []string
	// Deleting is true between a DELETE and the server's removal: it is
	// still listed (task_state deleting), its ports stay bound and its
	// volumes attached, as in Nova.
	Deleting bool

	polls       int
	deleteTicks int
	booting     bool
	failWith    string // set at creation (error rule, volume refused): the boot fails
}

// state is everything the simulator holds; guarded by Server.mu.
type state struct {
	seq uint64

	projects map[string]*Project
	users    map[string]*User
	roles    map[string]*Role
	// assignments[projectID][userID] = role ids
	assignments map[string]map[string][]string
	appCreds    map[string]*AppCredential
	tokens      map[string]*token

	networks  map[string]*Network
	subnets   map[string]*Subnet
	ports     map[string]*Port
	secGroups map[string]*SecurityGroup
	routers   map[string]*Router
	fips      map[string]*FloatingIP

	volumes map[string]*Volume
	servers map[string]*Instance

	quotas map[string]Quotas // per project overrides

	serverRules []ServerErrorRule

	// builtin are the objects the simulator starts with (admin project
	// and user, external network and subnet): not deletable, not in the
	// inventory.
	builtin map[any]bool

	adminUserID, adminProjectID string
	extNetID, extSubnetID       string
}

func (st *state) next() uint64 {
	st.seq++
	return st.seq
}

func newState(o *Options, now time.Time) (*state, error) {
	st := &state{
		projects:    map[string]*Project{},
		users:       map[string]*User{},
		roles:       map[string]*Role{},
		assignments: map[string]map[string][]string{},
		appCreds:    map[string]*AppCredential{},
		tokens:      map[string]*token{},
		networks:    map[string]*Network{},
		subnets:     map[string]*Subnet{},
		ports:       map[string]*Port{},
		secGroups:   map[string]*SecurityGroup{},
		routers:     map[string]*Router{},
		fips:        map[string]*FloatingIP{},
		volumes:     map[string]*Volume{},
		servers:     map[string]*Instance{},
		quotas:      map[string]Quotas{},
	}
	for _, name := range []string{"admin", "member", "reader", "service"} {
		r := &Role{ID: newHexID(), Name: name}
		st.roles[r.ID] = r
	}
	p := &Project{ID: newHexID(), Name: o.AdminProject, DomainID: DefaultDomainID, Enabled: true,
		Description: "Bootstrap project for initializing the cloud.", Created: now, seq: st.next()}
	st.projects[p.ID] = p
	u := &User{ID: newHexID(), Name: o.AdminUser, DomainID: DefaultDomainID, DefaultProjectID: p.ID,
		Enabled: true, password: o.AdminPassword, seq: st.next()}
	st.users[u.ID] = u
	st.adminUserID, st.adminProjectID = u.ID, p.ID
	st.assign(p.ID, u.ID, simkit.FindBy(st.roles, func(r *Role) bool { return r.Name == "admin" }).ID)

	ext := o.ExternalNetwork
	n := &Network{Meta: Meta{ID: ext.NetworkID, Name: ext.Name, ProjectID: p.ID, Created: now, seq: st.next()},
		External: true, MTU: 1500}
	st.networks[n.ID] = n
	sub, err := st.newSubnet(subnetSpec{name: ext.Name + "-subnet", projectID: p.ID, networkID: n.ID,
		cidr: ext.CIDR, gateway: new("")}, now)
	if err != nil {
		return nil, fmt.Errorf("external network: %v", err.Body)
	}
	st.builtin = map[any]bool{p: true, u: true, n: true, sub: true}
	st.extNetID, st.extSubnetID = n.ID, sub.ID
	return st, nil
}

func (st *state) assign(projectID, userID, roleID string) {
	m := st.assignments[projectID]
	if m == nil {
		m = map[string][]string{}
		st.assignments[projectID] = m
	}
	if !slices.Contains(m[userID], roleID) {
		m[userID] = append(m[userID], roleID)
	}
}

// roleNames of user on project.
func (st *state) roleNames(projectID, userID string) []string {
	return simkit.Map(st.rolesOf(projectID, userID), func(r *Role) string { return r.Name })
}

// rolesOf are the roles user has on project, in the order granted.
func (st *state) rolesOf(projectID, userID string) []*Role {
	return slices.DeleteFunc(simkit.Map(st.assignments[projectID][userID], func(id string) *Role { return st.roles[id] }),
		func(r *Role) bool { return r == nil })
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newHexID is a Keystone id: 32 hex digits.
func newHexID() string { return randomHex(16) }

// newMAC is a MAC in OpenStack's default fa:16:3e prefix.
func newMAC() string {
	h := randomHex(3)
	return "fa:16:3e:" + h[:2] + ":" + h[2:4] + ":" + h[4:]
}
