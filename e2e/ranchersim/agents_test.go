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
