package keycloaksim_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

const adminPassword = "kc-admin-pw"

// clientEnv is a simulator and a sitebus client logged in as its admin.
type clientEnv struct {
	sim  *keycloaksim.Server
	kc   *keycloak.Client
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newDefaultClientEnv is newClientEnv with the default simulator and client.
func newDefaultClientEnv(t *testing.T) *clientEnv { return newClientEnv(t, keycloaksim.Config{}, nil) }

func newClientEnv(t *testing.T, simCfg keycloaksim.Config, tweak func(*keycloak.Config)) *clientEnv {
	t.Helper()
	simCfg.AdminPassword = adminPassword
	simCfg.Realms = append(simCfg.Realms, keycloaksim.Realm{Name: "waldur", Users: []keycloaksim.User{
		{ID: aliceID, Username: "alice", Email: "alice@example.org"},
		{ID: bobID, Username: "bob", Email: "bob@example.org"},
	}})
	sim := keycloaksim.NewTestServer(t, simCfg)
	logs := &syncBuffer{}
	cfg := keycloak.Config{
		URL: sim.URL() + "/", Username: "admin", Password: adminPassword,
		Timeout: 2 * time.Second, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	kc, err := keycloak.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), adminPassword) || strings.Contains(logs.String(), "eyJ") {
			t.Errorf("logs show a password or token:\n%s", logs.String())
		}
	})
	return &clientEnv{sim: sim, kc: kc, logs: logs}
}

const (
	groupsPath = "/admin/realms/waldur/groups"
	tokenPath  = "/realms/master/protocol/openid-connect/token"
)

func TestClientGroups(t *testing.T) {
	ctx := context.Background()
	runScenarios(t, newDefaultClientEnv, []scenario[*clientEnv]{
		{"ensure creates a marked top-level group once", func(t *testing.T, e *clientEnv) {
			g, created, err := e.kc.EnsureGroup(ctx, "ns_x_admin", "", "Namespace x admin access")
			must(t, err)
			if !created || !g.Managed || g.Path != "/ns_x_admin" || g.Description != "Namespace x admin access" {
				t.Fatalf("first: %+v created=%v", g, created)
			}
			info, _ := e.sim.GroupByPath("waldur", "/ns_x_admin")
			if !slices.Equal(info.Attributes["managed_by"], []string{"sitebus"}) || info.Attributes["description"][0] != "Namespace x admin access" {
				t.Fatalf("attributes %v", info.Attributes)
			}
			e.sim.ResetCalls()
			again, created, err := e.kc.EnsureGroup(ctx, "ns_x_admin", "", "Namespace x admin access")
			must(t, err)
			if created || again.ID != g.ID {
				t.Fatalf("second: %+v created=%v", again, created)
			}
			eq(t, "POSTs on repeat", e.sim.CallCount("POST", groupsPath, 0), 0)
			eq(t, "GETs on repeat", e.sim.CallCount("GET", groupsPath, 0), 1)
		}},
		{"ensure leaves a pre-existing foreign group as it is", func(t *testing.T, e *clientEnv) {
			id, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "ns_y_admin", Attributes: map[string][]string{"owner": {"ops"}}})
			must(t, err)
			g, created, err := e.kc.EnsureGroup(ctx, "ns_y_admin", "", "whatever")
			must(t, err)
			if created || g.ID != id || g.Managed {
				t.Fatalf("%+v created=%v", g, created)
			}
			info, _ := e.sim.GroupByPath("waldur", "/ns_y_admin")
			if _, marked := info.Attributes["managed_by"]; marked {
				t.Fatal("foreign group was marked")
			}
		}},
		{"ensure finds top-level groups only among top-level ones", func(t *testing.T, e *clientEnv) {
			p, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "p", Children: []keycloaksim.Group{{Name: "x"}}})
			must(t, err)
			g, created, err := e.kc.EnsureGroup(ctx, "x", "", "")
			must(t, err)
			if !created || g.Path != "/x" || g.ParentID != "" {
				t.Fatalf("%+v created=%v", g, created)
			}
			child, created, err := e.kc.EnsureGroup(ctx, "x", p, "")
			must(t, err)
			if created || child.Path != "/p/x" || child.ParentID != p {
				t.Fatalf("child %+v created=%v", child, created)
			}
		}},
		{"ensure creates a child and finds it past the first page of children", func(t *testing.T, e *clientEnv) {
			kids := make([]keycloaksim.Group, 120)
			for i := range kids {
				kids[i] = keycloaksim.Group{Name: fmt.Sprintf("c%03d", i)}
			}
			p, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "project-p", Children: kids})
			must(t, err)
			last, created, err := e.kc.EnsureGroup(ctx, "c119", p, "")
			must(t, err)
			if created || last.Path != "/project-p/c119" {
				t.Fatalf("%+v created=%v", last, created)
			}
			g, created, err := e.kc.EnsureGroup(ctx, "p", p, "Members of project p")
			must(t, err)
			if !created || g.Path != "/project-p/p" || g.ParentID != p || !g.Managed {
				t.Fatalf("%+v created=%v", g, created)
			}
		}},
		{"a name taken between lookup and create is found again", func(t *testing.T, e *clientEnv) {
			var once sync.Once
			var rivalID string
			e2 := newClientOn(t, e, func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if r.Method == http.MethodPost && r.URL.Path == groupsPath {
						once.Do(func() {
							var err error
							rivalID, err = e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "race",
								Attributes: map[string][]string{"managed_by": {"sitebus"}}})
							must(t, err)
						})
					}
					return rt.RoundTrip(r)
				})
			})
			g, created, err := e2.EnsureGroup(ctx, "race", "", "")
			must(t, err)
			if created || g.ID != rivalID {
				t.Fatalf("%+v created=%v, rival %s", g, created, rivalID)
			}
			eq(t, "409s", e.sim.CallCount("POST", groupsPath, http.StatusConflict), 1)
		}},
		{"an empty name is invalid", func(t *testing.T, e *clientEnv) {
			_, _, err := e.kc.EnsureGroup(ctx, "", "", "")
			if !fault.IsTerminal(err) {
				t.Fatalf("got %v", err)
			}
		}},
		{"delete removes sitebus's and the Python agent's groups", func(t *testing.T, e *clientEnv) {
			g, _, err := e.kc.EnsureGroup(ctx, "ns_z_admin", "", "")
			must(t, err)
			legacy, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "ns_z_readonly",
				Attributes: map[string][]string{"managed_by": {"waldur-site-agent"}}})
			must(t, err)
			must(t, e.kc.DeleteGroup(ctx, g.ID))
			must(t, e.kc.DeleteGroup(ctx, legacy))
			eq(t, "groups left", len(e.sim.Groups("waldur")), 0)
		}},
		{"delete refuses a foreign group and keeps it", func(t *testing.T, e *clientEnv) {
			id, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "admins"})
			must(t, err)
			err = e.kc.DeleteGroup(ctx, id)
			if !errors.Is(err, keycloak.ErrNotManaged) || !fault.IsTerminal(err) {
				t.Fatalf("got %v", err)
			}
			eq(t, "groups left", len(e.sim.Groups("waldur")), 1)
			eq(t, "DELETEs", e.sim.CallCount("DELETE", "", 0), 0)
		}},
		{"delete refuses a managed group holding a foreign subgroup", func(t *testing.T, e *clientEnv) {
			id, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "ours",
				Attributes: map[string][]string{"managed_by": {"sitebus"}},
				Children:   []keycloaksim.Group{{Name: "theirs"}}})
			must(t, err)
			if err := e.kc.DeleteGroup(ctx, id); !errors.Is(err, keycloak.ErrNotManaged) {
				t.Fatalf("got %v", err)
			}
			eq(t, "groups left", len(e.sim.Groups("waldur")), 2)
		}},
		{"deleting a missing group is fine", func(t *testing.T, e *clientEnv) {
			must(t, e.kc.DeleteGroup(ctx, "0c0c0c0c-0000-4000-8000-000000000000"))
		}},
		{"managed groups are listed at any depth, foreign ones are not", func(t *testing.T, e *clientEnv) {
			_, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "root", Children: []keycloaksim.Group{
				{Name: "legacy", Attributes: map[string][]string{"managed_by": {"waldur-site-agent"}}},
				{Name: "foreign"},
			}})
			must(t, err)
			_, _, err = e.kc.EnsureGroup(ctx, "ns_a_admin", "", "")
			must(t, err)
			gs, err := e.kc.ManagedGroups(ctx)
			must(t, err)
			var paths []string
			for _, g := range gs {
				paths = append(paths, g.Path)
			}
			if !slices.Equal(paths, []string{"/ns_a_admin", "/root/legacy"}) {
				t.Fatalf("paths %v", paths)
			}
		}},
	})
}

// newClientOn makes a second client on e's simulator whose transport is
// wrapped (to act as a rival process mid-call, or lose answers).
func newClientOn(t *testing.T, e *clientEnv, wrap func(http.RoundTripper) http.RoundTripper) *keycloak.Client {
	t.Helper()
	kc, err := keycloak.New(keycloak.Config{
		URL: e.sim.URL(), Username: "admin", Password: adminPassword,
		RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, WrapTransport: wrap,
	})
	must(t, err)
	return kc
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClientMembersAndUsers(t *testing.T) {
	ctx := context.Background()
	runScenarios(t, newDefaultClientEnv, []scenario[*clientEnv]{
		{"add and remove are idempotent and show in Members", func(t *testing.T, e *clientEnv) {
			g, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
			must(t, err)
			for range 2 {
				must(t, e.kc.AddMember(ctx, g.ID, aliceID))
				must(t, e.kc.AddMember(ctx, g.ID, bobID))
			}
			ms, err := e.kc.Members(ctx, g.ID)
			must(t, err)
			if len(ms) != 2 || ms[0].Username != "alice" || ms[0].Email != "alice@example.org" || ms[1].ID != bobID {
				t.Fatalf("members %+v", ms)
			}
			for range 2 {
				must(t, e.kc.RemoveMember(ctx, g.ID, aliceID))
			}
			eq(t, "left", strings.Join(e.sim.MemberNames("waldur", g.ID), ","), "bob")
		}},
		{"members are read past the first page", func(t *testing.T, e *clientEnv) {
			g, _, err := e.kc.EnsureGroup(ctx, "big", "", "")
			must(t, err)
			for i := range 230 {
				u, err := e.sim.AddUser("waldur", keycloaksim.User{Username: fmt.Sprintf("u%03d", i)})
				must(t, err)
				must(t, e.sim.AddMember("waldur", g.ID, u.ID))
			}
			ms, err := e.kc.Members(ctx, g.ID)
			must(t, err)
			if len(ms) != 230 || ms[229].Username != "u229" {
				t.Fatalf("got %d members", len(ms))
			}
		}},
		{"adding a user not in Keycloak is not-found, neither retryable nor terminal", func(t *testing.T, e *clientEnv) {
			g, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
			must(t, err)
			err = e.kc.AddMember(ctx, g.ID, "99999999-9999-4999-8999-999999999999")
			if !errors.Is(err, keycloak.ErrNotFound) || errors.Is(err, fault.Unavailable) || fault.IsTerminal(err) {
				t.Fatalf("got %v", err)
			}
		}},
		{"removing from a missing user or group is done already", func(t *testing.T, e *clientEnv) {
			g, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
			must(t, err)
			must(t, e.kc.RemoveMember(ctx, g.ID, "99999999-9999-4999-8999-999999999999"))
			must(t, e.kc.RemoveMember(ctx, "99999999-9999-4999-8999-999999999999", aliceID))
		}},
		{"members of a missing group is not-found", func(t *testing.T, e *clientEnv) {
			_, err := e.kc.Members(ctx, "99999999-9999-4999-8999-999999999999")
			if !errors.Is(err, keycloak.ErrNotFound) {
				t.Fatalf("got %v", err)
			}
		}},
		{"a user is found by id and by username, whatever the case", func(t *testing.T, e *clientEnv) {
			u, err := e.kc.FindUser(ctx, aliceID, true)
			must(t, err)
			if u == nil || u.Username != "alice" || !u.Enabled {
				t.Fatalf("by id: %+v", u)
			}
			u, err = e.kc.FindUser(ctx, "Bob", false)
			must(t, err)
			if u == nil || u.ID != bobID {
				t.Fatalf("by username: %+v", u)
			}
		}},
		{"a missing user is nil, nil; a prefix is not a match", func(t *testing.T, e *clientEnv) {
			for _, byID := range []bool{true, false} {
				u, err := e.kc.FindUser(ctx, "ali", byID)
				if u != nil || err != nil {
					t.Fatalf("byID=%v: %+v %v", byID, u, err)
				}
			}
		}},
		{"a lookup by id falls back to the username, as the Python agent does", func(t *testing.T, e *clientEnv) {
			u, err := e.kc.FindUser(ctx, "bob", true)
			must(t, err)
			if u == nil || u.ID != bobID {
				t.Fatalf("got %+v", u)
			}
		}},
		{"a user who appears later is found then", func(t *testing.T, e *clientEnv) {
			u, err := e.kc.FindUser(ctx, "carol", false)
			if u != nil || err != nil {
				t.Fatalf("before: %+v %v", u, err)
			}
			c, err := e.sim.AddUser("waldur", keycloaksim.User{Username: "carol"})
			must(t, err)
			u, err = e.kc.FindUser(ctx, c.ID, true)
			must(t, err)
			if u == nil || u.Username != "carol" {
				t.Fatalf("after: %+v", u)
			}
		}},
		{"a user's groups carry parents and the managed mark", func(t *testing.T, e *clientEnv) {
			p, err := e.sim.AddGroup("waldur", "", keycloaksim.Group{Name: "p", Children: []keycloaksim.Group{{Name: "c", Members: []string{"alice"}}}})
			must(t, err)
			g, _, err := e.kc.EnsureGroup(ctx, "mine", "", "")
			must(t, err)
			must(t, e.kc.AddMember(ctx, g.ID, aliceID))
			gs, err := e.kc.UserGroups(ctx, aliceID)
			must(t, err)
			if len(gs) != 2 || gs[0].Path != "/mine" || !gs[0].Managed || gs[1].Path != "/p/c" || gs[1].ParentID != p || gs[1].Managed {
				t.Fatalf("got %+v", gs)
			}
		}},
	})
}

func TestClientResilience(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		simCfg keycloaksim.Config
		tweak  func(*keycloak.Config)
		run    func(t *testing.T, e *clientEnv)
	}{
		// Time passing is the behaviour under test (the client reads the
		// real clock): a 4s token is renewed after 3s. The two first calls
		// need to fit in those 3s, not in a few hundred ms.
		{name: "the token is reused, then renewed before it expires", simCfg: keycloaksim.Config{TokenLifespan: 4 * time.Second},
			run: func(t *testing.T, e *clientEnv) {
				must(t, e.kc.Ping(ctx))
				must(t, e.kc.Ping(ctx))
				eq(t, "logins while fresh", e.sim.CallCount("POST", tokenPath, 0), 1)
				time.Sleep(3200 * time.Millisecond) // past 3/4 of its life, before its end
				must(t, e.kc.Ping(ctx))
				eq(t, "logins", e.sim.CallCount("POST", tokenPath, 0), 2)
				eq(t, "401s", e.sim.CallCount("", "/admin/", http.StatusUnauthorized), 0)
			}},
		{name: "a token refused with 401 is renewed once and the call goes through",
			run: func(t *testing.T, e *clientEnv) {
				must(t, e.kc.Ping(ctx))
				e.sim.ExpireTokens()
				_, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
				must(t, err)
				eq(t, "401s", e.sim.CallCount("", "/admin/", http.StatusUnauthorized), 1)
				eq(t, "logins", e.sim.CallCount("POST", tokenPath, 0), 2)
			}},
		{name: "5xx answers are retried until they pass",
			run: func(t *testing.T, e *clientEnv) {
				e.sim.AddFault(keycloaksim.Fault{Method: "POST", PathPrefix: groupsPath, Status: 503, Count: 2})
				e.sim.AddFault(keycloaksim.Fault{Method: "GET", PathPrefix: groupsPath, Status: 429, Count: 1})
				_, created, err := e.kc.EnsureGroup(ctx, "g", "", "")
				must(t, err)
				if !created {
					t.Fatal("not created")
				}
				eq(t, "groups", len(e.sim.Groups("waldur")), 1)
			}},
		{name: "a hanging call times out and is retried", tweak: func(c *keycloak.Config) { c.Timeout = 200 * time.Millisecond },
			run: func(t *testing.T, e *clientEnv) {
				// The hang (a minute) is far from both the 200ms timeout and the
				// bound, so neither a slow machine nor a waited-out hang is
				// mistaken for the other.
				e.sim.AddFault(keycloaksim.Fault{Method: "GET", PathPrefix: groupsPath, Delay: time.Minute, Count: 1})
				start := time.Now()
				_, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
				must(t, err)
				if d := time.Since(start); d > 30*time.Second {
					t.Fatalf("took %v", d)
				}
			}},
		{name: "a create whose answer was lost is retried into a 409 and found, not made twice",
			run: func(t *testing.T, e *clientEnv) {
				var once sync.Once
				lossy := newClientOn(t, e, func(rt http.RoundTripper) http.RoundTripper {
					return roundTripFunc(func(r *http.Request) (*http.Response, error) {
						resp, err := rt.RoundTrip(r)
						lost := false
						if err == nil && r.Method == http.MethodPost && r.URL.Path == groupsPath {
							once.Do(func() { lost = true })
						}
						if lost {
							resp.Body.Close()
							return nil, errors.New("connection reset by peer")
						}
						return resp, err
					})
				})
				g, created, err := lossy.EnsureGroup(ctx, "once", "", "")
				must(t, err)
				gs := e.sim.Groups("waldur")
				if len(gs) != 1 || gs[0].ID != g.ID || created {
					t.Fatalf("%+v created=%v, groups %+v", g, created, gs)
				}
				eq(t, "409s", e.sim.CallCount("POST", groupsPath, http.StatusConflict), 1)
			}},
		{name: "Keycloak down longer than the retries is a retryable error, never a silent skip",
			run: func(t *testing.T, e *clientEnv) {
				e.sim.Down(true)
				_, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
				if err == nil || !errors.Is(err, fault.Unavailable) || fault.IsTerminal(err) {
					t.Fatalf("got %v", err)
				}
				eq(t, "attempts", e.sim.CallCount("POST", tokenPath, http.StatusServiceUnavailable), keycloak.DefaultMaxAttempts)
				e.sim.Down(false)
				_, created, err := e.kc.EnsureGroup(ctx, "g", "", "")
				must(t, err)
				if !created {
					t.Fatal("not created after recovery")
				}
			}},
		{name: "dropped connections are retried", run: func(t *testing.T, e *clientEnv) {
			must(t, e.kc.Ping(ctx))
			e.sim.AddFault(keycloaksim.Fault{PathPrefix: groupsPath, Drop: true, Count: 3})
			_, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
			must(t, err)
		}},
		{name: "retries stop when the context ends",
			tweak: func(c *keycloak.Config) { c.MaxAttempts, c.RetryBase, c.RetryMax = 100, time.Second, time.Second },
			run: func(t *testing.T, e *clientEnv) {
				e.sim.Down(true)
				short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := e.kc.Ping(short)
				// 100 attempts a second apart would take minutes; 30s is loose for a loaded machine.
				if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 30*time.Second {
					t.Fatalf("got %v after %v", err, time.Since(start))
				}
			}},
		{name: "wrong credentials are terminal and tried once",
			tweak: func(c *keycloak.Config) { c.Password = "wrong" },
			run: func(t *testing.T, e *clientEnv) {
				err := e.kc.Ping(ctx)
				if !errors.Is(err, keycloak.ErrCredentials) || !fault.IsTerminal(err) || strings.Contains(err.Error(), "wrong") {
					t.Fatalf("got %v", err)
				}
				eq(t, "logins", e.sim.CallCount("POST", tokenPath, 0), 1)
			}},
		{name: "a 403 is terminal and not retried",
			run: func(t *testing.T, e *clientEnv) {
				e.sim.AddFault(keycloaksim.Fault{PathPrefix: groupsPath, Status: 403, Body: `{"error":"HTTP 403 Forbidden"}`})
				_, _, err := e.kc.EnsureGroup(ctx, "g", "", "")
				if !fault.IsTerminal(err) {
					t.Fatalf("got %v", err)
				}
				eq(t, "attempts", e.sim.CallCount("", groupsPath, 403), 1)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newClientEnv(t, tc.simCfg, tc.tweak)) })
	}
}
