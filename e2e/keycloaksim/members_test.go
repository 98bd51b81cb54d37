package keycloaksim_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/Nerzal/gocloak/v13"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
)

func TestMembersAndUsers(t *testing.T) {
	ctx := context.Background()
	runScenarios(t, newEnv, []scenario[*env]{
		{"add, list and remove members; both are idempotent", func(t *testing.T, e *env) {
			g, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("g", nil))
			must(t, err)
			for range 2 {
				must(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", bobID, g))
				must(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", aliceID, g))
			}
			us, err := e.gc.GetGroupMembers(ctx, e.token, "waldur", g, gocloak.GetGroupsParams{})
			must(t, err)
			if len(us) != 2 || gocloak.PString(us[0].Username) != "alice" || gocloak.PString(us[1].Username) != "bob" {
				t.Fatalf("members %+v", us)
			}
			for range 2 {
				must(t, e.gc.DeleteUserFromGroup(ctx, e.token, "waldur", aliceID, g))
			}
			if got := e.sim.MemberNames("waldur", g); !slices.Equal(got, []string{"bob"}) {
				t.Fatalf("after remove: %v", got)
			}
		}},
		{"members are paged with first and max, 100 by default", func(t *testing.T, e *env) {
			g, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("big", nil))
			must(t, err)
			for i := range 105 {
				u, err := e.sim.AddUser("waldur", keycloaksim.User{Username: fmt.Sprintf("u%03d", i)})
				must(t, err)
				must(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", u.ID, g))
			}
			def, err := e.gc.GetGroupMembers(ctx, e.token, "waldur", g, gocloak.GetGroupsParams{})
			must(t, err)
			tail, err := e.gc.GetGroupMembers(ctx, e.token, "waldur", g, gocloak.GetGroupsParams{First: gocloak.IntP(100), Max: gocloak.IntP(100)})
			must(t, err)
			if len(def) != 100 || len(tail) != 5 || gocloak.PString(tail[4].Username) != "u104" {
				t.Fatalf("default page %d, tail %d", len(def), len(tail))
			}
		}},
		{"membership of a missing user or group is a 404", func(t *testing.T, e *env) {
			g, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("g", nil))
			must(t, err)
			apiErr(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", "no-user", g), 404, "User not found")
			apiErr(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", aliceID, "no-group"), 404, "Group not found")
			_, err = e.gc.GetGroupMembers(ctx, e.token, "waldur", "no-group", gocloak.GetGroupsParams{})
			apiErr(t, err, 404, "Could not find group by id")
		}},
		{"a user's groups are listed by path", func(t *testing.T, e *env) {
			team, a, _, ba := e.tree(t)
			for _, g := range []string{ba, a, team} {
				must(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", aliceID, g))
			}
			gs, err := e.gc.GetUserGroups(ctx, e.token, "waldur", aliceID, gocloak.GetGroupsParams{})
			must(t, err)
			var paths []string
			for _, g := range gs {
				paths = append(paths, gocloak.PString(g.Path))
			}
			if !slices.Equal(paths, []string{"/team", "/team/a", "/team/b/a"}) {
				t.Fatalf("paths %v", paths)
			}
		}},
		{"deleting a group ends its memberships", func(t *testing.T, e *env) {
			g, err := e.gc.CreateGroup(ctx, e.token, "waldur", group("g", nil))
			must(t, err)
			must(t, e.gc.AddUserToGroup(ctx, e.token, "waldur", aliceID, g))
			must(t, e.gc.DeleteGroup(ctx, e.token, "waldur", g))
			gs, err := e.gc.GetUserGroups(ctx, e.token, "waldur", aliceID, gocloak.GetGroupsParams{})
			must(t, err)
			eq(t, "groups", len(gs), 0)
		}},
		{"a user is found by id, a missing id is a 404", func(t *testing.T, e *env) {
			u, err := e.gc.GetUserByID(ctx, e.token, "waldur", aliceID)
			must(t, err)
			eq(t, "username", gocloak.PString(u.Username), "alice")
			eq(t, "email", gocloak.PString(u.Email), "alice@example.org")
			eq(t, "enabled", gocloak.PBool(u.Enabled), true)
			_, err = e.gc.GetUserByID(ctx, e.token, "waldur", "33333333-3333-4333-8333-333333333333")
			apiErr(t, err, 404, "User not found")
		}},
		{"an exact username lookup ignores case and not substrings", func(t *testing.T, e *env) {
			us, err := e.gc.GetUsers(ctx, e.token, "waldur", gocloak.GetUsersParams{Username: gocloak.StringP("BOB"), Exact: gocloak.BoolP(true)})
			must(t, err)
			if len(us) != 1 || gocloak.PString(us[0].ID) != bobID {
				t.Fatalf("got %+v", us)
			}
			us, err = e.gc.GetUsers(ctx, e.token, "waldur", gocloak.GetUsersParams{Username: gocloak.StringP("bo"), Exact: gocloak.BoolP(true)})
			must(t, err)
			eq(t, "substring matches", len(us), 0)
			us, err = e.gc.GetUsers(ctx, e.token, "waldur", gocloak.GetUsersParams{Username: gocloak.StringP("bo")})
			must(t, err)
			eq(t, "non-exact matches", len(us), 1)
		}},
		{"a user filter the simulator does not model is refused, not ignored", func(t *testing.T, e *env) {
			_, err := e.gc.GetUsers(ctx, e.token, "waldur", gocloak.GetUsersParams{Email: gocloak.StringP("bob@example.org")})
			apiErr(t, err, 501, `keycloaksim does not model the users filter "email"`)
		}},
		{"a user added later can be found and joined", func(t *testing.T, e *env) {
			us, err := e.gc.GetUsers(ctx, e.token, "waldur", gocloak.GetUsersParams{Username: gocloak.StringP("carol"), Exact: gocloak.BoolP(true)})
			must(t, err)
			eq(t, "before", len(us), 0)
			c, err := e.sim.AddUser("waldur", keycloaksim.User{Username: "carol", Email: "carol@example.org"})
			must(t, err)
			us, err = e.gc.GetUsers(ctx, e.token, "waldur", gocloak.GetUsersParams{Username: gocloak.StringP("carol"), Exact: gocloak.BoolP(true)})
			must(t, err)
			if len(us) != 1 || gocloak.PString(us[0].ID) != c.ID {
				t.Fatalf("after: %+v", us)
			}
		}},
		{"a duplicate username cannot be added", func(t *testing.T, e *env) {
			if _, err := e.sim.AddUser("waldur", keycloaksim.User{Username: "ALICE"}); err == nil {
				t.Fatal("duplicate accepted")
			}
		}},
	})
}
