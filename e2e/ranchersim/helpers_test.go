package ranchersim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/simkit"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

// client speaks to the simulator the way the Python agent does: basic auth,
// JSON bodies, and the path and query exactly as given (no re-encoding).
type client struct {
	t          *testing.T
	base       string
	user, pass string
	hc         *http.Client
}

func newClient(t *testing.T, sim *ranchersim.Server) *client {
	o := sim.Options()
	return &client{t: t, base: sim.URL(), user: o.AccessKey, pass: o.SecretKey,
		hc: &http.Client{Timeout: 30 * time.Second}}
}

// response is a decoded answer; obj is the JSON object body, if any.
type response struct {
	status int
	raw    string
	obj    map[string]any
}

func (c *client) do(method, pathAndQuery string, body any) response {
	c.t.Helper()
	return c.doCtx(context.Background(), method, pathAndQuery, body)
}

func (c *client) doCtx(ctx context.Context, method, pathAndQuery string, body any) response {
	c.t.Helper()
	var auth func(*http.Request)
	if c.user != "" {
		auth = func(req *http.Request) { req.SetBasicAuth(c.user, c.pass) }
	}
	status, raw := simkit.TestCall(ctx, c.t, c.hc, method, c.base, pathAndQuery, "application/json", body, auth)
	r := response{status: status, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.obj)
	return r
}

// want fails unless the response has status.
func (r response) want(t *testing.T, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.raw)
	}
	return r
}

// wantErr fails unless the response is a norman error with status and code.
func (r response) wantErr(t *testing.T, status int, code string) response {
	t.Helper()
	r.want(t, status)
	if r.obj["type"] != "error" || r.obj["baseType"] != "error" || r.obj["code"] != code ||
		r.obj["status"] != float64(status) {
		t.Fatalf("want a norman error %d %s, got %s", status, code, r.raw)
	}
	return r
}

func (r response) str(key string) string {
	s, _ := r.obj[key].(string)
	return s
}

// data returns the collection's items, checking the envelope.
func (r response) data(t *testing.T, resourceType string) []map[string]any {
	t.Helper()
	r.want(t, http.StatusOK)
	if r.obj["type"] != "collection" || r.obj["resourceType"] != resourceType {
		t.Fatalf("not a %s collection: %s", resourceType, r.raw)
	}
	items, _ := r.obj["data"].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		out = append(out, it.(map[string]any))
	}
	if total := r.obj["pagination"].(map[string]any)["total"]; total != float64(len(out)) {
		t.Fatalf("pagination.total %v for %d items", total, len(out))
	}
	return out
}

func ids(items []map[string]any) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it["id"].(string))
	}
	return out
}

func fieldOf(items []map[string]any, key string) []string {
	out := []string{}
	for _, it := range items {
		s, _ := it[key].(string)
		out = append(out, s)
	}
	return out
}

// createProject creates a project the way the agent does and returns its
// id.
func (c *client) createProject(name string) string {
	c.t.Helper()
	r := c.do("POST", "/v3/projects", map[string]any{
		"type": "project", "clusterId": ranchersim.DefaultClusterID, "name": name, "description": name + " (test)",
		"annotations": map[string]string{"waldur/organization": "org", "waldur/managed": "true", "waldur/project_slug": "slug"},
	}).want(c.t, http.StatusCreated)
	return r.str("id")
}

func groupBinding(projectID, role, group string) map[string]any {
	return map[string]any{"type": "projectRoleTemplateBinding", "roleTemplateId": role, "projectId": projectID,
		"groupPrincipalId": "keycloakoidc_group://" + group}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func eqSlice(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
