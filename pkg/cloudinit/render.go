package cloudinit

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/sitebus/sitebus/pkg/fault"
)

// Header starts every cloud-config user_data.
const Header = "#cloud-config\n"

// DefaultDiskDriver is node_disk_driver's default: data volumes appear as
// /dev/sdb, /dev/sdc, ...
const DefaultDiskDriver = "sd"

// VaultCAPath is where a node's Vault CA bundle is written when the
// settings give one.
const VaultCAPath = "/etc/vault/ca.pem"

// Role is an RKE2 node's role.
type Role string

const (
	// Server nodes run etcd and the control plane.
	Server Role = "server"
	// Agent nodes are workers.
	Agent Role = "agent"
)

// Flags are the system-agent-install.sh role flags of the role.
func (r Role) Flags() string {
	if r == Server {
		return "--etcd --controlplane"
	}
	return "--worker"
}

// Placeholders are the names a template may use. The vault_* names need
// Vault configured; registration_token is only there without Vault (with
// Vault the node reads the token from Vault and it never enters
// user_data).
func Placeholders() []string {
	return []string{
		"rancher_ca_checksum_flag", "rancher_curl_flags", "rancher_url", "registration_token",
		"rke_role", "rke_role_flags",
		"vault_addr", "vault_role_id", "vault_role_secret_id", "vault_secret_path", "vault_tls_flags",
	}
}

// Template is a parsed cloud_init_template.
type Template struct {
	text, source string
	fields       []field
}

// Source names where the template came from, for messages.
func (t *Template) Source() string { return t.source }

// CloudConfig says whether the template is a cloud-config (the default
// template, nil, is): only a cloud-config can take a node's SSH keys.
func (t *Template) CloudConfig() bool {
	return t == nil || strings.HasPrefix(strings.TrimLeft(t.text, " \t\r\n"), "#cloud-config")
}

// ParseTemplate checks text's placeholder syntax; source names it in
// errors.
func ParseTemplate(text, source string) (*Template, error) {
	t := &Template{text: text, source: source}
	err := scan(source, text, func(string) {}, func(f field) error {
		t.fields = append(t.fields, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// LoadTemplate reads the cloud_init_template setting: empty means the
// default template (nil); one line starting with / is a file path (as
// ranchercluster's settings read it); anything else is the template
// itself.
func LoadTemplate(setting string) (*Template, error) {
	if strings.TrimSpace(setting) == "" {
		return nil, nil
	}
	if !strings.HasPrefix(setting, "/") || strings.ContainsAny(setting, "\n\r") {
		return ParseTemplate(setting, "inline")
	}
	b, err := os.ReadFile(setting)
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "cloud_init_template: cannot read the file: %v", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, fault.Errorf(fault.Invalid, "cloud_init_template: the file %s is empty", setting)
	}
	return ParseTemplate(string(b), setting)
}

// Check reports the first placeholder that could not be filled with Vault
// on (withVault) or off: what Render would refuse for every node.
func (t *Template) Check(withVault bool) error {
	for _, f := range t.fields {
		if err := available(t.source, f, withVault); err != nil {
			return err
		}
	}
	return nil
}

func available(src string, f field, withVault bool) error {
	if !slices.Contains(Placeholders(), f.name) {
		return &TemplateError{Source: src, Line: f.line, Placeholder: f.name,
			Msg: fmt.Sprintf("unknown placeholder {%s} (known: %s; write {{ and }} for literal braces)", f.name, strings.Join(Placeholders(), ", "))}
	}
	if strings.HasPrefix(f.name, "vault_") && !withVault {
		return &TemplateError{Source: src, Line: f.line, Placeholder: f.name,
			Msg: fmt.Sprintf("placeholder {%s} needs Vault, and vault_host is not set", f.name)}
	}
	if f.name == "registration_token" && withVault {
		return &TemplateError{Source: src, Line: f.line, Placeholder: f.name,
			Msg: "placeholder {registration_token} is not available with Vault: the node reads the token from Vault ({vault_secret_path})"}
	}
	return nil
}

// Settings are the offering settings that shape every node's cloud-config.
type Settings struct {
	// Template is cloud_init_template (LoadTemplate); nil is the default.
	Template *Template
	// DiskDriver is node_disk_driver (DefaultDiskDriver when empty).
	DiskDriver string
	// RancherURL is Rancher's base URL, where nodes get
	// system-agent-install.sh and register (backend_url).
	RancherURL string
	// RancherInsecure makes curl skip verifying Rancher's certificate
	// (verify_cert: false).
	RancherInsecure bool
	// RancherCAChecksum is the sha256 of Rancher's CA certificate, passed
	// to the agent as --ca-checksum when set (a private CA).
	RancherCAChecksum string
}

// VaultCredentials are one node's way to the registration token.
type VaultCredentials struct {
	// Addr is Vault's URL (VAULT_ADDR).
	Addr string
	// SecretPath is the KV path as `vault kv get` takes it:
	// secret/rancher/cluster-<uuid>.
	SecretPath string
	// RoleID and SecretID are the node's AppRole credentials; SecretID is
	// good for one login.
	RoleID, SecretID string
	// TLSSkipVerify is vault_tls_verify: false.
	TLSSkipVerify bool
	// CACertPEM, when set, is written to VaultCAPath and given to the CLI.
	CACertPEM string
}

// Volume is a data volume, attached after the system volume, in order.
type Volume struct {
	// MountPoint is where it is mounted; empty leaves it unmounted.
	MountPoint string
	// Filesystem is what it is formatted with (ext4 when empty).
	Filesystem string
}

// Node is what differs between nodes.
type Node struct {
	Role    Role
	Volumes []Volume
	// Vault is nil when Vault is off; RegistrationToken is used then.
	Vault             *VaultCredentials
	RegistrationToken string
	// AuthorizedKeys are OpenSSH public key lines (the order's
	// ssh_public_key) for cloud-config's ssh_authorized_keys.
	AuthorizedKeys []string
}

var checksumRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Render returns node's user_data: the template with the node's values,
// and, when the node has data volumes, Mastermind's per-node rewrite of
// bootcmd (wait for each volume's device), disk_setup, fs_setup and
// mounts on /dev/<driver>b, c, ... Errors are TemplateErrors or
// fault.Invalid.
func Render(s Settings, n Node) ([]byte, error) {
	values, err := nodeValues(s, n)
	if err != nil {
		return nil, err
	}
	t := s.Template
	if t == nil {
		if t, err = ParseTemplate(DefaultTemplate(n.Vault != nil), "the default template"); err != nil {
			return nil, err
		}
	}
	var out strings.Builder
	err = scan(t.source, t.text, func(lit string) { out.WriteString(lit) }, func(f field) error {
		if err := available(t.source, f, n.Vault != nil); err != nil {
			return err
		}
		out.WriteString(values[f.name])
		return nil
	})
	if err != nil {
		return nil, err
	}
	text := out.String()
	caFile := n.Vault != nil && n.Vault.CACertPEM != ""
	isCloudConfig := strings.HasPrefix(text, "#cloud-config")
	if !isCloudConfig && len(n.AuthorizedKeys) > 0 {
		return nil, &TemplateError{Source: t.source, Msg: "is not a cloud-config (#cloud-config), so the order's SSH key cannot be given to the node"}
	}
	if !isCloudConfig && len(n.Volumes) == 0 && !caFile {
		// Not a cloud-config (a shell script, say): cloud-init runs it as
		// it is, as Mastermind passes it.
		return []byte(text), nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, &TemplateError{Source: t.source, Msg: fmt.Sprintf("does not render to valid YAML: %v", err)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &TemplateError{Source: t.source, Msg: "does not render to a cloud-config mapping (#cloud-config, then keys)"}
	}
	if len(n.Volumes) == 0 && !caFile && len(n.AuthorizedKeys) == 0 {
		if !strings.HasPrefix(text, Header) {
			text = Header + strings.TrimPrefix(text, "#cloud-config")
		}
		return []byte(text), nil
	}
	root := doc.Content[0]
	if len(n.Volumes) > 0 {
		if err := rewriteVolumes(root, s.DiskDriver, n.Volumes); err != nil {
			return nil, err
		}
	}
	if caFile {
		if err := addWriteFile(root, map[string]string{"path": VaultCAPath, "permissions": "0644", "content": n.Vault.CACertPEM}); err != nil {
			return nil, &TemplateError{Source: t.source, Msg: err.Error()}
		}
	}
	if len(n.AuthorizedKeys) > 0 {
		if err := addAuthorizedKeys(root, n.AuthorizedKeys); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	buf.WriteString(Header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("cloudinit: encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cloudinit: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// nodeValues are the placeholder values for n; what the node lacks is
// absent, and available() says why a template needing it cannot be used.
func nodeValues(s Settings, n Node) (map[string]string, error) {
	if n.Role != Server && n.Role != Agent {
		return nil, fault.Errorf(fault.Invalid, "cloudinit: node role %q is neither %q nor %q", n.Role, Server, Agent)
	}
	u, err := url.Parse(s.RancherURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fault.Errorf(fault.Invalid, "cloudinit: Rancher URL %q is not an http(s) URL without credentials, query or fragment", s.RancherURL)
	}
	v := map[string]string{
		"rke_role":       string(n.Role),
		"rke_role_flags": n.Role.Flags(),
		"rancher_url":    strings.TrimRight(s.RancherURL, "/"),
	}
	if s.RancherInsecure {
		v["rancher_curl_flags"] = " --insecure"
	}
	if c := strings.ToLower(s.RancherCAChecksum); c != "" {
		if !checksumRe.MatchString(c) {
			return nil, fault.Errorf(fault.Invalid, "cloudinit: Rancher CA checksum is not a sha256 in hex (64 digits)")
		}
		v["rancher_ca_checksum_flag"] = " --ca-checksum " + c
	}
	if n.Vault == nil {
		if err := scriptValue("registration token", n.RegistrationToken); err != nil {
			return nil, err
		}
		v["registration_token"] = n.RegistrationToken
		return v, nil
	}
	vc := n.Vault
	for _, kv := range [][2]string{{"Vault address", vc.Addr}, {"Vault secret path", vc.SecretPath}, {"role-id", vc.RoleID}, {"secret-id", vc.SecretID}} {
		if err := scriptValue(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	v["vault_addr"], v["vault_secret_path"] = vc.Addr, vc.SecretPath
	v["vault_role_id"], v["vault_role_secret_id"] = vc.RoleID, vc.SecretID
	switch {
	case vc.TLSSkipVerify:
		v["vault_tls_flags"] = " -tls-skip-verify"
	case vc.CACertPEM != "":
		v["vault_tls_flags"] = " -ca-cert=" + VaultCAPath
	}
	return v, nil
}

// scriptValue checks a value that goes into the install script between
// double quotes (and into YAML block scalars): a line break, quote, $ or
// space would change the script.
func scriptValue(name, val string) error {
	if val == "" {
		return fault.Errorf(fault.Invalid, "cloudinit: no %s for the node", name)
	}
	if strings.ContainsAny(val, "\n\r\"'`$\\ ") {
		return fault.Errorf(fault.Invalid, "cloudinit: the %s holds characters that cannot go into the install script", name)
	}
	return nil
}

// rewriteVolumes replaces bootcmd, disk_setup, fs_setup and mounts as
// Mastermind's format_node_cloud_config does, with real booleans where it
// wrote the strings "true"/"false" (cloud-init reads the string "false"
// as true, so its overwrite: "false" would let cloud-init reformat a disk
// holding data).
func rewriteVolumes(root *yaml.Node, driver string, vols []Volume) error {
	if driver == "" {
		driver = DefaultDiskDriver
	}
	if len(vols) > 25 {
		return fault.Errorf(fault.Invalid, "cloudinit: %d data volumes, at most 25 device letters (b..z)", len(vols))
	}
	var bootcmd []*yaml.Node
	diskSetup := &yaml.Node{Kind: yaml.MappingNode}
	var fsSetup, mounts []any
	for i, vol := range vols {
		dev := Device(driver, i)
		bootcmd = append(bootcmd, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: waitForDevice(dev)})
		var setup yaml.Node
		if err := setup.Encode(map[string]any{"table_type": "gpt", "layout": true, "overwrite": false}); err != nil {
			return err
		}
		diskSetup.Content = append(diskSetup.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: dev}, &setup)
		fs := vol.Filesystem
		if fs == "" {
			fs = "ext4"
		}
		fsSetup = append(fsSetup, map[string]string{"device": dev, "filesystem": fs})
		if vol.MountPoint != "" {
			// The order's attributes refuse such mount points already;
			// Render is called with plans too, so it checks again: a line
			// break in a mount point did not survive the YAML round trip.
			if mp := vol.MountPoint; !path.IsAbs(mp) || path.Clean(mp) != mp || strings.ContainsFunc(mp, unicode.IsControl) {
				return fault.Errorf(fault.Invalid, "cloudinit: mount point %q is not a clean absolute path", mp)
			}
			mounts = append(mounts, []string{dev, vol.MountPoint})
		}
	}
	set := func(key string, n *yaml.Node) { setKey(root, key, n) }
	set("bootcmd", &yaml.Node{Kind: yaml.SequenceNode, Content: bootcmd})
	set("disk_setup", diskSetup)
	for key, val := range map[string][]any{"fs_setup": fsSetup, "mounts": mounts} {
		var n yaml.Node
		if val == nil {
			val = []any{}
		}
		if err := n.Encode(val); err != nil {
			return err
		}
		set(key, &n)
	}
	return nil
}

// Device is the data volume i's device (0-based; the system volume is
// <driver>a).
func Device(driver string, i int) string { return fmt.Sprintf("/dev/%s%c", driver, 'b'+i) }

// waitForDevice is Mastermind's bootcmd loop: wait up to 600 s for the
// volume to be attached before disk_setup runs.
func waitForDevice(dev string) string {
	return `filename_to_wait_for="` + dev + `"

# Timeout in seconds
timeout=600 # 10 minutes

# Check every ` + "`interval`" + ` seconds
interval=5

elapsed=0
while [ ! -e "$filename_to_wait_for" ]; do
    sleep "$interval"
    elapsed=$((elapsed + interval))

    if [ "$elapsed" -ge "$timeout" ]; then
        echo "Timeout reached. File not found: $filename_to_wait_for"
        exit 1
    fi
done

echo "File found: $filename_to_wait_for"
`
}

// setKey replaces key's value in mapping m, or appends key.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}

// addAuthorizedKeys appends keys to the top-level ssh_authorized_keys.
// cloud-init's ssh module gives these keys to the same accounts as the
// public keys in the instance's metadata (a Nova key pair's, which is how
// Mastermind passes ssh_public_key), so the node ends as it would with a
// key pair, without one: a key pair belongs to a Keystone user, not to the
// project, and would outlive the cluster unless removed on its own.
func addAuthorizedKeys(m *yaml.Node, keys []string) error {
	for _, k := range keys {
		if k == "" || strings.ContainsFunc(k, unicode.IsControl) {
			return fault.Errorf(fault.Invalid, "cloudinit: an SSH public key is empty or holds a control character")
		}
	}
	var seq *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "ssh_authorized_keys" {
			seq = m.Content[i+1]
		}
	}
	if seq == nil || (seq.Kind == yaml.ScalarNode && seq.Tag == "!!null") {
		seq = &yaml.Node{Kind: yaml.SequenceNode}
		setKey(m, "ssh_authorized_keys", seq)
	}
	if seq.Kind != yaml.SequenceNode {
		return fault.Errorf(fault.Invalid, "cloudinit: the template's ssh_authorized_keys is not a list")
	}
	seq.Style = 0 // a flow-style [] in the template would print the keys on one line
	for _, k := range keys {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k})
	}
	return nil
}

// addWriteFile appends a write_files entry.
func addWriteFile(m *yaml.Node, entry map[string]string) error {
	var n yaml.Node
	keys := make([]string, 0, len(entry))
	for k := range entry {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n.Kind = yaml.MappingNode
	for _, k := range keys {
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: entry[k]}
		if strings.Contains(entry[k], "\n") {
			val.Style = yaml.LiteralStyle
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, val)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "write_files" {
			seq := m.Content[i+1]
			if seq.Kind != yaml.SequenceNode {
				return fmt.Errorf("write_files is not a list")
			}
			seq.Content = append(seq.Content, &n)
			return nil
		}
	}
	setKey(m, "write_files", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{&n}})
	return nil
}
