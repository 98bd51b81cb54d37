package keycloaksim_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Nerzal/gocloak/v13"
)

// rawGroup has the fields gocloak's Group lacks.
type rawGroup struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Path          string     `json:"path"`
	ParentID      string     `json:"parentId"`
	SubGroupCount *int       `json:"subGroupCount"`
	SubGroups     []rawGroup `json:"subGroups"`
}

func (e *env) rawGroups(t *testing.T, path string, query map[string]string) []rawGroup {
	t.Helper()
	var out []rawGroup
	resp, err := e.gc.GetRequestWithBearerAuth(context.Background(), e.token).
		SetQueryParams(query).SetResult(&out).Get(e.sim.URL() + "/admin/realms/waldur" + path)
	must(t, err)
	if resp.IsError() {
		t.Fatalf("GET %s: %s", path, resp.Status())
	}
	return out
}

// tree creates parent "team" with children "a" and "b", and "b" gets a
// child "a" too (the same name under different parents is allowed).
func (e *env) tree(t *testing.T) (team, a, b, ba string) {
	t.Helper()
	ctx := context.Background()
	var err error
	team, err = e.gc.CreateGroup(ctx, e.token, "waldur", group("team", nil))
	must(t, err)
	a, err = e.gc.CreateChildGroup(ctx, e.token, "waldur", team, group("a", nil))
	must(t, err)
	b, err = e.gc.CreateChildGroup(ctx, e.token, "waldur", team, group("b", nil))
	must(t, err)
	ba, err = e.gc.CreateChildGroup(ctx, e.token, "waldur", b, group("a", nil))
	must(t, err)
	return
}

func TestGroups(t *testing.T) {
	ctx := context.Background()
	runScenarios(t, newEnv, []scenario[*env]{
		{"create returns the id from Location and stores attributes", func(t *testing.T, e *env) {
			id, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("ns_x_admin", map[string][]string{
				"description": {"Namespace x admin access"}, "managed_by": {"sitebus"}}))
			must(t, err)
			g, err := e.gc.GetGroup(ctx, e.token, "waldur", id)
			must(t, err)
			eq(t, "path", gocloak.PString(g.Path), "/ns_x_admin")
			eq(t, "managed_by", (*g.Attributes)["managed_by"][0], "sitebus")
		}},
		{"a duplicate top-level name is a 409 with Keycloak's message", func(t *testing.T, e *env) {
			_, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("dup", nil))
			must(t, err)
			_, err = e.gc.CreateGroup(ctx, e.token, "waldur", group("dup", nil))
			apiErr(t, err, 409, "Top level group named 'dup' already exists.")
		}},
		{"a duplicate sibling name is a 409, a cousin with that name is fine", func(t *testing.T, e *env) {
			team, _, _, _ := e.tree(t)
			_, err := e.gc.CreateChildGroup(ctx, e.token, "waldur", team, group("a", nil))
			apiErr(t, err, 409, "Sibling group named 'a' already exists.")
		}},
		{"update renames and replaces attributes; a sibling's name is a 409", func(t *testing.T, e *env) {
			_, a, _, _ := e.tree(t)
			g, err := e.gc.GetGroup(ctx, e.token, "waldur", a)
			must(t, err)
			g.Name = gocloak.StringP("b")
			apiErr(t, e.gc.UpdateGroup(ctx, e.token, "waldur", *g), 409, "Sibling group named 'b' already exists.")
			g.Name = gocloak.StringP("a2")
			g.Attributes = &map[string][]string{"k": {"v"}}
			must(t, e.gc.UpdateGroup(ctx, e.token, "waldur", *g))
			g, err = e.gc.GetGroup(ctx, e.token, "waldur", a)
			must(t, err)
			eq(t, "path", gocloak.PString(g.Path), "/team/a2")
			eq(t, "attribute", (*g.Attributes)["k"][0], "v")
		}},
		{"a name is required", func(t *testing.T, e *env) {
			_, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("", nil))
			apiErr(t, err, 400, "Group name is missing")
		}},
		{"a child of a missing parent is a 404", func(t *testing.T, e *env) {
			_, err := e.gc.CreateChildGroup(ctx, e.token, "waldur", "no-such-id", group("x", nil))
			apiErr(t, err, 404, "Could not find group by id")
		}},
		{"the top-level list counts subgroups and does not inline them", func(t *testing.T, e *env) {
			e.tree(t)
			got := e.rawGroups(t, "/groups", nil)
			if len(got) != 1 || got[0].Name != "team" || got[0].SubGroupCount == nil || *got[0].SubGroupCount != 2 || len(got[0].SubGroups) != 0 {
				t.Fatalf("top level: %+v", got)
			}
		}},
		{"an exact search finds nested groups inside their ancestry", func(t *testing.T, e *env) {
			team, _, _, _ := e.tree(t)
			got := e.rawGroups(t, "/groups", map[string]string{"search": "a", "exact": "true"})
			if len(got) != 1 || got[0].ID != team {
				t.Fatalf("roots: %+v", got)
			}
			var paths []string
			var walk func(gs []rawGroup)
			walk = func(gs []rawGroup) {
				for _, g := range gs {
					paths = append(paths, g.Path)
					walk(g.SubGroups)
				}
			}
			walk(got)
			slices.Sort(paths)
			want := []string{"/team", "/team/a", "/team/b", "/team/b/a"}
			if !slices.Equal(paths, want) {
				t.Fatalf("paths %v, want %v", paths, want)
			}
		}},
		{"an exact search does not match substrings", func(t *testing.T, e *env) {
			e.tree(t)
			gs, err := e.gc.GetGroups(ctx, e.token, "waldur", gocloak.GetGroupsParams{Search: gocloak.StringP("tea"), Exact: gocloak.BoolP(true)})
			must(t, err)
			if len(gs) != 0 {
				t.Fatalf("got %v", names(gs))
			}
		}},
		{"a plain search matches substrings, ignoring case", func(t *testing.T, e *env) {
			e.tree(t)
			gs, err := e.gc.GetGroups(ctx, e.token, "waldur", gocloak.GetGroupsParams{Search: gocloak.StringP("TEA")})
			must(t, err)
			if !slices.Equal(names(gs), []string{"team"}) {
				t.Fatalf("got %v", names(gs))
			}
		}},
		{"briefRepresentation=false brings attributes, the default leaves them out", func(t *testing.T, e *env) {
			_, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("g", map[string][]string{"managed_by": {"sitebus"}}))
			must(t, err)
			brief, err := e.gc.GetGroups(ctx, e.token, "waldur", gocloak.GetGroupsParams{Search: gocloak.StringP("g"), Exact: gocloak.BoolP(true)})
			must(t, err)
			full, err := e.gc.GetGroups(ctx, e.token, "waldur", gocloak.GetGroupsParams{Search: gocloak.StringP("g"), Exact: gocloak.BoolP(true), BriefRepresentation: gocloak.BoolP(false)})
			must(t, err)
			if brief[0].Attributes != nil || full[0].Attributes == nil || (*full[0].Attributes)["managed_by"][0] != "sitebus" {
				t.Fatalf("brief %+v full %+v", brief[0].Attributes, full[0].Attributes)
			}
		}},
		{"q finds groups by attribute at any depth", func(t *testing.T, e *env) {
			team, _, _, _ := e.tree(t)
			_, err := e.gc.CreateChildGroup(ctx, e.token, "waldur", team, group("m", map[string][]string{"managed_by": {"sitebus"}}))
			must(t, err)
			got := e.rawGroups(t, "/groups", map[string]string{"q": "managed_by:sitebus"})
			if len(got) != 1 || len(got[0].SubGroups) != 1 || got[0].SubGroups[0].Path != "/team/m" {
				t.Fatalf("got %+v", got)
			}
		}},
		{"q reads quoted values with spaces", func(t *testing.T, e *env) {
			team, _, _, _ := e.tree(t)
			_, err := e.gc.CreateChildGroup(ctx, e.token, "waldur", team, group("m", map[string][]string{"managed_by": {"site a"}}))
			must(t, err)
			eq(t, "quoted", len(e.rawGroups(t, "/groups", map[string]string{"q": `managed_by:"site a"`})), 1)
			eq(t, "first word only", len(e.rawGroups(t, "/groups", map[string]string{"q": "managed_by:site"})), 0)
		}},
		{"first and max page the top-level list by name", func(t *testing.T, e *env) {
			for _, n := range []string{"c", "a", "b", "d"} {
				_, err := e.gc.CreateGroup(ctx, e.token, "waldur", group(n, nil))
				must(t, err)
			}
			gs, err := e.gc.GetGroups(ctx, e.token, "waldur", gocloak.GetGroupsParams{First: gocloak.IntP(1), Max: gocloak.IntP(2)})
			must(t, err)
			if !slices.Equal(names(gs), []string{"b", "c"}) {
				t.Fatalf("got %v", names(gs))
			}
		}},
		{"children are paged, 10 at a time by default", func(t *testing.T, e *env) {
			parent, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("p", nil))
			must(t, err)
			for i := range 12 {
				_, err := e.gc.CreateChildGroup(ctx, e.token, "waldur", parent, group(fmt.Sprintf("c%02d", i), nil))
				must(t, err)
			}
			first := e.rawGroups(t, "/groups/"+parent+"/children", nil)
			rest := e.rawGroups(t, "/groups/"+parent+"/children", map[string]string{"first": "10", "max": "10"})
			if len(first) != 10 || len(rest) != 2 || rest[1].Name != "c11" || rest[1].ParentID != parent || rest[1].Path != "/p/c11" {
				t.Fatalf("first %d, rest %+v", len(first), rest)
			}
		}},
		{"a missing group is a 404 with Keycloak's message", func(t *testing.T, e *env) {
			_, err := e.gc.GetGroup(ctx, e.token, "waldur", "8a1b3c4d-0000-4000-8000-000000000000")
			apiErr(t, err, 404, "Could not find group by id")
			err = e.gc.DeleteGroup(ctx, e.token, "waldur", "8a1b3c4d-0000-4000-8000-000000000000")
			apiErr(t, err, 404, "Could not find group by id")
		}},
		{"delete removes the subtree", func(t *testing.T, e *env) {
			_, _, b, ba := e.tree(t)
			must(t, e.gc.DeleteGroup(ctx, e.token, "waldur", b))
			_, err := e.gc.GetGroup(ctx, e.token, "waldur", ba)
			apiErr(t, err, 404, "Could not find group by id")
			if got := e.sim.Groups("waldur"); len(got) != 2 {
				t.Fatalf("left: %+v", got)
			}
		}},
		{"a malformed paging parameter is rejected", func(t *testing.T, e *env) {
			resp, err := e.gc.GetRequestWithBearerAuth(ctx, e.token).Get(e.sim.URL() + "/admin/realms/waldur/groups?max=ten")
			must(t, err)
			eq(t, "status", resp.StatusCode(), 404)
		}},
		{"an unknown path is a 404", func(t *testing.T, e *env) {
			resp, err := e.gc.GetRequestWithBearerAuth(ctx, e.token).Get(e.sim.URL() + "/admin/realms/waldur/nothing")
			must(t, err)
			if resp.StatusCode() != 404 || !strings.Contains(resp.String(), "Unable to find matching target resource method") {
				t.Fatalf("%d %s", resp.StatusCode(), resp.String())
			}
		}},
	})
}
