package ranchercluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/openstack"
)

// Fixed names and numbers of Mastermind's managed mode
// (marketplace_rancher/const.py, waldur_rancher).
const (
	// RancherNamespace holds the v1 provisioning clusters and their secrets.
	RancherNamespace = "fleet-default"
	// ServersPerAZ is Mastermind's hard-coded server count per tenant.
	ServersPerAZ = 3
	// LBHostOctet is the load balancer's fixed address (network + 10);
	// PoolStartOctet and PoolEndOctet bound the nodes' DHCP pool.
	LBHostOctet    = 10
	PoolStartOctet = 11
	PoolEndOctet   = 200

	SecurityGroupAdmin   = "k8s_admin"
	SecurityGroupPublic  = "k8s_public"
	SecurityGroupDefault = "default"

	// RKE2StorageMount is every node's data volume (RKE2's data
	// directories); LonghornMount the agents' Longhorn volume.
	RKE2StorageMount = "/opt/rke2_storage"
	LonghornMount    = "/opt/longhorn_storage"
	DataFilesystem   = "btrfs"

	// maxHostname: a VM name is its hostname, which Rancher matches nodes
	// by (requestedHostname), so it must be one DNS label.
	maxHostname = kubeapi.MaxNameLen
	// maxKeystoneName: Keystone project and user names.
	maxKeystoneName = 64
	// maxNeutronName: Neutron, Nova and Cinder names.
	maxNeutronName = 255
)

// Roles of a node. A load balancer is no cluster node; its plan entry
// carries RoleLoadBalancer.
const (
	RoleServer       = "server"
	RoleAgent        = "agent"
	RoleLoadBalancer = openstack.RoleLoadBalancer
)

// fit returns name when it has at most max bytes, else a prefix of it and
// "-" with 8 hex digits of its SHA-256: deterministic, and two long names
// that share a prefix still differ, where cutting them would merge them.
func fit(name string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:max-9], "-_") + "-" + hex.EncodeToString(sum[:4])
}

// VMProjectSlug stands for Mastermind's "VM project" slug in tenant names.
// Mastermind makes one Waldur project per cluster ("<customer> / <project>
// / <cluster name>") and names the tenants after its slug, so every
// cluster has tenants of its own. Sitebus makes no Waldur project; the
// resource's project slug alone would put two clusters of one project into
// the same tenant, and "<project slug>-<resource slug>" alone would give
// project "a-b" with resource "c" the tenants of project "a" with resource
// "b-c" (slugs may contain dashes). So it is "<project slug>-<resource
// slug>-" and 8 hex digits of the SHA-256 of the pair, which no other pair
// shares.
func VMProjectSlug(r backend.Resource) string {
	sum := sha256.Sum256([]byte(r.ProjectSlug + "/" + r.Slug))
	return r.ProjectSlug + "-" + r.Slug + "-" + hex.EncodeToString(sum[:4])
}

// TenantName is the Keystone project of a cluster in one zone:
// os-tenant-<vm project slug>-<offering slug>, at most 64 bytes.
func TenantName(vmProjectSlug, offeringSlug string) string {
	return fit("os-tenant-"+vmProjectSlug+"-"+offeringSlug, maxKeystoneName)
}

// TenantUserName is the Keystone user made for the tenant.
func TenantUserName(tenant string) string { return fit(tenant+"-user", maxKeystoneName) }

// NetworkName is Waldur's tenant network name: the tenant slug's first 25
// characters and "-int-net".
func NetworkName(tenant string) string {
	if len(tenant) > 25 {
		tenant = tenant[:25]
	}
	return tenant + "-int-net"
}

// SubnetName is Waldur's tenant subnet name.
func SubnetName(tenant string) string { return fit(tenant+"-sub-net", maxNeutronName) }

// RouterName is the tenant's router to the external network.
func RouterName(tenant string) string { return fit(tenant+"-router", maxNeutronName) }

// ClusterName is the Rancher cluster of a managed order: k8s-<resource slug>.
func ClusterName(resourceSlug string) string { return fit("k8s-"+resourceSlug, maxHostname) }

// LoadBalancerName is the load-balancer VM of every zone: k8s-lb-<resource slug>.
func LoadBalancerName(resourceSlug string) string { return fit("k8s-lb-"+resourceSlug, maxHostname) }

// NodeName is Mastermind's node name, <cluster>-rancher-node-<n> (n from
// 1, unique in the cluster over all zones), the cluster part shortened so
// the whole stays one DNS label.
func NodeName(cluster string, n int) string {
	suffix := "-rancher-node-" + strconv.Itoa(n)
	return fit(cluster, maxHostname-len(suffix)) + suffix
}

// NextNodeNumbers returns the count lowest numbers not used by the names
// in existing, as Mastermind's get_unique_node_name picks a new node's
// name (it tries 1, 2, ... until one is free).
func NextNodeNumbers(cluster string, existing []string, count int) []int {
	used := map[string]bool{}
	for _, n := range existing {
		used[n] = true
	}
	var out []int
	for n := 1; len(out) < count; n++ {
		if !used[NodeName(cluster, n)] {
			out = append(out, n)
		}
	}
	return out
}

// VolumeName names a node's volume: <node>-system, or <node>-data-<i>.
func VolumeName(node string, data int) string {
	if data == 0 {
		return node + "-system"
	}
	return fmt.Sprintf("%s-data-%d", node, data)
}

// DataDevice is the i-th data volume's device (1 is the first after the
// system volume: /dev/sdb), as Mastermind's cloud-init rewrite numbers them.
func DataDevice(driver string, i int) string {
	return "/dev/" + driver + string(rune('a'+i))
}

// KeycloakParentGroup is the cluster's Keycloak group, c_<cluster uuid hex>;
// the cluster's UUID is the Waldur resource's.
func KeycloakParentGroup(uuidHex string) string { return "c_" + uuidHex }

// KeycloakRoleGroup is the child group whose members get role on the
// cluster: c_<uuid hex>_<role>.
func KeycloakRoleGroup(uuidHex, role string) string { return "c_" + uuidHex + "_" + role }

// ArgoCDSecretName is the cluster's ArgoCD cluster Secret.
func ArgoCDSecretName(uuidHex string) string { return "cluster-" + uuidHex }

// Waldur's ClusterNameValidator (waldur_rancher/validators.py).
var clusterNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9])+[a-z0-9]$`)

// checkClusterName applies Waldur's cluster name rule, and RFC 1123's
// length, since the name becomes a Kubernetes object's in Rancher.
func checkClusterName(name string) string {
	switch {
	case name == "":
		return "This field may not be blank."
	case !clusterNameRe.MatchString(name):
		return "Name must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	case len(name) > maxHostname:
		return fmt.Sprintf("Ensure this field has no more than %d characters.", maxHostname)
	}
	return ""
}

// checkOpenStackName refuses names OpenStack would refuse or that would
// mean something else in a filter: control characters, leading or trailing
// space, and more than 255 bytes.
func checkOpenStackName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%q is not valid UTF-8", name)
	}
	if len(name) > maxNeutronName {
		return fmt.Errorf("%q is longer than %d bytes", name, maxNeutronName)
	}
	if strings.TrimSpace(name) != name {
		return fmt.Errorf("%q has leading or trailing space", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%q has control characters", name)
		}
	}
	return nil
}

// labelRe: what may go into a DNS label (hostnames, Rancher object names).
var labelRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// checkResourceSlug refuses a resource slug the cluster, load balancer and
// node names (DNS labels) cannot hold: Waldur slugs may have '_', which no
// hostname can, and rewriting it would make a_b and a-b one cluster.
func checkResourceSlug(slug string) string {
	switch {
	case slug == "":
		return "the resource has no slug to name its cluster by"
	case !labelRe.MatchString(slug):
		return fmt.Sprintf("the resource slug %q cannot name a cluster: lower-case letters, digits and '-', "+
			"starting and ending with a letter or digit (rename the resource)", slug)
	}
	return ""
}

// checkSlug refuses a Waldur slug that cannot be part of a name: the names
// sitebus builds from slugs must not reach another resource's objects, so
// a slug is used as it is or refused, never rewritten.
func checkSlug(what, slug string) string {
	switch {
	case slug == "":
		return what + " is empty"
	case !slugRe.MatchString(slug):
		return fmt.Sprintf("%s %q is not a slug (lower-case letters, digits, '-' and '_')", what, slug)
	}
	return ""
}
