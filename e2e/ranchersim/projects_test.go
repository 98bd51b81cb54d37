package ranchersim_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

var projectIDRe = regexp.MustCompile(`^c-m-sim00001:p-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

func TestProjects(t *testing.T) {
	const cluster = ranchersim.DefaultClusterID
	tests := []struct {
		name string
		opts ranchersim.Options
		run  func(t *testing.T, sim *ranchersim.Server, c *client)
	}{
		{"a created project has a c-…:p-… id and Rancher's fields", ranchersim.Options{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			id := c.createProject("waldur-alpha")
			if !projectIDRe.MatchString(id) {
				t.Fatalf("id %q", id)
			}
			r := c.do("GET", "/v3/projects/"+id, nil).want(t, http.StatusOK)
			for k, v := range map[string]string{"type": "project", "baseType": "project", "name": "waldur-alpha",
				"clusterId": cluster, "state": "active", "description": "waldur-alpha (test)", "creatorId": ranchersim.DefaultUserID} {
				eq(t, k, r.str(k), v)
			}
			ann := r.obj["annotations"].(map[string]any)
			eq(t, "organization annotation", ann["waldur/organization"], any("org"))
			if r.str("created") == "" || r.obj["links"].(map[string]any)["self"] != sim.URL()+"/v3/projects/"+id {
				t.Errorf("created/links: %s", r.raw)
			}
			// The id may also come URL-encoded.
			c.do("GET", "/v3/projects/"+url.PathEscape(id), nil).want(t, http.StatusOK)
		}},
		{"the listing filters by clusterId and name and includes Default and System", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client) {
			a := c.createProject("waldur-a")
			c.createProject("waldur-b")
			all := c.do("GET", "/v3/projects?clusterId="+cluster, nil).data(t, "project")
			if len(all) != 4 {
				t.Fatalf("projects %q", fieldOf(all, "name"))
			}
			named := c.do("GET", "/v3/projects?clusterId="+cluster+"&name=waldur-a", nil).data(t, "project")
			eqSlice(t, "by name", ids(named), []string{a})
			none := c.do("GET", "/v3/projects?clusterId=c-m-other", nil).data(t, "project")
			eq(t, "other cluster", len(none), 0)
		}},
		{"Rancher allows two projects with one name", ranchersim.Options{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			a, b := c.createProject("waldur-twin"), c.createProject("waldur-twin")
			if a == b {
				t.Fatalf("same id %s", a)
			}
			eq(t, "projects named", len(sim.ProjectsNamed("waldur-twin")), 2)
		}},
		{"missing required fields are 422 MissingRequired with the field", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client) {
			r := c.do("POST", "/v3/projects", map[string]any{"type": "project", "name": "x"}).
				wantErr(t, http.StatusUnprocessableEntity, "MissingRequired")
			eq(t, "fieldName", r.str("fieldName"), "clusterId")
			r = c.do("POST", "/v3/projects", map[string]any{"type": "project", "clusterId": cluster}).
				wantErr(t, http.StatusUnprocessableEntity, "MissingRequired")
			eq(t, "fieldName", r.str("fieldName"), "name")
			c.do("POST", "/v3/projects", map[string]any{"clusterId": "c-m-other", "name": "x"}).
				wantErr(t, http.StatusUnprocessableEntity, "InvalidReference")
		}},
		{"a body that is not an object is 422 InvalidBodyContent with the parser's reason", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client) {
			r := c.do("POST", "/v3/projects", "a string").wantErr(t, http.StatusUnprocessableEntity, "InvalidBodyContent")
			if msg := r.str("message"); !regexp.MustCompile(`^Failed to parse body: json: cannot unmarshal string`).MatchString(msg) {
				t.Fatalf("message %q", msg)
			}
		}},
		{"PUT replaces the fields it carries", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client) {
			id := c.createProject("waldur-put")
			c.do("PUT", "/v3/projects/"+id, map[string]any{"description": "new", "annotations": map[string]string{"k": "v"}}).
				want(t, http.StatusOK)
			r := c.do("GET", "/v3/projects/"+id, nil).want(t, http.StatusOK)
			eq(t, "description", r.str("description"), "new")
			eq(t, "name kept", r.str("name"), "waldur-put")
			eq(t, "annotation", r.obj["annotations"].(map[string]any)["k"], any("v"))
		}},
		{"a project gets Rancher's creator-project-owner binding", ranchersim.Options{}, func(t *testing.T, _ *ranchersim.Server, c *client) {
			id := c.createProject("waldur-owner")
			bs := c.do("GET", "/v3/projects/"+id+"/projectroletemplatebindings", nil).data(t, "projectRoleTemplateBinding")
			eqSlice(t, "users", fieldOf(bs, "userId"), []string{ranchersim.DefaultUserID})
			eqSlice(t, "roles", fieldOf(bs, "roleTemplateId"), []string{"project-owner"})
		}},
		{"a deleted project and its bindings are gone: 404 NotFound", ranchersim.Options{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			id := c.createProject("waldur-gone")
			c.do("POST", "/v3/projectroletemplatebindings", groupBinding(id, "workloads-manage", "g")).want(t, http.StatusCreated)
			c.do("DELETE", "/v3/projects/"+id, nil).want(t, http.StatusOK)
			c.do("GET", "/v3/projects/"+id, nil).wantErr(t, http.StatusNotFound, "NotFound")
			c.do("DELETE", "/v3/projects/"+id, nil).wantErr(t, http.StatusNotFound, "NotFound")
			eq(t, "bindings left", len(sim.Bindings(id)), 0)
		}},
		{"a project seeded behind the client's back is listed", ranchersim.Options{}, func(t *testing.T, sim *ranchersim.Server, c *client) {
			p, err := sim.AddProject(ranchersim.Project{Name: "waldur-manual"})
			if err != nil {
				t.Fatal(err)
			}
			r := c.do("GET", "/v3/projects?name=waldur-manual", nil).data(t, "project")
			eqSlice(t, "ids", ids(r), []string{p.ID})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := ranchersim.NewTestServer(t, tc.opts)
			tc.run(t, sim, newClient(t, sim))
		})
	}
}
