package ranchersim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

// importedCluster makes a v1 provisioning cluster with an empty spec (an
// imported cluster) and returns its v3 id and the token Rancher issued.
func importedCluster(t *testing.T, sim *ranchersim.Server, c *client, name string) (clusterID, token string) {
	t.Helper()
	c.do(http.MethodPost, "/v1/provisioning.cattle.io.clusters", map[string]any{"type": "provisioning.cattle.io.cluster",
		"metadata": map[string]any{"name": name, "namespace": ranchersim.FleetNamespace}, "spec": map[string]any{}}).want(t, http.StatusCreated)
	pc, ok := sim.ProvisioningClusterNamed(name)
	if !ok || pc.ClusterID == "" {
		t.Fatalf("imported cluster %s: %+v", name, pc)
	}
	for _, tk := range sim.Inventory().Tokens {
		if tk.ClusterID == pc.ClusterID {
			return pc.ClusterID, tk.Token
		}
	}
	t.Fatalf("no registration token for %s", pc.ClusterID)
	return "", ""
}

// As Rancher's import handler: the manifest is served, without
// authentication, only for a token and the cluster it was issued for.
func TestImportManifestIsServedOnlyForATokenAndItsCluster(t *testing.T) {
	sim := ranchersim.NewTestServer(t, ranchersim.Options{})
	c := newClient(t, sim)
	one, tokOne := importedCluster(t, sim, c, "vc-one")
	two, _ := importedCluster(t, sim, c, "vc-two")
	anon := &client{t: t, base: sim.URL(), hc: c.hc}
	tests := map[string]struct {
		file   string
		status int
	}{
		"the token and its cluster":        {tokOne + "_" + one + ".yaml", http.StatusOK},
		"an unknown token":                 {"nosuchtoken_" + one + ".yaml", http.StatusNotFound},
		"the token of another cluster":     {tokOne + "_" + two + ".yaml", http.StatusNotFound},
		"no cluster in the name":           {tokOne + ".yaml", http.StatusNotFound},
		"not a yaml file":                  {tokOne + "_" + one, http.StatusNotFound},
		"the token and an unknown cluster": {tokOne + "_c-m-nosuch.yaml", http.StatusNotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := anon.do(http.MethodGet, "/v3/import/"+tc.file, nil)
			if r.status != tc.status {
				t.Fatalf("GET %s: %d %s, want %d", tc.file, r.status, r.raw, tc.status)
			}
			if tc.status == http.StatusOK && !strings.Contains(r.raw, ranchersim.AgentCredentialsSecret(tokOne)) {
				t.Errorf("manifest without the token's credentials Secret:\n%s", r.raw)
			}
		})
	}
}

// As Rancher: an imported cluster starts with its creator's
// creator-cluster-owner binding, and a cluster binding keeps the
// annotations it was created with (member sync marks its own with them).
func TestImportedClusterHasItsCreatorBindingAndBindingsKeepAnnotations(t *testing.T) {
	sim := ranchersim.NewTestServer(t, ranchersim.Options{})
	c := newClient(t, sim)
	id, _ := importedCluster(t, sim, c, "vc-bind")
	list := c.do(http.MethodGet, "/v3/clusterroletemplatebindings?clusterId="+id, nil).data(t, "clusterRoleTemplateBinding")
	if len(list) != 1 || list[0]["name"] != "creator-cluster-owner" || list[0]["roleTemplateId"] != "cluster-owner" ||
		list[0]["userPrincipalId"] != "local://"+sim.Options().UserID {
		t.Fatalf("bindings of a new imported cluster %v, want the creator's cluster-owner", list)
	}
	made := c.do(http.MethodPost, "/v3/clusterroletemplatebindings", map[string]any{"type": "clusterRoleTemplateBinding",
		"clusterId": id, "roleTemplateId": "cluster-member", "userPrincipalId": "keycloakoidc_user://alice",
		"annotations": map[string]string{"waldur/managed": "true"}}).want(t, http.StatusCreated)
	got := c.do(http.MethodGet, "/v3/clusterroletemplatebindings/"+made.str("id"), nil).want(t, http.StatusOK)
	if ann, _ := got.obj["annotations"].(map[string]any); ann["waldur/managed"] != "true" {
		t.Errorf("annotations %v, want the ones it was made with", got.obj["annotations"])
	}
}
