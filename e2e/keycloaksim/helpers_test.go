package keycloaksim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/testenv"
)

type env struct {
	sim   *keycloaksim.Server
	gc    *gocloak.GoCloak
	clock *testenv.Clock
	token string
}

// Seeded users of the "waldur" realm.
const (
	aliceID = "11111111-1111-4111-8111-111111111111"
	bobID   = "22222222-2222-4222-8222-222222222222"
)

func seedConfig(c *testenv.Clock) keycloaksim.Config {
	return keycloaksim.Config{
		Now: c.Now,
		Realms: []keycloaksim.Realm{{
			Name: "waldur",
			Users: []keycloaksim.User{
				{ID: aliceID, Username: "alice", Email: "alice@example.org", Password: "alice-pw"},
				{ID: bobID, Username: "Bob", Email: "bob@example.org"},
			},
		}},
	}
}

// newEnv starts a seeded simulator and logs in as admin with gocloak.
func newEnv(t *testing.T) *env {
	t.Helper()
	c := testenv.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sim := keycloaksim.NewTestServer(t, seedConfig(c))
	gc := gocloak.NewClient(sim.URL())
	jwt, err := gc.LoginAdmin(context.Background(), "admin", "admin", "master")
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return &env{sim: sim, gc: gc, clock: c, token: jwt.AccessToken}
}

// apiErr asserts err is a gocloak APIError with code and a message
// containing msg.
func apiErr(t *testing.T, err error, code int, msg string) {
	t.Helper()
	var ae *gocloak.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want APIError %d, got %v", code, err)
	}
	if ae.Code != code || !strings.Contains(ae.Message, msg) {
		t.Fatalf("want %d %q, got %d %q", code, msg, ae.Code, ae.Message)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func group(name string, attrs map[string][]string) gocloak.Group {
	g := gocloak.Group{Name: gocloak.StringP(name)}
	if attrs != nil {
		g.Attributes = &attrs
	}
	return g
}

func names(gs []*gocloak.Group) []string {
	var out []string
	for _, g := range gs {
		out = append(out, gocloak.PString(g.Name))
	}
	return out
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// scenario is one named behaviour, run on a fresh environment.
type scenario[E any] struct {
	name string
	run  func(t *testing.T, e E)
}

// runScenarios runs each scenario as a subtest on its own environment.
func runScenarios[E any](t *testing.T, newEnv func(*testing.T) E, tests []scenario[E]) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newEnv(t)) })
	}
}
