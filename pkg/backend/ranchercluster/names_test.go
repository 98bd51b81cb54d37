package ranchercluster

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := map[string]struct{ got, want string }{
		"tenant: os-tenant-<vm project slug>-<offering slug>":    {TenantName("physics-prod", "az-a"), "os-tenant-physics-prod-az-a"},
		"vm project slug: the project's, the resource's, a hash": {VMProjectSlug(resource), "physics-production-cluster-987e097d"},
		"a too long tenant keeps 64 bytes and a hash":            {TenantName(long, "az-a"), "os-tenant-" + strings.Repeat("x", 45) + "-bdc66cf2"},
		"network: the tenant's first 25 characters":              {NetworkName("os-tenant-physics-production-cluster-az-a"), "os-tenant-physics-product-int-net"},
		"subnet: <tenant>-sub-net":                               {SubnetName("os-tenant-p-az-a"), "os-tenant-p-az-a-sub-net"},
		"router: <tenant>-router":                                {RouterName("os-tenant-p-az-a"), "os-tenant-p-az-a-router"},
		"user: <tenant>-user":                                    {TenantUserName("os-tenant-p-az-a"), "os-tenant-p-az-a-user"},
		"cluster: k8s-<resource slug>":                           {ClusterName("prod"), "k8s-prod"},
		"load balancer: k8s-lb-<resource slug>":                  {LoadBalancerName("prod"), "k8s-lb-prod"},
		"node: <cluster>-rancher-node-<n>":                       {NodeName("k8s-prod", 12), "k8s-prod-rancher-node-12"},
		"a long node name stays one DNS label with its number":   {NodeName("k8s-"+long, 7), "k8s-" + strings.Repeat("x", 35) + "-7a2d0a37-rancher-node-7"},
		"volumes: <vm>-system and <vm>-data-<i>":                 {VolumeName("n1", 0) + " " + VolumeName("n1", 2), "n1-system n1-data-2"},
		"data devices after the system disk":                     {DataDevice("sd", 1) + " " + DataDevice("vd", 2), "/dev/sdb /dev/vdc"},
		"keycloak parent: c_<uuid hex>":                          {KeycloakParentGroup("0a1b"), "c_0a1b"},
		"keycloak child: c_<uuid hex>_<role>":                    {KeycloakRoleGroup("0a1b", "cluster-owner"), "c_0a1b_cluster-owner"},
		"argocd secret: cluster-<uuid hex>":                      {ArgoCDSecretName("0a1b"), "cluster-0a1b"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q want %q", tc.got, tc.want)
			}
		})
	}
	if n := NodeName("k8s-"+long, 7); len(n) > 63 {
		t.Errorf("node name %q has %d bytes", n, len(n))
	}
	if a, b := TenantName(long+"a", "az"), TenantName(long+"b", "az"); a == b {
		t.Errorf("two long names became one: %s", a)
	}
	ab := backend.Resource{ProjectSlug: "a-b", Slug: "c"}
	bc := backend.Resource{ProjectSlug: "a", Slug: "b-c"}
	if a, b := TenantName(VMProjectSlug(ab), "az"), TenantName(VMProjectSlug(bc), "az"); a == b {
		t.Errorf("project a-b with resource c and project a with resource b-c share tenant %s", a)
	}
}

func TestNextNodeNumbersTakesTheLowestFree(t *testing.T) {
	existing := []string{NodeName("k8s-p", 1), NodeName("k8s-p", 3), NodeName("k8s-other", 2), "unrelated"}
	if got := NextNodeNumbers("k8s-p", existing, 3); !reflect.DeepEqual(got, []int{2, 4, 5}) {
		t.Errorf("got %v", got)
	}
}

func TestCheckResourceRefusesNamesThatWouldBeRewritten(t *testing.T) {
	tests := map[string]struct {
		slug, projectSlug, uuid string
		want                    string
	}{
		"an underscore, which no hostname can hold": {"prod_1", "physics", resource.UUID,
			`the resource slug "prod_1" cannot name a cluster: lower-case letters, digits and '-', starting and ending with a letter or digit (rename the resource)`},
		"no slug":         {"", "physics", resource.UUID, "the resource has no slug to name its cluster by"},
		"no project slug": {"prod", "", resource.UUID, "the project slug is empty"},
		"a project slug with a space": {"prod", "my project", resource.UUID,
			`the project slug "my project" is not a slug (lower-case letters, digits, '-' and '_')`},
		"no UUID": {"prod", "physics", "x", `the resource UUID "x" is not a UUID`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := resource
			r.Slug, r.ProjectSlug, r.UUID = tc.slug, tc.projectSlug, tc.uuid
			wantTerminal(t, checkResource(r, true), tc.want)
		})
	}
}
