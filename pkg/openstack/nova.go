package openstack

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/keypairs"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/sitebus/sitebus/pkg/fault"
)

// ownsServer: a server is marked in its metadata (Nova has no description
// before microversion 2.19).
func (c *Client) ownsServer(owner Owner, s *servers.Server) bool {
	return owner != "" && s.Metadata[MetadataOwner] == string(owner)
}

// EnsureServer boots the server s from its volumes
// (block_device_mapping_v2) on its ports, with its user_data and
// availability zone, and the owner and role in its metadata. It does not
// wait: see WaitServerActive.
func (c *Client) EnsureServer(ctx context.Context, owner Owner, s ServerSpec) (Server, bool, error) {
	obj := "server " + s.Name
	if len(s.VolumeIDs) == 0 {
		return Server{}, false, newError("create", obj, "no boot volume given", fault.Invalid)
	}
	// Nova's name filter is a regular expression.
	found, err := list(ctx, "list servers", obj,
		servers.List(c.compute, servers.ListOpts{Name: "^" + regexp.QuoteMeta(s.Name) + "$"}), servers.ExtractServers)
	if err != nil {
		return Server{}, false, err
	}
	var cands []candidate
	for i, f := range found {
		desc := ""
		if c.ownsServer(owner, &f) {
			desc = owner.Mark()
		}
		// A server shows no description to match; its metadata is the mark.
		cands = append(cands, candidate{i, desc})
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return Server{}, false, err
	}
	if i >= 0 {
		return c.serverOf(ctx, &found[i]), false, nil
	}
	bd := make([]servers.BlockDevice, len(s.VolumeIDs))
	for i, v := range s.VolumeIDs {
		bd[i] = servers.BlockDevice{BootIndex: -1, SourceType: servers.SourceVolume, DestinationType: servers.DestinationVolume,
			UUID: v, DeleteOnTermination: true}
	}
	bd[0].BootIndex = 0
	nets := make([]servers.Network, len(s.PortIDs))
	for i, p := range s.PortIDs {
		nets[i] = servers.Network{Port: p}
	}
	md := map[string]string{MetadataOwner: string(owner)}
	if s.Role != "" {
		md[MetadataRole] = s.Role
	}
	var opts servers.CreateOptsBuilder = servers.CreateOpts{Name: s.Name, FlavorRef: s.FlavorID, BlockDevice: bd,
		Networks: nets, UserData: s.UserData, AvailabilityZone: s.AvailabilityZone, Metadata: md}
	if s.KeyName != "" {
		opts = keypairs.CreateOptsExt{CreateOptsBuilder: opts, KeyName: s.KeyName}
	}
	r, err := servers.Create(ctx, c.compute, opts, nil).Extract()
	if err != nil {
		return Server{}, false, classify("create", obj, err)
	}
	c.log.InfoContext(ctx, "created server", "name", s.Name, "id", r.ID, "flavor", s.FlavorID, "zone", s.AvailabilityZone,
		"project", c.projectID, "owner", string(owner))
	out := Server{ID: r.ID, Name: s.Name, Status: "BUILD", FlavorID: s.FlavorID, AvailabilityZone: s.AvailabilityZone,
		Metadata: md, VolumeIDs: slices.Clone(s.VolumeIDs)}
	return out, true, nil
}

// WaitServerActive polls the server until it is ACTIVE, bounded by
// Config.ServerTimeout. ERROR is a terminal error (ErrServerFailed) with
// Nova's fault message; running out of time is terminal too (ErrTimeout).
func (c *Client) WaitServerActive(ctx context.Context, serverID string) (Server, error) {
	deadline := time.Now().Add(c.cfg.ServerTimeout)
	for polls := 1; ; polls++ {
		s, err := c.GetServer(ctx, serverID)
		if err != nil {
			return s, err
		}
		obj := fmt.Sprintf("server %s (%s)", s.Name, s.ID)
		switch s.Status {
		case "ACTIVE":
			return s, nil
		case "ERROR":
			why := s.Fault
			if why == "" {
				why = "Nova gave no fault message"
			}
			return s, newError("boot", obj, "went ERROR: "+why, ErrServerFailed, fault.Rejected)
		}
		if time.Now().After(deadline) {
			return s, newError("wait for", obj, fmt.Sprintf("still %s after %s (%d polls)", s.Status, c.cfg.ServerTimeout, polls),
				ErrTimeout, fault.Rejected)
		}
		c.log.DebugContext(ctx, "waiting for server", "server", s.Name, "status", s.Status, "polls", polls)
		if err := sleep(ctx, c.cfg.PollInterval); err != nil {
			return s, err
		}
	}
}

// GetServer reads a server (fault.NotFound when absent).
func (c *Client) GetServer(ctx context.Context, serverID string) (Server, error) {
	res := servers.Get(ctx, c.compute, serverID)
	r, err := res.Extract()
	if err != nil {
		return Server{}, classify("read", "server "+serverID, err)
	}
	out := c.serverOf(ctx, r)
	var az struct {
		Server struct {
			AZ string `json:"OS-EXT-AZ:availability_zone"`
		} `json:"server"`
	}
	if res.ExtractInto(&az) == nil {
		out.AvailabilityZone = az.Server.AZ
	}
	return out, nil
}

// DeleteServer deletes the server (absent: done) if it is owner's, waits
// (bounded by Config.DeleteTimeout) until it is gone, then deletes the
// owner's volumes it had that Nova left.
func (c *Client) DeleteServer(ctx context.Context, owner Owner, serverID string) error {
	obj := "server " + serverID
	r, err := servers.Get(ctx, c.compute, serverID).Extract()
	if gone(err) {
		return nil
	}
	if err != nil {
		return classify("read", obj, err)
	}
	obj = fmt.Sprintf("server %s (%s)", r.Name, r.ID)
	if !c.ownsServer(owner, r) {
		return notManaged("delete", obj, r.TenantID, owner)
	}
	vols := make([]string, 0, len(r.AttachedVolumes))
	for _, v := range r.AttachedVolumes {
		vols = append(vols, v.ID)
	}
	if err := servers.Delete(ctx, c.compute, serverID).ExtractErr(); err != nil && !gone(err) {
		return classify("delete", obj, err)
	}
	if err := c.waitServerGone(ctx, serverID, obj); err != nil {
		return err
	}
	c.log.InfoContext(ctx, "deleted server", "name", r.Name, "id", r.ID, "owner", string(owner))
	// Nova deletes the volumes sitebus booted the server from
	// (delete_on_termination); an owner's volume attached later stays, and
	// goes now. Someone else's volume stays.
	for _, id := range vols {
		v, err := volumes.Get(ctx, c.volume, id).Extract()
		if gone(err) {
			continue
		}
		if err != nil {
			return classify("read", "volume "+id, err)
		}
		if !c.ownsVolume(owner, v) {
			c.log.InfoContext(ctx, "leaving a volume of the deleted server that is not the owner's", "volume", v.Name, "id", v.ID)
			continue
		}
		if _, err := c.waitVolume(ctx, id, "volume "+v.Name); err != nil {
			return err
		}
		if err := c.DeleteVolume(ctx, owner, id); err != nil {
			return err
		}
	}
	return nil
}

// Flavors lists the Nova flavors.
func (c *Client) Flavors(ctx context.Context) ([]Flavor, error) {
	fs, err := list(ctx, "list flavors", "", flavors.ListDetail(c.compute, flavors.ListOpts{AccessType: flavors.AllAccess}), flavors.ExtractFlavors)
	if err != nil {
		return nil, err
	}
	out := make([]Flavor, len(fs))
	for i, f := range fs {
		out[i] = Flavor{ID: f.ID, Name: f.Name, VCPUs: f.VCPUs, RAMMB: f.RAM, DiskGB: f.Disk}
	}
	return out, nil
}

// ImageID finds a Glance image by name (a terminal error when there is
// none, or more than one).
func (c *Client) ImageID(ctx context.Context, name string) (string, error) {
	is, err := list(ctx, "list images", "image "+name, images.List(c.image, images.ListOpts{Name: name}), images.ExtractImages)
	if err != nil {
		return "", err
	}
	switch len(is) {
	case 0:
		return "", newError("find", "image "+name, "Glance has no image of that name (base_image_name)", fault.Invalid, fault.NotFound)
	case 1:
		return is[0].ID, nil
	}
	return "", newError("find", "image "+name, fmt.Sprintf("Glance has %d images of that name: give a unique base_image_name", len(is)),
		fault.Invalid)
}

// Usage sums what owner's servers in the project take, leaving out its
// load balancers (MetadataRole RoleLoadBalancer): nodes,
// their flavors' vCPUs and RAM, and the sizes of their volumes.
func (c *Client) Usage(ctx context.Context, owner Owner) (Usage, error) {
	all, err := list(ctx, "list servers", "", servers.List(c.compute, servers.ListOpts{}), servers.ExtractServers)
	if err != nil {
		return Usage{}, err
	}
	fl, err := c.Flavors(ctx)
	if err != nil {
		return Usage{}, err
	}
	vols, err := list(ctx, "list volumes", "", volumes.List(c.volume, volumes.ListOpts{}), volumes.ExtractVolumes)
	if err != nil {
		return Usage{}, err
	}
	size := map[string]int{}
	for _, v := range vols {
		size[v.ID] = v.Size
	}
	var u Usage
	for _, s := range all {
		if !c.ownsServer(owner, &s) || s.Metadata[MetadataRole] == RoleLoadBalancer {
			continue
		}
		u.Nodes++
		id := flavorID(&s)
		if i := slices.IndexFunc(fl, func(f Flavor) bool { return f.ID == id || f.Name == id }); i >= 0 {
			u.VCPUs += fl[i].VCPUs
			u.RAMMB += fl[i].RAMMB
		} else if v, ok := s.Flavor["vcpus"].(float64); ok {
			// Since microversion 2.47 the server embeds its flavor.
			ram, _ := s.Flavor["ram"].(float64)
			u.VCPUs += int(v)
			u.RAMMB += int(ram)
		}
		for _, a := range s.AttachedVolumes {
			u.StorageGB += size[a.ID]
		}
	}
	return u, nil
}

// flavorID is the server's flavor id (or, since 2.47, its name).
func flavorID(s *servers.Server) string {
	if id, ok := s.Flavor["id"].(string); ok {
		return id
	}
	name, _ := s.Flavor["original_name"].(string)
	return name
}

// serverOf converts a server; addresses come from every network.
func (c *Client) serverOf(_ context.Context, s *servers.Server) Server {
	out := Server{ID: s.ID, Name: s.Name, Status: s.Status, FlavorID: flavorID(s), Fault: s.Fault.Message, Metadata: s.Metadata}
	for _, v := range s.AttachedVolumes {
		out.VolumeIDs = append(out.VolumeIDs, v.ID)
	}
	nets := make([]string, 0, len(s.Addresses))
	for n := range s.Addresses {
		nets = append(nets, n)
	}
	slices.Sort(nets)
	for _, n := range nets {
		addrs, _ := s.Addresses[n].([]any)
		for _, a := range addrs {
			if m, ok := a.(map[string]any); ok {
				if ip, ok := m["addr"].(string); ok {
					out.Addresses = append(out.Addresses, ip)
				}
			}
		}
	}
	return out
}

// waitServerGone waits until Nova no longer lists the server (an admin may
// see it DELETED until Nova purges it), as long as Config.DeleteTimeout.
func (c *Client) waitServerGone(ctx context.Context, id, obj string) error {
	deadline := time.Now().Add(c.cfg.DeleteTimeout)
	for {
		cur, err := servers.Get(ctx, c.compute, id).Extract()
		if gone(err) || err == nil && cur.Status == "DELETED" {
			return nil
		}
		if err != nil {
			return classify("read", obj, err)
		}
		if time.Now().After(deadline) {
			return newError("wait for the deletion of", obj, fmt.Sprintf("still there after %s", c.cfg.DeleteTimeout), ErrTimeout, fault.Rejected)
		}
		if err := sleep(ctx, c.cfg.PollInterval); err != nil {
			return err
		}
	}
}
