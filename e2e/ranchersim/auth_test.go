package ranchersim_test

import (
	"net/http"
	"testing"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

func TestAuth(t *testing.T) {
	sim := ranchersim.NewTestServer(t, ranchersim.Options{})
	paths := []string{"/v3", "/v3/clusters/" + ranchersim.DefaultClusterID, "/v3/projects",
		"/v3/projectroletemplatebindings?projectId=x", "/k8s/clusters/" + ranchersim.DefaultClusterID + "/api/v1/namespaces",
		"/no/such/path"}
	tests := []struct {
		name       string
		user, pass string
	}{
		{"no credentials", "", ""},
		{"a wrong secret key", ranchersim.DefaultAccessKey, "wrong"},
		{"a wrong access key", "token-other", ranchersim.DefaultSecretKey},
		{"the keys swapped", ranchersim.DefaultSecretKey, ranchersim.DefaultAccessKey},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is a 401 with Rancher's body everywhere", func(t *testing.T) {
			c := newClient(t, sim)
			c.user, c.pass = tc.user, tc.pass
			for _, p := range paths {
				r := c.do("GET", p, nil).want(t, http.StatusUnauthorized)
				// Rancher's 401 is the one error with a string status and no
				// code; a client parsing errors must cope with it.
				if r.obj["type"] != "error" || r.obj["status"] != "401" || r.obj["message"] != "must authenticate" ||
					r.obj["code"] != nil || len(r.obj) != 3 {
					t.Fatalf("%s: body %s", p, r.raw)
				}
			}
		})
	}

	t.Run("the login probe POST /v3 passes with basic auth", func(t *testing.T) {
		r := newClient(t, sim).do("POST", "/v3", nil).want(t, http.StatusOK)
		eq(t, "type", r.str("type"), "apiRoot")
	})

	t.Run("a bearer token access:secret is accepted too", func(t *testing.T) {
		req, _ := http.NewRequest("GET", sim.URL()+"/v3/clusters/"+ranchersim.DefaultClusterID, nil)
		req.Header.Set("Authorization", "Bearer "+ranchersim.DefaultAccessKey+":"+ranchersim.DefaultSecretKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		eq(t, "status", resp.StatusCode, http.StatusOK)
	})

	t.Run("custom keys replace the defaults", func(t *testing.T) {
		custom := ranchersim.NewTestServer(t, ranchersim.Options{AccessKey: "token-abc12", SecretKey: "s3cret"})
		c := newClient(t, custom)
		c.do("GET", "/v3/projects", nil).want(t, http.StatusOK)
		c.user, c.pass = ranchersim.DefaultAccessKey, ranchersim.DefaultSecretKey
		c.do("GET", "/v3/projects", nil).want(t, http.StatusUnauthorized)
	})
}

func TestCluster(t *testing.T) {
	sim := ranchersim.NewTestServer(t, ranchersim.Options{ClusterID: "c-m-abcd1234", ClusterName: "prod"})
	c := newClient(t, sim)
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the ping reads the cluster by id", func(t *testing.T) {
			r := c.do("GET", "/v3/clusters/c-m-abcd1234", nil).want(t, http.StatusOK)
			eq(t, "id", r.str("id"), "c-m-abcd1234")
			eq(t, "name", r.str("name"), "prod")
			eq(t, "type", r.str("type"), "cluster")
			eq(t, "state", r.str("state"), "active")
			links, _ := r.obj["links"].(map[string]any)
			eq(t, "self link", links["self"], any(sim.URL()+"/v3/clusters/c-m-abcd1234"))
		}},
		{"another cluster is a 404 NotFound", func(t *testing.T) {
			c.do("GET", "/v3/clusters/c-m-other", nil).wantErr(t, http.StatusNotFound, "NotFound")
		}},
		{"an unknown cluster action is a 422", func(t *testing.T) {
			c.do("POST", "/v3/clusters/c-m-abcd1234?action=rotateCertificates", map[string]any{}).
				wantErr(t, http.StatusUnprocessableEntity, "InvalidAction")
		}},
		{"without Kubernetes the cluster routes are 503 ClusterUnavailable", func(t *testing.T) {
			c.do("GET", "/v3/clusters/c-m-abcd1234/namespaces", nil).wantErr(t, http.StatusServiceUnavailable, "ClusterUnavailable")
			c.do("POST", "/v3/clusters/c-m-abcd1234?action=importYaml", map[string]any{"yaml": "a: b"}).
				wantErr(t, http.StatusServiceUnavailable, "ClusterUnavailable")
			c.do("GET", "/k8s/clusters/c-m-abcd1234/api", nil).wantErr(t, http.StatusServiceUnavailable, "ClusterUnavailable")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}
