package openstacksim

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// maxUserData is Nova's limit on the base64 user_data.
const maxUserData = 65535

func (s *Server) flavor(id string) *Flavor { return flavors.Items(s)[id] }

var flavors = optionsCollection("flavors", "flavor", func(o *Options) []Flavor { return o.Flavors },
	func(f *Flavor) string { return f.ID }, flavorRep, novaList,
	func(id string) *apiErr { return novaErr(http.StatusNotFound, "Flavor "+id+" could not be found.") })

func flavorRep(r *http.Request, f *Flavor) obj {
	return obj{"id": f.ID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk, "swap": 0,
		"OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false, "os-flavor-access:is_public": true,
		"rxtx_factor": 1.0, "description": nil, "extra_specs": obj{},
		"links": []obj{{"rel": "self", "href": simkit.BaseURL(r) + "/compute/v2.1/flavors/" + f.ID}}}
}

// serverView is sv with its ports, addresses and volumes filled in. Call
// with s.mu held.
func (s *Server) serverView(sv *Instance) Instance {
	v := *sv
	v.UserData = slices.Clone(sv.UserData)
	v.Metadata = maps.Clone(sv.Metadata)
	v.SecurityGroups = slices.Clone(sv.SecurityGroups)
	v.Ports, v.FixedIPs, v.FloatingIPs, v.Volumes = nil, nil, nil, nil
	for _, p := range s.serverPorts(sv.ID) {
		v.Ports = append(v.Ports, p.ID)
		v.FixedIPs = append(v.FixedIPs, simkit.Map(p.FixedIPs, func(f FixedIP) string { return f.IPAddress })...)
		v.FloatingIPs = append(v.FloatingIPs, simkit.Map(where(s.st.fips, func(f *FloatingIP) bool { return f.PortID == p.ID }),
			func(f *FloatingIP) string { return f.Address })...)
	}
	for _, a := range s.serverAttachments(sv.ID) {
		v.Volumes = append(v.Volumes, a.VolumeID)
	}
	return v
}

func (s *Server) serverPorts(id string) []*Port {
	return where(s.st.ports, func(p *Port) bool { return p.DeviceID == id && strings.HasPrefix(p.DeviceOwner, "compute:") })
}

// serverAttachments are the server's volume attachments by device name.
func (s *Server) serverAttachments(id string) []Attachment {
	var out []Attachment
	for _, v := range s.st.volumes {
		for _, a := range v.Attachments {
			if a.ServerID == id {
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, func(a, b Attachment) int { return strings.Compare(a.Device, b.Device) })
	return out
}

// vmStates are Nova's task, vm and power states of a server by status.
var vmStates = map[string]struct {
	task, vm string
	power    int
}{"BUILD": {"spawning", "building", 0}, "ACTIVE": {"", "active", 1},
	"ERROR": {"", "error", 0}}

func (s *Server) serverRep(r *http.Request, sv *Instance) obj {
	b := simkit.BaseURL(r) + "/compute/v2.1"
	addresses := obj{}
	sgNames := []string{}
	for _, p := range s.serverPorts(sv.ID) {
		net := cmp.Or(s.st.networks[p.NetworkID], &Network{Meta: Meta{Name: p.NetworkID}}).Name
		list, _ := addresses[net].([]obj)
		for _, f := range p.FixedIPs {
			list = append(list, obj{"version": 4, "addr": f.IPAddress, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.MAC})
		}
		for _, f := range s.st.fips {
			if f.PortID == p.ID {
				list = append(list, obj{"version": 4, "addr": f.Address, "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": p.MAC})
			}
		}
		addresses[net] = list
		for _, gid := range p.SecurityGroups {
			if g := s.st.secGroups[gid]; g != nil && !slices.Contains(sgNames, g.Name) {
				sgNames = append(sgNames, g.Name)
			}
		}
	}
	vols := simkit.Map(s.serverAttachments(sv.ID), func(a Attachment) obj {
		return obj{"id": a.VolumeID, "delete_on_termination": a.DeleteOnTermination}
	})
	var image any = ""
	if sv.ImageID != "" {
		image = obj{"id": sv.ImageID, "links": []obj{{"rel": "bookmark", "href": simkit.BaseURL(r) + "/compute/images/" + sv.ImageID}}}
	}
	vs := vmStates[sv.Status]
	if sv.Deleting {
		vs.task = "deleting"
	}
	var launched any
	if !sv.Launched.IsZero() {
		launched = fmtMicro(sv.Launched)
	}
	o := obj{
		"id": sv.ID, "name": sv.Name, "status": sv.Status, "tenant_id": sv.ProjectID, "user_id": sv.UserID,
		"metadata": simkit.CloneOrEmpty(sv.Metadata), "hostId": "", "image": image,
		"flavor":  obj{"id": sv.FlavorID, "links": []obj{{"rel": "bookmark", "href": simkit.BaseURL(r) + "/compute/flavors/" + sv.FlavorID}}},
		"created": fmtTime(sv.Created), "updated": fmtTime(sv.Created), "addresses": addresses,
		"accessIPv4": "", "accessIPv6": "", "progress": 0, "OS-DCF:diskConfig": "MANUAL", "config_drive": "",
		"key_name": orNil(sv.KeyName), "OS-EXT-AZ:availability_zone": sv.AvailabilityZone,
		"OS-SRV-USG:launched_at": launched, "OS-SRV-USG:terminated_at": nil,
		"OS-EXT-STS:task_state": orNil(vs.task), "OS-EXT-STS:vm_state": vs.vm, "OS-EXT-STS:power_state": vs.power,
		"os-extended-volumes:volumes_attached": vols, "security_groups": namedObjs(sgNames), "locked": false,
		"links": []obj{{"rel": "self", "href": b + "/servers/" + sv.ID}},
	}
	if sv.Status == "ERROR" {
		o["fault"] = obj{"code": 500, "created": fmtTime(sv.Created), "message": sv.Fault, "details": ""}
	}
	return o
}

// namedObjs are Nova's [{"name": …}] of names.
func namedObjs(names []string) []obj {
	return simkit.Map(names, func(n string) obj { return obj{"name": n} })
}

// servers are Nova's: each GET of a server in BUILD counts towards its
// boot.
var servers = func() *collection[Instance] {
	col := novaCollection("servers", "server", "Instance", func(st *state) map[string]*Instance { return st.servers },
		nameFilter, (*Server).serverRep)
	col.Read = func(_ *Server, sv *Instance) {
		if sv.Status == "BUILD" {
			sv.polls++
		}
	}
	return col
}()

// novaCollection is a Nova or Cinder resource, seen by its project's
// members and admins. A list shows the project the caller acts for (for
// Cinder the URL's), or every project's to an admin asking all_tenants,
// newest first as both list, each entry brief without /detail.
func novaCollection[T any, P hasMeta[T]](plural, singular, noun string, items func(*state) map[string]*T,
	filters map[string]simkit.Filter, rep func(*Server, *http.Request, *T) obj) *collection[T] {
	col := ownedCollection[T, P](plural, singular, items, novaList,
		func(id string) *apiErr { return novaErr(http.StatusNotFound, noun+" "+id+" could not be found.") })
	col.Listed = func(_ *Server, c *caller, r *http.Request, v *T) bool {
		all := r.URL.Query().Get("all_tenants")
		return P(v).meta().ProjectID == cmp.Or(c.urlProject, c.projectID) || c.admin && all != "" && all != "0"
	}
	col.NewestFirst, col.Filters, col.Render, col.Brief = true, filters, rep, brief
	return col
}

// brief is an entry of a Nova or Cinder list without /detail.
func brief(r *http.Request, o obj) obj {
	if strings.HasSuffix(r.URL.Path, "/detail") {
		return o
	}
	return obj{"id": o["id"], "name": o["name"], "links": o["links"]}
}

// nameFilter is Nova's name filter: a regular expression searched in the
// name, so "node-1" also finds "node-10".
var nameFilter = map[string]simkit.Filter{
	"name": func(o obj, vals []string) bool {
		return slices.ContainsFunc(vals, func(v string) bool {
			re, err := regexp.Compile(v)
			return err != nil && strings.Contains(o["name"].(string), v) || err == nil && re.MatchString(o["name"].(string))
		})
	},
}

// bootFirst boots the servers a GET is about to show whose BUILD polls
// are used up, before the GET reads them, so the poll that crosses the
// threshold sees the outcome. OnBoot runs without the lock.
func (s *Server) bootFirst(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		var due []Instance
		if c := s.authenticate(r); c != nil {
			// The server {id}, or those the list shows, newest first.
			id := r.PathValue("id")
			cands := where(s.st.servers, func(sv *Instance) bool {
				return servers.Visible(s, c, sv) && (sv.ID == id || id == "" && servers.Listed(s, c, r, sv))
			})
			slices.Reverse(cands)
			for _, sv := range cands {
				if sv.Status == "BUILD" && !sv.booting && !sv.Deleting && (s.opts.BuildPolls < 0 || sv.polls >= s.opts.BuildPolls) && s.bootDue(sv) {
					sv.booting = true
					due = append(due, s.serverView(sv))
				}
			}
		}
		s.mu.Unlock()
		for _, v := range due {
			s.boot(context.WithoutCancel(r.Context()), v)
		}
		next.ServeHTTP(w, r)
	})
}

// bootDue says whether a server in BUILD may boot as far as the clock
// goes: Options.BootAfter after its create, as a real VM takes tens of
// seconds to reach cloud-init whether anyone polls it or not.
func (s *Server) bootDue(sv *Instance) bool {
	return s.opts.BootAfter <= 0 || !s.now().Before(sv.Created.Add(s.opts.BootAfter))
}

// boot ends a server's BUILD: ERROR when an error rule picked it or OnBoot
// failed, ACTIVE otherwise.
func (s *Server) boot(ctx context.Context, v Instance) {
	fault := v.failWith
	if fault == "" && s.opts.OnBoot != nil {
		if err := s.opts.OnBoot(ctx, v); err != nil {
			fault = err.Error()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.st.servers[v.ID]
	if sv == nil { // deleted while booting
		return
	}
	sv.booting = false
	if fault != "" {
		sv.Status, sv.Fault = "ERROR", fault
		s.log.Info("server boot failed", "server", sv.Name, "id", sv.ID, "fault", fault)
		return
	}
	sv.Status, sv.Launched = "ACTIVE", s.now()
}

type serverIn struct {
	Name             string                  `json:"name"`
	FlavorRef        string                  `json:"flavorRef"`
	ImageRef         string                  `json:"imageRef"`
	AvailabilityZone string                  `json:"availability_zone"`
	UserData         string                  `json:"user_data"`
	Networks         json.RawMessage         `json:"networks"`
	SecurityGroups   []struct{ Name string } `json:"security_groups"`
	Metadata         map[string]string       `json:"metadata"`
	KeyName          string                  `json:"key_name"`
	BDM              []bdmIn                 `json:"block_device_mapping_v2"`
}

// bdmIn is a block_device_mapping_v2 entry as sent: boot_index may be
// null or absent.
type bdmIn struct {
	BootIndex           *int   `json:"boot_index"`
	SourceType          string `json:"source_type"`
	DestinationType     string `json:"destination_type"`
	UUID                string `json:"uuid"`
	VolumeSize          int    `json:"volume_size"`
	VolumeType          string `json:"volume_type"`
	DeleteOnTermination bool   `json:"delete_on_termination"`
}

type netReq struct {
	UUID    string `json:"uuid"`
	Port    string `json:"port"`
	FixedIP string `json:"fixed_ip"`
}

// noVolume stands for a volume a boot names that the caller cannot see.
var noVolume = &Volume{}

// createServer validates everything first, then makes the ports and
// volumes; a failure on the way undoes what was made.
func (s *Server) createServer(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
	var in struct {
		Server serverIn `json:"server"`
	}
	if e := simkit.Decode(r, &in, novaBad); e != nil {
		return e
	}
	sin := in.Server
	f := s.flavor(sin.FlavorRef)
	az := cmp.Or(sin.AvailabilityZone, s.opts.AvailabilityZones[0])
	userData, badUserData := base64.StdEncoding.DecodeString(sin.UserData)
	// Boot sequence: unique boot indexes, one of them 0 unless an image
	// boots the server.
	seen, twice := map[int]bool{}, false
	for _, b := range sin.BDM {
		if b.BootIndex != nil && *b.BootIndex >= 0 {
			twice = twice || seen[*b.BootIndex]
			seen[*b.BootIndex] = true
		}
	}
	if e := cmp.Or(
		refuse(c.projectID == "", novaErr(http.StatusForbidden, "A project-scoped token is required.")),
		refuse(sin.Name == "", novaErr(400, "Invalid input for field/attribute name. Value: . '' is too short")),
		refuse(f == nil, novaErr(400, "Flavor "+sin.FlavorRef+" could not be found.")),
		refuse(sin.ImageRef != "" && images.Lookup(s, c, sin.ImageRef) == nil, novaErr(400, "Image "+sin.ImageRef+" could not be found.")),
		refuse(!slices.Contains(s.opts.AvailabilityZones, az), novaErr(400, "The requested availability zone is not available")),
		refuse(len(sin.UserData) > maxUserData, novaErr(400, "Invalid input for field/attribute user_data. Value: ... is too long")),
		refuse(badUserData != nil, novaErr(400, "Invalid input for field/attribute user_data. Value: ... is not a base64 string")),
		refuse(twice, novaErr(400, "Boot sequence for the instance and image/block device mapping combination is not valid.")),
		refuse(sin.ImageRef == "" && !seen[0], novaErr(400, "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.")),
	); e != nil {
		return e
	}
	if e := s.checkNovaQuota(c.projectID, f); e != nil {
		return e
	}
	// Security groups by name (or id), in the caller's project.
	sgNames := simkit.Map(sin.SecurityGroups, func(g struct{ Name string }) string { return g.Name })
	if len(sgNames) == 0 {
		sgNames = []string{"default"}
	}
	s.ensureDefaultSG(c.projectID)
	var sgIDs []string
	for _, n := range sgNames {
		found := where(s.st.secGroups, func(g *SecurityGroup) bool { return g.ProjectID == c.projectID && (g.Name == n || g.ID == n) })
		if e := cmp.Or(refuse(len(found) == 0, novaErr(400, "Security group "+n+" not found for project "+c.projectID+".")),
			refuse(len(found) > 1, novaErr(409, "Multiple security group matches found for name '"+n+"', use an ID to be more specific."))); e != nil {
			return e
		}
		sgIDs = append(sgIDs, found[0].ID)
	}
	nets, e := s.serverNetworks(c, sin.Networks)
	if e != nil {
		return e
	}
	// Volumes in BDMs: existing ones must be available, and named once.
	usedVols := map[string]bool{}
	for _, b := range sin.BDM {
		isVol, newVol := b.SourceType == "volume", b.DestinationType == "volume" && (b.SourceType == "image" || b.SourceType == "blank")
		v := &Volume{Status: "available"} // what is not an existing volume passes the volume checks
		if isVol {
			v = cmp.Or(volumes.Lookup(s, c, b.UUID), noVolume)
		}
		if e := cmp.Or(
			refuse(isVol && usedVols[b.UUID], novaErr(400, "Block Device Mapping is Invalid: volume "+b.UUID+" is mapped twice.")),
			refuse(v == noVolume, novaErr(400, "Block Device Mapping is Invalid: failed to get volume "+b.UUID+".")),
			refuse(v.Status != "available", novaErr(400, "Invalid volume: volume "+b.UUID+
				" status must be available, but current status is: "+v.Status+".")),
			refuse(b.SourceType == "image" && images.Lookup(s, c, b.UUID) == nil,
				novaErr(400, "Block Device Mapping is Invalid: failed to get image "+b.UUID+".")),
			refuse(newVol && b.VolumeSize <= 0, novaErr(400, "Images with destination_type 'volume' need to have a non-zero size specified")),
			refuse(newVol && b.VolumeType != "" && s.volumeType(b.VolumeType) == nil,
				novaErr(400, "Block Device Mapping is Invalid: volume type "+b.VolumeType+" not found.")),
		); e != nil {
			return e
		}
		usedVols[b.UUID] = usedVols[b.UUID] || isVol
	}

	sv := &Instance{Meta: s.fresh(c.projectID), UserID: c.userID, FlavorID: f.ID,
		ImageID: sin.ImageRef, AvailabilityZone: az, KeyName: sin.KeyName, Status: "BUILD", UserData: userData,
		Metadata: maps.Clone(sin.Metadata), SecurityGroups: sgNames}
	sv.Name = sin.Name
	// New ports come first: Neutron may still refuse one (address in use,
	// quota), and then the ones made so far are deleted. Nothing after
	// them fails the request, so the ports given are bound after them.
	var made []*Port
	for _, n := range nets {
		if n.Port != "" {
			continue
		}
		owner, dev := "compute:"+az, sv.ID
		pin := portIn{SecurityGroups: &sgIDs, DeviceOwner: &owner, DeviceID: &dev}
		if n.FixedIP != "" {
			pin.FixedIPs = &[]fixedIPIn{{IPAddress: n.FixedIP}}
		}
		p, e := s.newPort(c, s.st.networks[n.UUID], c.projectID, pin)
		if e != nil {
			for _, p := range made {
				s.removePort(p)
			}
			// Nova reports Neutron's refusals as its own.
			return novaErr(e.Status, e.Message)
		}
		p.novaCreated = true
		made = append(made, p)
	}
	for _, n := range nets {
		if p := s.st.ports[n.Port]; p != nil {
			p.DeviceID, p.DeviceOwner = sv.ID, "compute:"+az
		}
	}
	// Volumes: the boot volume first (vda), then the others in order.
	bdms := slices.Clone(sin.BDM)
	slices.SortStableFunc(bdms, func(a, b bdmIn) int { return bootOrder(a.BootIndex) - bootOrder(b.BootIndex) })
	dev := 0
	bootFault := ""
	for _, b := range bdms {
		if b.DestinationType != "volume" && b.SourceType != "volume" {
			continue
		}
		v := s.st.volumes[b.UUID]
		if b.SourceType != "volume" {
			spec := volumeSpec{Size: b.VolumeSize, Type: b.VolumeType, AZ: az}
			if b.SourceType == "image" {
				spec.Image = b.UUID
			}
			var e *apiErr
			if v, e = s.newVolume(c.projectID, spec); e != nil {
				// nova-compute makes these volumes while building, so
				// Cinder's refusal (quota, size) fails the boot, not the
				// request.
				bootFault = cmp.Or(bootFault, "Build of instance "+sv.ID+" aborted: "+e.Message)
				continue
			}
		}
		v.Status = "in-use"
		v.Attachments = []Attachment{{ID: simkit.NewUUID(), VolumeID: v.ID, ServerID: sv.ID, Device: fmt.Sprintf("/dev/vd%c", 'a'+dev),
			DeleteOnTermination: b.DeleteOnTermination, Attached: s.now()}}
		dev++
	}
	sv.failWith = cmp.Or(bootFault, s.matchErrorRule(sv))
	s.st.servers[sv.ID] = sv
	simkit.WriteJSON(w, http.StatusAccepted, obj{"server": obj{"id": sv.ID, "OS-DCF:diskConfig": "MANUAL",
		"security_groups": namedObjs(sgNames), "adminPass": randomHex(6),
		"links": []obj{{"rel": "self", "href": simkit.BaseURL(r) + "/compute/v2.1/servers/" + sv.ID}}}})
	return nil
}

func bootOrder(i *int) int {
	if i == nil || *i < 0 {
		return 1 << 20
	}
	return *i
}

// serverNetworks resolves the networks of a create: a list of {uuid,
// fixed_ip} or {port}, "auto", "none", or absent (the project's only
// network, if it has exactly one).
func (s *Server) serverNetworks(c *caller, raw json.RawMessage) ([]netReq, *apiErr) {
	var word string
	if raw == nil || json.Unmarshal(raw, &word) == nil {
		if word == "none" {
			return nil, nil
		}
		own := where(s.st.networks, func(n *Network) bool { return n.ProjectID == c.projectID && !n.External })
		switch len(own) {
		case 0:
			return nil, nil
		case 1:
			return []netReq{{UUID: own[0].ID}}, nil
		default:
			return nil, novaErr(409, "Multiple possible networks found, use a Network ID to be more specific.")
		}
	}
	var nets []netReq
	if err := json.Unmarshal(raw, &nets); err != nil {
		return nil, novaErr(400, "Invalid input for field/attribute networks.")
	}
	seen := map[string]bool{}
	for _, n := range nets {
		p, byNet := ports.Lookup(s, c, n.Port), n.Port == ""
		if e := cmp.Or(
			refuse(!byNet && (seen[n.Port] || p != nil && p.DeviceID != ""), novaErr(409, "Port "+n.Port+" is still in use.")),
			refuse(!byNet && p == nil, novaErr(400, "Port id "+n.Port+" could not be found.")),
			refuse(byNet && n.UUID != "" && networks.Lookup(s, c, n.UUID) == nil, novaErr(400, "Network "+n.UUID+" could not be found.")),
			refuse(byNet && n.UUID == "", novaErr(400, "Bad networks format: network uuid is not in proper format ()")),
		); e != nil {
			return nil, e
		}
		seen[n.Port] = true
	}
	return nets, nil
}

// removeServer deletes sv as Nova does: its own ports go, ports it was
// given are unbound, volumes are detached and those marked
// delete_on_termination deleted.
func (s *Server) removeServer(sv *Instance) {
	for _, p := range s.serverPorts(sv.ID) {
		if p.novaCreated {
			s.removePort(p)
		} else {
			p.DeviceID, p.DeviceOwner = "", ""
		}
	}
	for _, a := range s.serverAttachments(sv.ID) {
		if a.DeleteOnTermination {
			delete(s.st.volumes, a.VolumeID)
		} else {
			s.st.volumes[a.VolumeID].Attachments, s.st.volumes[a.VolumeID].Status = nil, "available"
		}
	}
	delete(s.st.servers, sv.ID)
}

func (s *Server) deleteServer(w http.ResponseWriter, _ *http.Request, _ *caller, sv *Instance) *apiErr {
	// Nova answers at once and cleans up later: tick finishes the delete.
	if s.opts.DeletePolls < 0 {
		s.removeServer(sv)
	} else {
		sv.Deleting = true
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// tick advances the simulator's clock by one API request: servers being
// deleted go once their DeletePolls are used up. Call with s.mu held.
func (s *Server) tick() {
	for _, sv := range s.st.servers {
		if !sv.Deleting {
			continue
		}
		sv.deleteTicks++
		if sv.deleteTicks > s.opts.DeletePolls {
			s.removeServer(sv)
		}
	}
}
