package ranchercluster

import (
	"encoding/json"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// FuzzDecodeAttributes feeds the three decoders of a rancher-cluster
// order's attributes (managed create, self-managed create, update) any
// JSON an order author may write. Whatever they accept is safe to build
// with: the cluster name is an RFC 1123 label of at most 63 characters
// (it names a Kubernetes object in Rancher), every mount point is an
// absolute clean path other than / with no blank or quote (it goes into
// cloud-init), a filesystem is one mkfs knows, a subnet is a UUID, a role
// is server or agent; what they refuse is fault.Invalid, which parks the
// order instead of retrying it.
func FuzzDecodeAttributes(f *testing.F) {
	f.Add([]byte(`{"name":"production-cluster","worker_nodes_count":2,"worker_nodes_flavor_name":"m1.xlarge","worker_nodes_data_volume_size":102400,` +
		`"openstack_offering_uuid_list":["11111111-1111-4111-8111-111111111111"],"install_longhorn":true,"worker_nodes_longhorn_volume_size":204800}`))
	f.Add([]byte(`{"name":"self-managed","nodes":[{"role":"server","subnet":"22222222-2222-4222-8222-222222222222","flavor":"m1.large",` +
		`"system_volume_size":65536,"data_volumes":[{"size":51200,"mount_point":"/opt/rke2_storage","filesystem":"btrfs"}]}],` +
		`"ssh_public_key":"ssh-ed25519 AAAAC3Nz user@host","security_groups":["default"]}`))
	f.Add([]byte(`{"worker_nodes_count":1}`))
	f.Add([]byte(`{"name":"renamed"}`))
	f.Add([]byte(`{"name":"a","nodes":[{"role":"agent","subnet":"x","data_volumes":[{"size":1,"mount_point":"/a/../b"},{"size":1,"mount_point":"/a\"; rm -rf /"}]}]}`))
	f.Add([]byte(`{"name":"Prod_Cluster","worker_nodes_count":1e400}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, merr := DecodeManagedAttributes(raw)
		checkRefusal(t, merr)
		if merr == nil {
			// A managed cluster is named k8s-<resource slug>
			// (FuzzClusterNames); the order's name is only its display
			// name, free text as Waldur's names are, but never one that
			// OpenStack refuses.
			if m.Name != "" && checkOpenStackName(m.Name) != nil {
				t.Fatalf("managed display name %q accepted, but OpenStack refuses it", m.Name)
			}
			if m.WorkerNodesCount < 1 || m.WorkerNodesDataVolumeSizeMB < 1 {
				t.Fatalf("managed attributes with %d workers of %d MB accepted", m.WorkerNodesCount, m.WorkerNodesDataVolumeSizeMB)
			}
		}
		s, serr := DecodeSelfManagedAttributes(raw)
		checkRefusal(t, serr)
		if serr == nil {
			checkClusterLabel(t, s.Name)
			if len(s.Nodes) == 0 {
				t.Fatal("a self-managed cluster without nodes accepted")
			}
			for _, n := range s.Nodes {
				checkNode(t, n)
			}
		}
		u, uerr := DecodeUpdateAttributes(raw)
		checkRefusal(t, uerr)
		if uerr == nil {
			if u.Name != nil {
				checkClusterLabel(t, *u.Name)
			}
			if u.WorkerNodesCount != nil && *u.WorkerNodesCount < 1 {
				t.Fatalf("update to %d workers accepted", *u.WorkerNodesCount)
			}
		}
		if merr == nil || serr == nil || uerr == nil {
			// json.Valid, not Unmarshal: a number past float64's range
			// ({"":1e700}) is valid JSON, which the decoders read exactly.
			if !json.Valid(raw) && len(strings.TrimSpace(string(raw))) > 0 {
				t.Fatalf("attributes %q that are not JSON accepted", raw)
			}
		}
	})
}

func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, fault.Invalid) {
		t.Fatalf("refusal %v is not fault.Invalid", err)
	}
}

func checkClusterLabel(t *testing.T, name string) {
	t.Helper()
	if !isLabel(name) {
		t.Fatalf("cluster name %q accepted: not an RFC 1123 label", name)
	}
}

func checkNode(t *testing.T, n NodeAttributes) {
	t.Helper()
	if n.Role != RoleServer && n.Role != RoleAgent {
		t.Fatalf("node role %q accepted", n.Role)
	}
	if !uuidRe.MatchString(n.Subnet) {
		t.Fatalf("subnet %q accepted", n.Subnet)
	}
	seen := map[string]bool{}
	for _, v := range n.DataVolumes {
		mp := v.MountPoint
		if !path.IsAbs(mp) || path.Clean(mp) != mp || mp == "/" || strings.ContainsAny(mp, " \t\r\n\"'\\`$") {
			t.Fatalf("mount point %q accepted", mp)
		}
		if seen[mp] {
			t.Fatalf("mount point %q accepted twice on one node", mp)
		}
		seen[mp] = true
		if !slices.Contains([]string{"btrfs", "ext4", "xfs"}, v.Filesystem) {
			t.Fatalf("filesystem %q accepted", v.Filesystem)
		}
	}
}

// FuzzClusterNames feeds the names a cluster's objects get every resource,
// project and offering slug. Once the resource passes checkResource, the
// Rancher cluster, load balancer and node names are RFC 1123 labels of at
// most 63 characters under k8s- (a VM's name is its hostname, which
// Rancher matches nodes by), the Keystone tenant and user names fit
// Keystone's 64 bytes under os-tenant-, and Neutron's names its 255; and
// two different resource slugs never give one cluster name.
func FuzzClusterNames(f *testing.F) {
	f.Add("production-cluster", "physics", "az-a", "production-cluster-2", "physics")
	f.Add(strings.Repeat("a", 80), strings.Repeat("p", 80), "az-b", strings.Repeat("a", 81), strings.Repeat("p", 80))
	f.Add("Prod", "phys", "az", "prod", "phys")
	f.Add("a_b", "p", "az", "a-b", "p")
	f.Add("k8s", "p/../q", "az", "lb-k8s", "p")
	f.Add("c", "a-b", "az", "b-c", "a") // the dash that "<project>-<resource>" alone loses
	f.Fuzz(func(t *testing.T, slug, projectSlug, offeringSlug, other, otherProject string) {
		r := backend.Resource{UUID: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", Slug: slug, ProjectSlug: projectSlug}
		if err := checkResource(r, true); err != nil {
			checkRefusal(t, err)
			return
		}
		if checkSlug("the offering slug", offeringSlug) != "" {
			return // an offering's slug comes from the site's config, checked there
		}
		cluster := ClusterName(slug)
		for _, n := range []string{cluster, LoadBalancerName(slug), NodeName(cluster, 1), NodeName(cluster, 1000)} {
			if !isLabel(n) || !strings.HasPrefix(n, "k8s-") {
				t.Fatalf("name %q (slug %q) is no label under k8s-", n, slug)
			}
		}
		tenant := TenantName(VMProjectSlug(r), offeringSlug)
		if len(tenant) > maxKeystoneName || !strings.HasPrefix(tenant, "os-tenant-") || len(TenantUserName(tenant)) > maxKeystoneName {
			t.Fatalf("tenant %q is over %d bytes or outside os-tenant-", tenant, maxKeystoneName)
		}
		for _, n := range []string{tenant, TenantUserName(tenant), NetworkName(tenant), SubnetName(tenant), RouterName(tenant)} {
			if checkOpenStackName(n) != nil {
				t.Fatalf("OpenStack name %q refused by its own check", n)
			}
		}
		if checkResourceSlug(other) == "" && other != slug && ClusterName(other) == cluster {
			t.Fatalf("slugs %q and %q share cluster %q", slug, other, cluster)
		}
		o := backend.Resource{UUID: r.UUID, Slug: other, ProjectSlug: otherProject}
		if checkResource(o, true) == nil && (other != slug || otherProject != projectSlug) && TenantName(VMProjectSlug(o), offeringSlug) == tenant {
			t.Fatalf("%q/%q and %q/%q share tenant %q", projectSlug, slug, otherProject, other, tenant)
		}
	})
}

// isLabel is RFC 1123's label as the Kubernetes API server checks it:
// the oracle is the rule the platform enforces, not sitebus's own check.
func isLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }
