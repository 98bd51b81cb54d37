package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumetypes"

	"github.com/sitebus/sitebus/pkg/fault"
)

// ownsVolume: a volume is marked in its description or metadata.
func (c *Client) ownsVolume(owner Owner, v *volumes.Volume) bool {
	return owner.Marks(v.Description) || (owner != "" && v.Metadata[MetadataOwner] == string(owner))
}

// EnsureVolume makes the volume v and waits, bounded by
// Config.VolumeTimeout, until it is available (or in-use: attached by an
// earlier attempt). A volume that goes to error is a terminal error.
func (c *Client) EnsureVolume(ctx context.Context, owner Owner, v VolumeSpec) (Volume, bool, error) {
	obj := "volume " + v.Name
	found, err := list(ctx, "list volumes", obj, volumes.List(c.volume, volumes.ListOpts{Name: v.Name}), volumes.ExtractVolumes)
	if err != nil {
		return Volume{}, false, err
	}
	var cands []candidate
	for i, f := range found {
		if f.TenantID != "" && f.TenantID != c.projectID {
			continue
		}
		desc := f.Description
		if f.Metadata[MetadataOwner] == string(owner) {
			desc = owner.Mark()
		}
		cands = append(cands, candidate{i, desc})
	}
	i, err := c.pickOwned(ctx, owner, "use", obj, cands)
	if err != nil {
		return Volume{}, false, err
	}
	var id string
	created := false
	if i >= 0 {
		id = found[i].ID
	} else {
		r, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: v.Name, Size: v.SizeGB, VolumeType: v.Type,
			AvailabilityZone: v.AvailabilityZone, ImageID: v.ImageID, Description: owner.Mark(),
			Metadata: map[string]string{MetadataOwner: string(owner)}}, nil).Extract()
		if err != nil {
			return Volume{}, false, classify("create", obj, err)
		}
		id, created = r.ID, true
		c.log.InfoContext(ctx, "created volume", "name", v.Name, "id", r.ID, "size_gb", v.SizeGB, "type", v.Type,
			"project", c.projectID, "owner", string(owner))
	}
	vol, err := c.waitVolume(ctx, id, obj)
	return vol, created, err
}

// waitVolume polls a volume until it is available or in-use.
func (c *Client) waitVolume(ctx context.Context, id, obj string) (Volume, error) {
	deadline := time.Now().Add(c.cfg.VolumeTimeout)
	for {
		r, err := volumes.Get(ctx, c.volume, id).Extract()
		if err != nil {
			return Volume{}, classify("read", obj, err)
		}
		switch r.Status {
		case "available", "in-use":
			return volumeOf(r), nil
		case "error", "error_restoring", "error_extending":
			return volumeOf(r), newError("create", obj, fmt.Sprintf("Cinder put volume %s in status %s", id, r.Status), fault.Rejected)
		}
		if time.Now().After(deadline) {
			return volumeOf(r), newError("wait for", obj, fmt.Sprintf("volume %s still %s after %s", id, r.Status, c.cfg.VolumeTimeout),
				ErrTimeout, fault.Rejected)
		}
		if err := sleep(ctx, c.cfg.PollInterval); err != nil {
			return Volume{}, err
		}
	}
}

// DeleteVolume deletes the volume (absent: done) if it is owner's. Cinder
// refuses while it is attached (400, terminal): delete its server first.
func (c *Client) DeleteVolume(ctx context.Context, owner Owner, volumeID string) error {
	obj := "volume " + volumeID
	r, err := volumes.Get(ctx, c.volume, volumeID).Extract()
	if gone(err) {
		return nil
	}
	if err != nil {
		return classify("read", obj, err)
	}
	obj = fmt.Sprintf("volume %s (%s)", r.Name, r.ID)
	if !c.ownsVolume(owner, r) {
		return notManaged("delete", obj, r.TenantID, owner)
	}
	if err := volumes.Delete(ctx, c.volume, volumeID, volumes.DeleteOpts{}).ExtractErr(); err != nil && !gone(err) {
		return classify("delete", obj, err)
	}
	c.log.InfoContext(ctx, "deleted volume", "name", r.Name, "id", r.ID, "owner", string(owner))
	return nil
}

// VolumeTypes lists the Cinder volume types.
func (c *Client) VolumeTypes(ctx context.Context) ([]VolumeType, error) {
	ts, err := list(ctx, "list volume types", "", volumetypes.List(c.volume, volumetypes.ListOpts{}), volumetypes.ExtractVolumeTypes)
	if err != nil {
		return nil, err
	}
	out := make([]VolumeType, len(ts))
	for i, t := range ts {
		out[i] = VolumeType{ID: t.ID, Name: t.Name}
	}
	return out, nil
}

func volumeOf(v *volumes.Volume) Volume {
	out := Volume{ID: v.ID, Name: v.Name, SizeGB: v.Size, Type: v.VolumeType, AvailabilityZone: v.AvailabilityZone, Status: v.Status}
	for _, a := range v.Attachments {
		out.ServerIDs = append(out.ServerIDs, a.ServerID)
	}
	return out
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
