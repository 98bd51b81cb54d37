package ranchercluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/pkg/backend"
)

// AttributeError is a problem with an order's attributes. It is terminal
// (errors.Is(err, backend.ErrInvalid)): the order errs at once, with Msg,
// Waldur's text where Waldur has one, after the attribute it concerns.
type AttributeError struct {
	// Attribute is the attribute's path (nodes[1].flavor); "" for a
	// problem of the whole order (read-only mode).
	Attribute string
	Msg       string
}

func (e *AttributeError) Error() string {
	if e.Attribute == "" {
		return e.Msg
	}
	return e.Attribute + ": " + e.Msg
}

// Is makes every AttributeError a backend.ErrInvalid.
func (e *AttributeError) Is(target error) bool { return target == backend.ErrInvalid }

// ManagedAttributes are a managed order's attributes (Mastermind's
// ManagedClusterCreateSerializer). Sizes from the order are in MB, as
// Waldur's form sends them.
type ManagedAttributes struct {
	Name                              string   `json:"name"`
	WorkerNodesCount                  int      `json:"worker_nodes_count"`
	WorkerNodesFlavorName             string   `json:"worker_nodes_flavor_name"`
	WorkerNodesDataVolumeSizeMB       int      `json:"worker_nodes_data_volume_size"`
	WorkerNodesDataVolumeTypeName     string   `json:"worker_nodes_data_volume_type_name,omitempty"`
	OpenStackOfferingUUIDs            []string `json:"openstack_offering_uuid_list"`
	InstallLonghorn                   bool     `json:"install_longhorn"`
	WorkerNodesLonghornVolumeSizeMB   int      `json:"worker_nodes_longhorn_volume_size,omitempty"`
	WorkerNodesLonghornVolumeTypeName string   `json:"worker_nodes_longhorn_volume_type_name,omitempty"`
}

// SelfManagedAttributes are a self-managed order's attributes
// (RancherClusterCreateSerializer). Where Waldur refers to its own
// OpenStack objects, sitebus takes the site's: Tenant is the UUID of one of
// the offering's zones (openstack_offering_uuid_list), Subnet a Neutron
// subnet id, Flavor and volume types names or ids in that zone.
type SelfManagedAttributes struct {
	Name            string           `json:"name"`
	Description     string           `json:"description,omitempty"`
	Nodes           []NodeAttributes `json:"nodes"`
	Tenant          string           `json:"tenant,omitempty"`
	SSHPublicKey    string           `json:"ssh_public_key,omitempty"`
	InstallLonghorn bool             `json:"install_longhorn"`
	SecurityGroups  []string         `json:"security_groups,omitempty"`
	// VMProject is Waldur's project for the VMs; sitebus makes no Waldur
	// project and keeps it only to show.
	VMProject string `json:"vm_project,omitempty"`
}

// NodeAttributes are one node of a self-managed order (RancherCreateNodeSerializer).
type NodeAttributes struct {
	Role               string                 `json:"role"`
	SystemVolumeSizeMB int                    `json:"system_volume_size,omitempty"`
	SystemVolumeType   string                 `json:"system_volume_type,omitempty"`
	MemoryMB           int                    `json:"memory,omitempty"`
	CPU                int                    `json:"cpu,omitempty"`
	Subnet             string                 `json:"subnet"`
	Flavor             string                 `json:"flavor,omitempty"`
	DataVolumes        []DataVolumeAttributes `json:"data_volumes,omitempty"`
	SSHPublicKey       string                 `json:"ssh_public_key,omitempty"`
	Tenant             string                 `json:"tenant,omitempty"`
}

// DataVolumeAttributes are one data volume of a node.
type DataVolumeAttributes struct {
	SizeMB     int    `json:"size"`
	MountPoint string `json:"mount_point"`
	Filesystem string `json:"filesystem,omitempty"`
	VolumeType string `json:"volume_type,omitempty"`
}

// UpdateAttributes are what an update order may change: nil is unchanged.
type UpdateAttributes struct {
	WorkerNodesCount *int
	Name             *string
	// ServerNodesCount is a self-managed cluster's new server count
	// (server_nodes_count); RemoveNodes are nodes to drain and remove by
	// name (remove_nodes).
	ServerNodesCount *int
	RemoveNodes      []string
}

// parseObject decodes an order's attributes (JSON) keeping numbers exact.
func parseObject(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, &AttributeError{Msg: "the order's attributes are not a JSON object: " + err.Error()}
	}
	// Decode reads one value and leaves the rest: text after the object
	// means the attributes are not the object they look like.
	if _, err := dec.Token(); err != io.EOF {
		return nil, &AttributeError{Msg: "the order's attributes are not a JSON object: text after the object"}
	}
	return m, nil
}

// attrs reads order attributes with the messages Django REST framework
// gives (Waldur validated the same attributes with it), collecting every
// problem.
type attrs struct {
	raw    map[string]any
	prefix string
	errs   []error
}

func (d *attrs) bad(key, format string, args ...any) {
	d.errs = append(d.errs, &AttributeError{Attribute: d.prefix + key, Msg: fmt.Sprintf(format, args...)})
}

func (d *attrs) present(key string, required bool) (any, bool) {
	v, ok := d.raw[key]
	if !ok || v == nil {
		if required {
			d.bad(key, "This field is required.")
		}
		return nil, false
	}
	return v, true
}

func (d *attrs) str(key string, p *string, required bool) {
	v, ok := d.present(key, required)
	if !ok {
		return
	}
	s, isStr := v.(string)
	if !isStr {
		d.bad(key, "Not a valid string.")
		return
	}
	if required && strings.TrimSpace(s) == "" {
		d.bad(key, "This field may not be blank.")
		return
	}
	*p = s
}

// integer reads a whole number of at least min.
func (d *attrs) integer(key string, p *int, required bool, min int) {
	v, ok := d.present(key, required)
	if !ok {
		return
	}
	if s, isStr := v.(string); isStr {
		v = json.Number(strings.TrimSpace(s)) // DRF's IntegerField takes "5" too
	}
	i, ok := intValue(v)
	if !ok {
		d.bad(key, "A valid integer is required.")
		return
	}
	if i < min {
		d.bad(key, "Ensure this value is greater than or equal to %d.", min)
		return
	}
	*p = i
}

func (d *attrs) boolean(key string, p *bool) {
	v, ok := d.present(key, false)
	if !ok {
		return
	}
	b, ok := pyBool(v)
	if !ok {
		d.bad(key, "Must be a valid boolean.")
		return
	}
	*p = b
}

// strList reads a list of strings; items may also be mappings with a
// "name" (or "url") as Waldur's nested serializers send them.
func (d *attrs) strList(key string, p *[]string, required bool) {
	v, ok := d.present(key, required)
	if !ok {
		return
	}
	list, isList := v.([]any)
	if !isList {
		d.bad(key, "Expected a list of items but got type %q.", pyType(v))
		return
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		if m, isMap := item.(map[string]any); isMap {
			for _, k := range []string{"name", "url", "uuid"} {
				if s, ok := m[k].(string); ok {
					item = s
					break
				}
			}
		}
		s, isStr := item.(string)
		if !isStr {
			d.bad(fmt.Sprintf("%s[%d]", key, i), "Not a valid string.")
			continue
		}
		out = append(out, s)
	}
	*p = out
}

// pyType names a JSON value's type as Python would (DRF quotes it).
func pyType(v any) string {
	switch v.(type) {
	case string:
		return "str"
	case bool:
		return "bool"
	case json.Number, float64, int:
		return "int"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

func (d *attrs) err() error { return joinAttr(d.errs) }

// DecodeManagedAttributes decodes a managed create order's attributes.
// Every problem is reported, each an *AttributeError.
func DecodeManagedAttributes(raw json.RawMessage) (ManagedAttributes, error) {
	m, err := parseObject(raw)
	if err != nil {
		return ManagedAttributes{}, err
	}
	var a ManagedAttributes
	d := attrs{raw: m}
	d.str("name", &a.Name, true)
	d.integer("worker_nodes_count", &a.WorkerNodesCount, true, 1)
	d.str("worker_nodes_flavor_name", &a.WorkerNodesFlavorName, true)
	d.integer("worker_nodes_data_volume_size", &a.WorkerNodesDataVolumeSizeMB, true, 1)
	d.str("worker_nodes_data_volume_type_name", &a.WorkerNodesDataVolumeTypeName, false)
	d.strList("openstack_offering_uuid_list", &a.OpenStackOfferingUUIDs, false)
	d.boolean("install_longhorn", &a.InstallLonghorn)
	d.integer("worker_nodes_longhorn_volume_size", &a.WorkerNodesLonghornVolumeSizeMB, a.InstallLonghorn, 1)
	d.str("worker_nodes_longhorn_volume_type_name", &a.WorkerNodesLonghornVolumeTypeName, false)
	// A managed cluster is named k8s-<resource slug> (checked with the
	// resource); the order's name is only its display name, and Waldur
	// names are free text ("acc create"), so only what no display name
	// can hold is refused.
	if err := checkOpenStackName(a.Name); err != nil && a.Name != "" {
		d.bad("name", "%v", err)
	}
	for _, f := range [][2]string{{"worker_nodes_flavor_name", a.WorkerNodesFlavorName},
		{"worker_nodes_data_volume_type_name", a.WorkerNodesDataVolumeTypeName},
		{"worker_nodes_longhorn_volume_type_name", a.WorkerNodesLonghornVolumeTypeName}} {
		if f[1] != "" {
			if err := checkOpenStackName(f[1]); err != nil {
				d.bad(f[0], "%v", err)
			}
		}
	}
	return a, d.err()
}

// Filesystems the per-node cloud-init can make (mkfs.<fs>).
var filesystems = []string{"btrfs", "ext4", "xfs"}

// DefaultFilesystem is a data volume's filesystem when the order names
// none (Mastermind's format_node_cloud_config default).
const DefaultFilesystem = "ext4"

// DecodeSelfManagedAttributes decodes a self-managed create order's
// attributes. Every problem is reported, each an *AttributeError.
func DecodeSelfManagedAttributes(raw json.RawMessage) (SelfManagedAttributes, error) {
	m, err := parseObject(raw)
	if err != nil {
		return SelfManagedAttributes{}, err
	}
	var a SelfManagedAttributes
	d := attrs{raw: m}
	d.str("name", &a.Name, true)
	d.str("description", &a.Description, false)
	d.str("tenant", &a.Tenant, false)
	d.str("ssh_public_key", &a.SSHPublicKey, false)
	d.boolean("install_longhorn", &a.InstallLonghorn)
	d.strList("security_groups", &a.SecurityGroups, false)
	d.str("vm_project", &a.VMProject, false)
	if msg := checkClusterName(a.Name); msg != "" && a.Name != "" {
		d.bad("name", "%s", msg)
	}
	for i, g := range a.SecurityGroups {
		if err := checkOpenStackName(g); err != nil || g == "" {
			d.bad(fmt.Sprintf("security_groups[%d]", i), "%q is not a security group name or id", g)
		}
	}
	checkSSHKey(&d, "ssh_public_key", a.SSHPublicKey)
	v, ok := d.present("nodes", true)
	if ok {
		list, isList := v.([]any)
		if !isList {
			d.bad("nodes", "Expected a list of items but got type %q.", pyType(v))
		} else if len(list) == 0 {
			d.bad("nodes", "This list may not be empty.")
		}
		for i, item := range list {
			a.Nodes = append(a.Nodes, decodeNode(&d, fmt.Sprintf("nodes[%d].", i), item))
		}
	}
	return a, d.err()
}

func decodeNode(parent *attrs, prefix string, v any) NodeAttributes {
	var n NodeAttributes
	m, ok := v.(map[string]any)
	if !ok {
		parent.bad(strings.TrimSuffix(prefix, "."), "Invalid data. Expected a dictionary, but got %s.", pyType(v))
		return n
	}
	d := attrs{raw: m, prefix: prefix}
	d.str("role", &n.Role, true)
	d.integer("system_volume_size", &n.SystemVolumeSizeMB, false, MinSystemVolumeMB)
	d.str("system_volume_type", &n.SystemVolumeType, false)
	d.integer("memory", &n.MemoryMB, false, 1)
	d.integer("cpu", &n.CPU, false, 1)
	d.str("subnet", &n.Subnet, true)
	d.str("flavor", &n.Flavor, false)
	d.str("ssh_public_key", &n.SSHPublicKey, false)
	d.str("tenant", &n.Tenant, false)
	if n.Role != "" && n.Role != RoleServer && n.Role != RoleAgent {
		d.bad("role", "%q is not a valid choice.", n.Role)
	}
	if n.Subnet != "" && !uuidRe.MatchString(n.Subnet) {
		d.bad("subnet", "%q is not a Neutron subnet id (a UUID)", n.Subnet)
	}
	for _, f := range [][2]string{{"flavor", n.Flavor}, {"system_volume_type", n.SystemVolumeType}} {
		if f[1] != "" {
			if err := checkOpenStackName(f[1]); err != nil {
				d.bad(f[0], "%v", err)
			}
		}
	}
	checkSSHKey(&d, "ssh_public_key", n.SSHPublicKey)
	if v, ok := d.present("data_volumes", false); ok {
		list, isList := v.([]any)
		if !isList {
			d.bad("data_volumes", "Expected a list of items but got type %q.", pyType(v))
		}
		mounts := map[string]bool{}
		for i, item := range list {
			vm, isMap := item.(map[string]any)
			k := fmt.Sprintf("data_volumes[%d]", i)
			if !isMap {
				d.bad(k, "Invalid data. Expected a dictionary, but got %s.", pyType(item))
				continue
			}
			vd := attrs{raw: vm, prefix: prefix + k + "."}
			dv := DataVolumeAttributes{Filesystem: DefaultFilesystem}
			vd.integer("size", &dv.SizeMB, true, 1)
			vd.str("mount_point", &dv.MountPoint, true)
			vd.str("filesystem", &dv.Filesystem, false)
			vd.str("volume_type", &dv.VolumeType, false)
			if dv.MountPoint != "" && (!path.IsAbs(dv.MountPoint) || path.Clean(dv.MountPoint) != dv.MountPoint ||
				dv.MountPoint == "/" || strings.ContainsAny(dv.MountPoint, " \t\n\"'\\")) {
				vd.bad("mount_point", "%q is not an absolute, clean path other than /", dv.MountPoint)
			}
			if !slices.Contains(filesystems, dv.Filesystem) {
				vd.bad("filesystem", "%q is not one of %s", dv.Filesystem, strings.Join(filesystems, ", "))
			}
			if dv.VolumeType != "" {
				if err := checkOpenStackName(dv.VolumeType); err != nil {
					vd.bad("volume_type", "%v", err)
				}
			}
			if dv.MountPoint != "" {
				if mounts[dv.MountPoint] {
					d.bad("data_volumes", "Each mount point can be specified once at most.")
				}
				mounts[dv.MountPoint] = true
			}
			d.errs = append(d.errs, vd.errs...)
			n.DataVolumes = append(n.DataVolumes, dv)
		}
	}
	parent.errs = append(parent.errs, d.errs...)
	return n
}

// checkSSHKey accepts one OpenSSH public key line: Waldur refers to a key
// it stores, sitebus needs the key itself.
func checkSSHKey(d *attrs, key, v string) {
	if v == "" {
		return
	}
	f := strings.Fields(v)
	keyType := func(prefix string) bool { return len(f) > 0 && strings.HasPrefix(f[0], prefix) }
	if len(f) < 2 || strings.ContainsAny(v, "\n\r") || !slices.ContainsFunc([]string{"ssh-", "ecdsa-", "sk-"}, keyType) {
		d.bad(key, "is not an OpenSSH public key (ssh-ed25519 AAAA... comment)")
	}
}

// DecodeUpdateAttributes decodes an update order's attributes: only the
// keys present change something.
func DecodeUpdateAttributes(raw json.RawMessage) (UpdateAttributes, error) {
	m, err := parseObject(raw)
	if err != nil {
		return UpdateAttributes{}, err
	}
	var u UpdateAttributes
	d := attrs{raw: m}
	if _, ok := d.present("worker_nodes_count", false); ok {
		var n int
		before := len(d.errs)
		d.integer("worker_nodes_count", &n, true, 1)
		if len(d.errs) == before {
			u.WorkerNodesCount = &n
		}
	}
	if _, ok := d.present("server_nodes_count", false); ok {
		var n int
		before := len(d.errs)
		d.integer("server_nodes_count", &n, true, 1)
		if len(d.errs) == before {
			u.ServerNodesCount = &n
		}
	}
	d.strList("remove_nodes", &u.RemoveNodes, false)
	if _, ok := d.present("name", false); ok {
		var name string
		before := len(d.errs)
		d.str("name", &name, true)
		if len(d.errs) == before {
			if msg := checkClusterName(name); msg != "" {
				d.bad("name", "%s", msg)
			} else {
				u.Name = &name
			}
		}
	}
	return u, d.err()
}
