package ranchersim_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

var bindingIDRe = regexp.MustCompile(`^p-[bcdfghjklmnpqrstvwxz2456789]{5}:prtb-[a-z2-7]{10}$`)

func TestBindings(t *testing.T) {
	tests := []struct {
		name string
		opts ranchersim.Options
		run  func(t *testing.T, sim *ranchersim.Server, c *client, project string)
	}{
		{"the raw PRTB filter finds exactly the group's binding", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client, p string) {
			want := c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "project_x_workloads-manage")).
				want(t, http.StatusCreated).str("id")
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "project_y_workloads-manage")).
				want(t, http.StatusCreated)
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-view", "project_x_workloads-manage")).
				want(t, http.StatusCreated)
			// As the agent sends it: joined raw, not URL-encoded.
			raw := "/v3/projectroletemplatebindings?roleTemplateId=workloads-manage&projectId=" + p +
				"&groupPrincipalId=keycloakoidc_group://project_x_workloads-manage"
			eqSlice(t, "raw query", ids(c.do("GET", raw, nil).data(t, "projectRoleTemplateBinding")), []string{want})
			// And as a careful client encodes it.
			enc := "/v3/projectroletemplatebindings?" + url.Values{"roleTemplateId": {"workloads-manage"}, "projectId": {p},
				"groupPrincipalId": {"keycloakoidc_group://project_x_workloads-manage"}}.Encode()
			eqSlice(t, "encoded query", ids(c.do("GET", enc, nil).data(t, "projectRoleTemplateBinding")), []string{want})
			other := "/v3/projectroletemplatebindings?roleTemplateId=project-owner&projectId=" + p +
				"&groupPrincipalId=keycloakoidc_group://project_x_workloads-manage"
			eq(t, "other role", len(c.do("GET", other, nil).data(t, "projectRoleTemplateBinding")), 0)
		}},
		{"a '+' in a raw value is a '+', not a space", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client, p string) {
			id := c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "a+b")).
				want(t, http.StatusCreated).str("id")
			got := c.do("GET", "/v3/projectroletemplatebindings?groupPrincipalId=keycloakoidc_group://a+b", nil).data(t, "projectRoleTemplateBinding")
			eqSlice(t, "ids", ids(got), []string{id})
		}},
		{"a filter on a field bindings lack is ignored, as norman does", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client, p string) {
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "g1")).want(t, http.StatusCreated)
			got := c.do("GET", "/v3/projectroletemplatebindings?projectId="+p+"&noSuchField=1", nil).data(t, "projectRoleTemplateBinding")
			eq(t, "creator and group bindings", len(got), 2)
		}},
		{"a binding has a p-…:prtb-… id and Rancher's fields", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client, p string) {
			r := c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "g")).want(t, http.StatusCreated)
			if !bindingIDRe.MatchString(r.str("id")) {
				t.Fatalf("id %q", r.str("id"))
			}
			eq(t, "type", r.str("type"), "projectRoleTemplateBinding")
			eq(t, "projectId", r.str("projectId"), p)
			if r.obj["userId"] != nil {
				t.Errorf("a group binding's userId is null, got %v", r.obj["userId"])
			}
			c.do("GET", "/v3/projectRoleTemplateBindings/"+r.str("id"), nil).want(t, http.StatusOK)
		}},
		{"an identical binding is a 409 AlreadyExists", ranchersim.Options{}, func(t *testing.T, sim *ranchersim.Server, c *client, p string) {
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "g")).want(t, http.StatusCreated)
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "g")).
				wantErr(t, http.StatusConflict, "AlreadyExists")
			eq(t, "bindings", len(sim.Bindings(p)), 2) // creator + one
		}},
		{"invalid bindings are 422s", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client, p string) {
			post := func(body map[string]any) response { return c.do("POST", "/v3/projectroletemplatebindings", body) }
			r := post(map[string]any{"projectId": p, "groupPrincipalId": "x"}).wantErr(t, http.StatusUnprocessableEntity, "MissingRequired")
			eq(t, "fieldName", r.str("fieldName"), "roleTemplateId")
			r = post(map[string]any{"roleTemplateId": "workloads-manage", "groupPrincipalId": "x"}).wantErr(t, http.StatusUnprocessableEntity, "MissingRequired")
			eq(t, "fieldName", r.str("fieldName"), "projectId")
			post(groupBinding("c-m-sim00001:p-zzzzz", "workloads-manage", "g")).wantErr(t, http.StatusUnprocessableEntity, "InvalidReference")
			post(groupBinding(p, "no-such-role", "g")).wantErr(t, http.StatusUnprocessableEntity, "InvalidReference")
			post(map[string]any{"roleTemplateId": "workloads-manage", "projectId": p}).wantErr(t, http.StatusUnprocessableEntity, "InvalidBodyContent")
			post(map[string]any{"roleTemplateId": "workloads-manage", "projectId": p, "userId": "u", "groupId": "g"}).
				wantErr(t, http.StatusUnprocessableEntity, "InvalidBodyContent")
		}},
		{"a deleted binding is gone; deleting it again is a 404", ranchersim.Options{}, func(t *testing.T, sim *ranchersim.Server, c *client, p string) {
			id := c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "g")).want(t, http.StatusCreated).str("id")
			c.do("DELETE", "/v3/projectroletemplatebindings/"+id, nil).want(t, http.StatusOK)
			c.do("DELETE", "/v3/projectroletemplatebindings/"+id, nil).wantErr(t, http.StatusNotFound, "NotFound")
			for _, b := range sim.Bindings(p) {
				if b.ID == id {
					t.Fatalf("binding %s still there", id)
				}
			}
			// Gone, the same binding can be made again.
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(p, "workloads-manage", "g")).want(t, http.StatusCreated)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := ranchersim.NewTestServer(t, tc.opts)
			c := newClient(t, sim)
			tc.run(t, sim, c, c.createProject("waldur-bind"))
		})
	}
}
