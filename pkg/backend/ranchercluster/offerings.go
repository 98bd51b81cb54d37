package ranchercluster

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// Storage modes of an OpenStack offering: fixed has one storage quota,
// dynamic one per volume type (gigabytes_<type>), and only in dynamic mode
// do volumes get a type (Mastermind's marketplace_openstack).
const (
	StorageFixed   = "fixed"
	StorageDynamic = "dynamic"
)

// AZ is one "OpenStack offering" of Mastermind's managed Rancher: for
// sitebus, an availability zone it can build tenants in. UUID is what
// orders select it by (their openstack_offering_uuid_list, the UUIDs of
// the Waldur OpenStack offerings listed in the Rancher offering's
// plugin_options), Slug names the tenants made there.
type AZ struct {
	UUID string `json:"uuid"`
	Slug string `json:"slug"`
	Name string `json:"name,omitempty"`
	// AvailabilityZone is the Nova/Cinder zone ("" is the cloud's default).
	AvailabilityZone string `json:"availability_zone,omitempty"`
	Region           string `json:"region,omitempty"`
	// Cloud holds the credentials; never serialised.
	Cloud Cloud `json:"-"`
	// ExternalNetworkID, when set, gets the tenant a router to it and
	// floating IPs from it.
	ExternalNetworkID string   `json:"external_network_id,omitempty"`
	SubnetCIDR        string   `json:"subnet_cidr"`
	DNSNameservers    []string `json:"dns_nameservers,omitempty"`
	StorageMode       string   `json:"storage_mode"`
}

// Label names the zone in messages, as Mastermind names an offering.
func (az AZ) Label() string {
	if az.Name != "" {
		return az.Name
	}
	return az.Slug
}

// defaultCIDR gives the i-th zone of the list 192.168.(42+i).0/24: each
// zone is its own tenant and network, but the cluster's nodes span them, so
// overlapping node addresses would make two nodes look alike to Kubernetes.
// The default is by position in the list; a plan keeps the CIDRs it was
// made with, so reordering the list changes only new clusters.
func defaultCIDR(i int) string {
	if i > 255-42 {
		return ""
	}
	return fmt.Sprintf("192.168.%d.0/24", 42+i)
}

// decodeOfferings reads openstack_offering_uuid_list: a list of zone
// mappings. Mastermind's is a list of bare UUIDs of OpenStack offerings it
// knows; sitebus has no such offerings, so each entry says where the zone is.
func decodeOfferings(d *config.SettingsDecoder, n *nested, v any) []AZ {
	const key = "openstack_offering_uuid_list"
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		d.Bad(key, "a list of availability zones", v)
		return nil
	}
	out := make([]AZ, 0, len(list))
	for i, item := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		m, ok := item.(map[string]any)
		if !ok {
			if _, isStr := item.(string); isStr {
				d.Errorf(k, "must be a mapping describing the availability zone (uuid, slug, cloud, ...); "+
					"a bare offering UUID, as in Mastermind's plugin_options, does not say how to reach it")
			} else {
				d.Bad(k, "a mapping", item)
			}
			continue
		}
		out = append(out, decodeAZ(d, n, k, m, i))
	}
	return out
}

func decodeAZ(parent *config.SettingsDecoder, n *nested, key string, raw map[string]any, i int) AZ {
	az := AZ{SubnetCIDR: defaultCIDR(i), StorageMode: StorageFixed}
	d := config.SettingsDecoder{Raw: raw, Prefix: parent.Prefix + key + "."}
	d.Str("uuid", &az.UUID)
	d.Str("slug", &az.Slug)
	d.Str("name", &az.Name)
	d.Str("availability_zone", &az.AvailabilityZone)
	d.Str("region", &az.Region)
	d.Str("external_network_id", &az.ExternalNetworkID)
	d.Str("subnet_cidr", &az.SubnetCIDR)
	settingStrList(&d, "dns_nameservers", &az.DNSNameservers)
	d.Str("storage_mode", &az.StorageMode)
	switch c := d.Value("cloud").(type) {
	case nil:
		d.Errorf("cloud", "required: a clouds.yaml entry name, or the entry inline (auth: {auth_url, ...})")
	case string:
		if strings.TrimSpace(c) == "" {
			d.Errorf("cloud", "must name a clouds.yaml entry, not be empty")
		}
		az.Cloud.Name = c
	case map[string]any:
		az.Cloud = decodeCloud(&d, n, c)
	default:
		d.Bad("cloud", "a clouds.yaml entry name or mapping", c)
	}
	n.add(&d)
	return az
}

func decodeCloud(parent *config.SettingsDecoder, n *nested, raw map[string]any) Cloud {
	c := Cloud{Verify: true}
	d := config.SettingsDecoder{Raw: raw, Prefix: parent.Prefix + "cloud."}
	var auth map[string]any
	d.Map("auth", &auth)
	d.Str("auth_type", &c.AuthType)
	d.Str("region_name", &c.RegionName)
	d.Str("interface", &c.Interface)
	d.Bool("verify", &c.Verify)
	d.Str("cacert", &c.CACert)
	// clouds.yaml keys gophercloud reads but sitebus has no use for.
	d.Known("identity_api_version", "profile")
	a := config.SettingsDecoder{Raw: auth, Prefix: d.Prefix + "auth."}
	var password, appSecret string
	a.Str("auth_url", &c.AuthURL)
	a.Str("username", &c.Username)
	a.Str("user_id", &c.UserID)
	a.Str("password", &password)
	a.Str("user_domain_name", &c.UserDomainName)
	a.Str("user_domain_id", &c.UserDomainID)
	a.Str("project_name", &c.ProjectName)
	a.Str("project_id", &c.ProjectID)
	a.Str("project_domain_name", &c.ProjectDomainName)
	a.Str("project_domain_id", &c.ProjectDomainID)
	a.Str("domain_name", &c.DomainName)
	a.Str("domain_id", &c.DomainID)
	a.Str("application_credential_id", &c.ApplicationCredentialID)
	a.Str("application_credential_name", &c.ApplicationCredentialName)
	a.Str("application_credential_secret", &appSecret)
	c.Password, c.ApplicationCredentialSecret = config.Secret(password), config.Secret(appSecret)
	if auth == nil && d.Err() == nil {
		d.Errorf("auth", "required: auth_url and a password or application credential")
	}
	n.add(&d)
	n.add(&a)
	return c
}

// nested collects the problems of decoders below backend_settings (a
// zone, its cloud, its auth): each already names its full key, so they are
// joined to the top-level decoder's as they are.
type nested struct {
	errs, warns []error
}

func (n *nested) add(d *config.SettingsDecoder) {
	n.errs = append(n.errs, d.Err())
	n.warns = append(n.warns, d.Warnings()...)
}

var (
	// slugRe: Waldur slugs (Django's slugify: lower-case, digits, - and _).
	slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	// uuidRe: a UUID with or without dashes.
	uuidRe = regexp.MustCompile(`^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
)

// validateOfferings checks each zone and that they differ where they must.
func validateOfferings(azs []AZ) []error {
	var errs []error
	bad := func(i int, key, format string, args ...any) {
		errs = append(errs, &config.SettingError{
			Key: fmt.Sprintf("%sopenstack_offering_uuid_list[%d].%s", settingsPrefix, i, key), Msg: fmt.Sprintf(format, args...)})
	}
	uuids, slugs := map[string]int{}, map[string]int{}
	nets := make([]*net.IPNet, len(azs))
	for i, az := range azs {
		switch h := hexUUID(az.UUID); {
		case az.UUID == "":
			bad(i, "uuid", "required (the Waldur OpenStack offering orders select this zone by)")
		case h == "":
			bad(i, "uuid", "%q is not a UUID", az.UUID)
		default:
			if j, dup := uuids[h]; dup {
				bad(i, "uuid", "%s is also the uuid of openstack_offering_uuid_list[%d]", az.UUID, j)
			}
			uuids[h] = i
		}
		switch {
		case az.Slug == "":
			bad(i, "slug", "required (it names the tenants made in this zone)")
		case !slugRe.MatchString(az.Slug) || len(az.Slug) > 50:
			bad(i, "slug", "%q is not a slug (lower-case letters, digits, '-' and '_', at most 50)", az.Slug)
		default:
			if j, dup := slugs[az.Slug]; dup {
				bad(i, "slug", "%q is also the slug of openstack_offering_uuid_list[%d]: tenant names would collide", az.Slug, j)
			}
			slugs[az.Slug] = i
		}
		for _, f := range [][2]string{{"availability_zone", az.AvailabilityZone}, {"region", az.Region}} {
			if f[1] != "" {
				if err := checkOpenStackName(f[1]); err != nil {
					bad(i, f[0], "%v", err)
				}
			}
		}
		if az.ExternalNetworkID != "" && !uuidRe.MatchString(az.ExternalNetworkID) {
			bad(i, "external_network_id", "%q is not a Neutron network id (a UUID)", az.ExternalNetworkID)
		}
		_, n, err := net.ParseCIDR(az.SubnetCIDR)
		switch ones, _ := maskSize(n); {
		case err != nil || n.IP.To4() == nil:
			bad(i, "subnet_cidr", "%q is not an IPv4 CIDR", az.SubnetCIDR)
		case ones > 24:
			// .10 is the load balancer and .11-.200 the nodes' pool.
			bad(i, "subnet_cidr", "%s is smaller than a /24: the load balancer takes .10 and nodes .11-.200", az.SubnetCIDR)
		case n.String() != az.SubnetCIDR:
			bad(i, "subnet_cidr", "%s has host bits set (did you mean %s?)", az.SubnetCIDR, n)
		default:
			nets[i] = n
			for j := range i {
				if nets[j] != nil && (nets[j].Contains(n.IP) || n.Contains(nets[j].IP)) {
					bad(i, "subnet_cidr", "%s overlaps %s of openstack_offering_uuid_list[%d]: the cluster's nodes span the zones, so their addresses must differ",
						az.SubnetCIDR, azs[j].SubnetCIDR, j)
				}
			}
		}
		for k, ns := range az.DNSNameservers {
			if net.ParseIP(ns) == nil {
				bad(i, fmt.Sprintf("dns_nameservers[%d]", k), "%q is not an IP address", ns)
			}
		}
		if az.StorageMode != StorageFixed && az.StorageMode != StorageDynamic {
			bad(i, "storage_mode", "%q is not %q or %q", az.StorageMode, StorageFixed, StorageDynamic)
		}
		for _, e := range validateCloud(az.Cloud) {
			bad(i, "cloud"+e.key, "%s", e.msg)
		}
	}
	return errs
}

func maskSize(n *net.IPNet) (int, int) {
	if n == nil {
		return 0, 0
	}
	return n.Mask.Size()
}

type keyMsg struct{ key, msg string }

// validateCloud checks an inline cloud for what every login would fail on.
func validateCloud(c Cloud) []keyMsg {
	if c.Name != "" {
		return nil
	}
	var out []keyMsg
	bad := func(key, format string, args ...any) {
		out = append(out, keyMsg{key, fmt.Sprintf(format, args...)})
	}
	if u, err := url.Parse(c.AuthURL); c.AuthURL == "" {
		bad(".auth.auth_url", "required (Keystone's URL, e.g. https://keystone.example.com:5000/v3)")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		bad(".auth.auth_url", "%q is not an http(s) URL without credentials", c.AuthURL)
	}
	switch c.AuthType {
	case "", "password", "v3password", "v3applicationcredential", "applicationcredential":
	default:
		bad(".auth_type", "%q is not supported (password, v3password or v3applicationcredential)", c.AuthType)
	}
	if c.ApplicationCredential() {
		switch {
		case c.ApplicationCredentialSecret == "":
			bad(".auth.application_credential_secret", "required with an application credential")
		case c.ApplicationCredentialID == "" && c.ApplicationCredentialName == "":
			bad(".auth.application_credential_id", "an application credential needs its id, or its name and the user's")
		case c.ApplicationCredentialID == "" && c.Username == "" && c.UserID == "":
			bad(".auth.username", "an application credential given by name needs its user (username or user_id)")
		}
	} else {
		if c.Username == "" && c.UserID == "" {
			bad(".auth.username", "required: username or user_id (or an application credential)")
		}
		if c.Password == "" {
			bad(".auth.password", "required with username/password authentication")
		}
		if c.ProjectID == "" && c.ProjectName == "" {
			// Sitebus makes tenants and VMs; an unscoped token can do neither.
			bad(".auth.project_name", "required: the project (project_name or project_id) the token is scoped to")
		}
	}
	switch c.Interface {
	case "", "public", "internal", "admin":
	default:
		bad(".interface", "%q is not public, internal or admin", c.Interface)
	}
	return out
}

// hexUUID returns a UUID as 32 lower-case hex digits, or "" for a value
// that is not one.
func hexUUID(s string) string {
	s = strings.TrimSpace(s)
	if !uuidRe.MatchString(s) {
		return ""
	}
	return strings.ToLower(strings.ReplaceAll(s, "-", ""))
}
