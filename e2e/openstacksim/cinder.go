package openstacksim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// volumeType finds a type by name or id.
func (s *Server) volumeType(ref string) *VolumeType { return volumeTypes.Items(s)[ref] }

// volumeTypes are found by name or id.
var volumeTypes = func() *collection[VolumeType] {
	col := optionsCollection("volume_types", "volume_type", func(o *Options) []VolumeType { return o.VolumeTypes },
		nil, volumeTypeRep, novaList,
		func(id string) *apiErr { return novaErr(http.StatusNotFound, "Volume type "+id+" could not be found.") })
	col.Items = func(s *Server) map[string]*VolumeType {
		m := map[string]*VolumeType{}
		for _, t := range slices.Backward(col.All(s)) {
			m[t.ID], m[t.Name] = t, t
		}
		return m
	}
	// is_public=None (gophercloud's default) means public and private.
	col.Filters = map[string]simkit.Filter{"is_public": func(o obj, vals []string) bool {
		return vals[0] == "None" || simkit.Scalar(o["is_public"]) == strings.ToLower(vals[0])
	}}
	return col
}()

func volumeTypeRep(_ *http.Request, t *VolumeType) obj {
	return obj{"id": t.ID, "name": t.Name, "description": nil, "is_public": true, "extra_specs": obj{},
		"os-volume-type-access:is_public": true, "qos_specs_id": nil}
}

// volumeSpec is a volume as asked for, by Cinder's create body or by
// Nova for a boot.
type volumeSpec struct {
	Size        int               `json:"size"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	Type        string            `json:"volume_type"`
	Image       string            `json:"imageRef"`
	AZ          string            `json:"availability_zone"`
}

// newVolume checks spec and the project's quota and stores a creating
// volume. Nova uses it for the volumes of a boot.
func (s *Server) newVolume(project string, spec volumeSpec) (*Volume, *apiErr) {
	t := &s.opts.VolumeTypes[0]
	if spec.Type != "" {
		t = s.volumeType(spec.Type)
	}
	spec.AZ = cmp.Or(spec.AZ, s.opts.AvailabilityZones[0])
	img := cmp.Or(images.Items(s)[spec.Image], &Image{})
	if e := cmp.Or(
		refuse(spec.Size <= 0, novaErr(http.StatusBadRequest, "Invalid input received: volume size must be an integer and greater than 0")),
		refuse(t == nil, novaErr(http.StatusNotFound, "Volume type with name "+spec.Type+" could not be found.")),
		refuse(!slices.Contains(s.opts.AvailabilityZones, spec.AZ), novaErr(http.StatusBadRequest, "Availability zone '"+spec.AZ+"' is invalid.")),
		refuse(spec.Image != "" && img.ID == "", novaErr(http.StatusBadRequest, "Invalid image identifier or unable to access requested image.")),
		refuse(spec.Size < img.MinDisk, novaErr(http.StatusBadRequest, fmt.Sprintf(
			"Volume size %dGB cannot be smaller than the image minDisk size %dGB.", spec.Size, img.MinDisk))),
	); e != nil {
		return nil, e
	}
	if e := s.checkCinderQuota(project, t.Name, spec.Size); e != nil {
		return nil, e
	}
	v := &Volume{Meta: s.fresh(project), Metadata: maps.Clone(spec.Metadata), Size: spec.Size, VolumeType: t.Name,
		AvailabilityZone: spec.AZ, ImageID: spec.Image, Bootable: spec.Image != "", Status: "creating",
	}
	v.Name, v.Description = spec.Name, spec.Description
	if s.opts.VolumePolls < 0 {
		v.Status = "available"
	}
	s.st.volumes[v.ID] = v
	return v, nil
}

func (s *Server) volumeRep(r *http.Request, v *Volume) obj {
	atts := simkit.Map(v.Attachments, func(a Attachment) obj {
		return obj{"id": v.ID, "attachment_id": a.ID, "volume_id": v.ID, "server_id": a.ServerID,
			"host_name": nil, "device": a.Device, "attached_at": fmtMicro(a.Attached)}
	})
	o := obj{"id": v.ID, "name": v.Name, "status": v.Status, "size": v.Size, "availability_zone": v.AvailabilityZone,
		"created_at": fmtMicro(v.Created), "updated_at": fmtMicro(v.Created), "attachments": atts,
		"description": orNil(v.Description), "volume_type": v.VolumeType, "snapshot_id": nil, "source_volid": nil,
		"backup_id": nil, "metadata": simkit.CloneOrEmpty(v.Metadata), "user_id": "", "bootable": strconv.FormatBool(v.Bootable), "encrypted": false,
		"replication_status": nil, "consistencygroup_id": nil, "multiattach": false,
		"os-vol-tenant-attr:tenant_id": v.ProjectID, "os-vol-host-attr:host": "sim@lvm#lvm",
		"links": []obj{{"rel": "self", "href": simkit.BaseURL(r) + "/volume/v3/" + v.ProjectID + "/volumes/" + v.ID}}}
	if v.ImageID != "" {
		o["volume_image_metadata"] = obj{"image_id": v.ImageID}
	}
	return o
}

// volumes are Cinder's: each GET of a creating volume counts towards its
// being available.
var volumes = func() *collection[Volume] {
	col := novaCollection("volumes", "volume", "Volume", func(st *state) map[string]*Volume { return st.volumes },
		volumeFilters, (*Server).volumeRep)
	col.Read = (*Server).poll
	// Cinder accepts a create and a delete and finishes them later.
	col.BadBody, col.CreateStatus, col.DeleteStatus = novaBad, http.StatusAccepted, http.StatusAccepted
	return col
}()

// poll counts a GET of v; creating ends after Options.VolumePolls.
func (s *Server) poll(v *Volume) {
	if v.Status != "creating" {
		return
	}
	v.polls++
	if v.polls > s.opts.VolumePolls {
		v.Status = "available"
	}
}

func (s *Server) createVolume(c *caller, in volumeSpec) (*Volume, *apiErr) {
	return s.newVolume(c.urlProject, in)
}

// volumeFilters are Cinder's filters on fields it renders under other
// names: ?metadata={'k':'v', …} (every pair present) and ?project_id=
// (with all_tenants).
var volumeFilters = map[string]simkit.Filter{
	"project_id": func(o obj, vals []string) bool {
		return slices.Contains(vals, simkit.Scalar(o["os-vol-tenant-attr:tenant_id"]))
	},
	"metadata": func(o obj, vals []string) bool {
		md, _ := o["metadata"].(map[string]string)
		for _, v := range vals {
			v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "{"), "}")
			for pair := range strings.SplitSeq(v, ",") {
				k, val, ok := strings.Cut(pair, ":")
				if !ok {
					continue
				}
				unq := func(s string) string { return strings.Trim(strings.TrimSpace(s), `'"`) }
				if got, has := md[unq(k)]; !has || got != unq(val) {
					return false
				}
			}
		}
		return true
	},
}

func (s *Server) deleteVolume(_ *caller, v *Volume) *apiErr {
	if v.Status != "available" && v.Status != "error" {
		return novaErr(http.StatusBadRequest, "Invalid volume: Volume status must be available or error or error_restoring or "+
			"error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, "+
			"awaiting a transfer, or be disassociated from snapshots after volume transfer.")
	}
	delete(s.st.volumes, v.ID)
	return nil
}

// ---- Glance

// images are the public ones and those the caller's project owns; a show
// answers the image bare.
var images = func() *collection[Image] {
	col := optionsCollection("images", "", func(o *Options) []Image { return o.Images },
		func(img *Image) string { return img.ID }, imageRep, glanceList,
		func(id string) *apiErr { return glanceErr(http.StatusNotFound, "No image found with ID "+id) })
	col.Visible = func(_ *Server, c *caller, img *Image) bool { return img.Owner == "" || c.owns(img.Owner) }
	return col
}()

func imageRep(_ *http.Request, img *Image) obj {
	vis, owner := "public", img.Owner
	if owner != "" {
		vis = "private"
	}
	return obj{"id": img.ID, "name": img.Name, "status": "active", "visibility": vis, "owner": owner,
		"min_disk": img.MinDisk, "min_ram": 0, "disk_format": "qcow2", "container_format": "bare",
		"size": 1 << 30, "virtual_size": nil, "checksum": "", "os_hidden": false, "protected": false, "tags": []string{},
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
		"self": "/v2/images/" + img.ID, "file": "/v2/images/" + img.ID + "/file", "schema": "/v2/schemas/image"}
}
