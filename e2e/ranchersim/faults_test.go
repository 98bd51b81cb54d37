package ranchersim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

func TestFaults(t *testing.T) {
	const clusterPath = "/v3/clusters/" + ranchersim.DefaultClusterID
	tests := []struct {
		name string
		run  func(t *testing.T, sim *ranchersim.Server, c *client)
	}{
		{"a counted fault fails the next N matching calls only", func(t *testing.T, sim *ranchersim.Server, c *client) {
			sim.AddFault(ranchersim.Fault{Method: "POST", PathPrefix: "/v3/projects", Status: 500, Count: 2})
			body := map[string]any{"clusterId": ranchersim.DefaultClusterID, "name": "waldur-f"}
			c.do("POST", "/v3/projects", body).wantErr(t, 500, "ServerError")
			c.do("GET", "/v3/projects", nil).want(t, http.StatusOK) // does not match
			c.do("POST", "/v3/projects", body).want(t, 500)
			c.do("POST", "/v3/projects", body).want(t, http.StatusCreated)
			eq(t, "faulted calls", sim.CallCount("POST", "/v3/projects", 500), 2)
			eq(t, "projects made", len(sim.ProjectsNamed("waldur-f")), 1)
		}},
		{"a fault can target an action by its query", func(t *testing.T, sim *ranchersim.Server, c *client) {
			sim.AddFault(ranchersim.Fault{PathPrefix: clusterPath, QueryContains: "action=importYaml", Status: 503, Body: "upstream down"})
			c.do("GET", clusterPath, nil).want(t, http.StatusOK)
			r := c.do("POST", clusterPath+"?action=importYaml", map[string]any{"yaml": "x"}).want(t, 503)
			eq(t, "body", r.raw, "upstream down")
			sim.ClearFaults()
			// Without Kubernetes behind it, the real handler answers 503 too,
			// but with Rancher's error body.
			c.do("POST", clusterPath+"?action=importYaml", map[string]any{"yaml": "x"}).wantErr(t, 503, "ClusterUnavailable")
		}},
		{"a hang outlasts a client timeout", func(t *testing.T, sim *ranchersim.Server, c *client) {
			// A minute's hang against a 100ms client timeout: the bound sits
			// far from both.
			sim.AddFault(ranchersim.Fault{PathPrefix: "/v3/projects", Delay: time.Minute, Count: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", sim.URL()+"/v3/projects", nil)
			req.SetBasicAuth(ranchersim.DefaultAccessKey, ranchersim.DefaultSecretKey)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			if err == nil || time.Since(start) > 30*time.Second {
				t.Fatalf("err %v after %v", err, time.Since(start))
			}
			c.do("GET", "/v3/projects", nil).want(t, http.StatusOK)
		}},
		{"down answers 503 everywhere until up", func(t *testing.T, sim *ranchersim.Server, c *client) {
			sim.Down(true)
			c.do("POST", "/v3", nil).want(t, 503)
			c.do("GET", clusterPath, nil).want(t, 503)
			sim.Down(false)
			c.do("GET", clusterPath, nil).want(t, http.StatusOK)
		}},
		{"the call log keeps method, path, raw query, body and status", func(t *testing.T, sim *ranchersim.Server, c *client) {
			sim.ResetCalls()
			c.do("GET", "/v3/projectroletemplatebindings?groupPrincipalId=keycloakoidc_group://g&projectId=c-m-1:p-2", nil)
			c.do("POST", "/v3/projects", map[string]any{"name": "x"})
			calls := sim.Calls()
			if len(calls) != 2 {
				t.Fatalf("calls %+v", calls)
			}
			eq(t, "raw query", calls[0].Query, "groupPrincipalId=keycloakoidc_group://g&projectId=c-m-1:p-2")
			eq(t, "path", calls[0].Path, "/v3/projectroletemplatebindings")
			eq(t, "status", calls[0].Status, 200)
			eq(t, "method", calls[1].Method, "POST")
			eq(t, "body", calls[1].Body, `{"name":"x"}`)
			eq(t, "status", calls[1].Status, 422)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := ranchersim.NewTestServer(t, ranchersim.Options{})
			tc.run(t, sim, newClient(t, sim))
		})
	}
}

func TestAdminHTTP(t *testing.T) {
	sim := ranchersim.NewTestServer(t, ranchersim.Options{})
	c := newClient(t, sim)
	admin := newClient(t, sim)
	admin.user = "" // the admin API needs no key

	admin.do("POST", "/sim/faults", map[string]any{"path_prefix": "/v3/projects", "status": 502, "count": 1}).want(t, http.StatusNoContent)
	admin.do("POST", "/sim/down", map[string]any{"down": true}).want(t, http.StatusNoContent)
	c.do("GET", "/v3/projects", nil).want(t, 503)
	// Down and faults do not apply to the admin API.
	admin.do("GET", "/sim/calls", nil).want(t, http.StatusOK)
	admin.do("POST", "/sim/down", map[string]any{"down": false}).want(t, http.StatusNoContent)
	c.do("GET", "/v3/projects", nil).want(t, 502)
	id := c.createProject("waldur-admin")

	var projects []ranchersim.Project
	r := admin.do("GET", "/sim/projects", nil).want(t, http.StatusOK)
	if err := json.Unmarshal([]byte(r.raw), &projects); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range projects {
		found = found || p.ID == id
	}
	if !found {
		t.Fatalf("project %s not in %s", id, r.raw)
	}
	var calls []ranchersim.Call
	if err := json.Unmarshal([]byte(admin.do("GET", "/sim/calls", nil).raw), &calls); err != nil {
		t.Fatal(err)
	}
	eq(t, "logged API calls (admin calls are not)", len(calls), 3)
	admin.do("DELETE", "/sim/calls", nil).want(t, http.StatusNoContent)
	eq(t, "calls after reset", len(sim.Calls()), 0)
}
