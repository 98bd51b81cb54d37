package keycloaksim

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

const (
	// adminRealm is where the admin user logs in (keycloak_user_realm).
	// Only the admin user's token from it may use the admin API.
	adminRealm = "master"
	// clientIDAdminCLI is the public client the token endpoint accepts.
	clientIDAdminCLI = "admin-cli"
)

// Config seeds and tunes a simulator. The zero value is usable: realms
// "master" (with admin/admin) and "waldur", no users, 60 s tokens.
type Config struct {
	// AdminUsername and AdminPassword default to "admin" and "admin".
	AdminUsername, AdminPassword string
	// Realms are seeded in order; Realms without a "waldur" entry get an
	// empty "waldur" realm added, so the default configuration just works.
	Realms []Realm
	// TokenLifespan is the access token lifetime; default 60 s (Keycloak's
	// default for master is 60 s, which is what makes re-login matter).
	TokenLifespan time.Duration
	// Now defaults to time.Now; tests pin or advance it to expire tokens
	// without sleeping.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Realm seeds one realm.
type Realm struct {
	Name   string
	Users  []User
	Groups []Group
}

// User is a Keycloak user as the simulator keeps it. An empty ID gets a
// random UUID. Disabled users are still listed and can join groups, as in
// Keycloak; only their login is refused.
type User struct {
	ID        string
	Username  string
	Email     string
	FirstName string
	LastName  string
	Disabled  bool
	// Password lets the user log in with the password grant; empty means
	// no password credential.
	Password string
}

// Group seeds a group and its subtree. An empty ID gets a random UUID.
// Members are user ids or usernames of the same realm.
type Group struct {
	ID         string
	Name       string
	Attributes map[string][]string
	Members    []string
	Children   []Group
}

// Server is the simulator. All state sits behind one mutex.
type Server struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	realms map[string]*realm
	tokens map[string]session

	simkit.Base
}

// New builds a simulator; it does not listen (see Start, NewTestServer,
// Handler).
func New(cfg Config) (*Server, error) {
	cfg.AdminUsername = cmp.Or(cfg.AdminUsername, "admin")
	cfg.AdminPassword = cmp.Or(cfg.AdminPassword, "admin")
	if cfg.TokenLifespan <= 0 {
		cfg.TokenLifespan = 60 * time.Second
	}
	log := simkit.Defaults("keycloaksim", &cfg.Now, &cfg.Logger)
	s := &Server{
		cfg:    cfg,
		log:    log,
		realms: map[string]*realm{},
		tokens: map[string]session{},
	}
	s.Faults = newFaults()
	if err := s.seed(); err != nil {
		return nil, err
	}
	s.Init(s.routes(), s.log)
	return s, nil
}

func (s *Server) seed() error {
	seeds := append([]Realm{{Name: adminRealm}}, s.cfg.Realms...)
	if !slices.ContainsFunc(seeds, func(r Realm) bool { return r.Name == "waldur" }) {
		seeds = append(seeds, Realm{Name: "waldur"})
	}
	for _, rs := range seeds {
		if rs.Name == "" {
			return errors.New("keycloaksim: a realm needs a name")
		}
		r := s.realms[rs.Name]
		if r == nil {
			r = &realm{name: rs.Name, id: simkit.NewUUID(), users: map[string]*user{}, groups: map[string]*group{}}
			s.realms[rs.Name] = r
		}
		for _, u := range rs.Users {
			if _, err := r.addUser(u, s.nowMillis()); err != nil {
				return fmt.Errorf("keycloaksim: realm %s: %w", rs.Name, err)
			}
		}
		for _, g := range rs.Groups {
			if err := r.seedGroup(g, ""); err != nil {
				return fmt.Errorf("keycloaksim: realm %s: %w", rs.Name, err)
			}
		}
	}
	admin := s.realms[adminRealm]
	if u := admin.userByName(s.cfg.AdminUsername); u != nil {
		u.Password = s.cfg.AdminPassword
	} else if _, err := admin.addUser(User{Username: s.cfg.AdminUsername, Password: s.cfg.AdminPassword}, s.nowMillis()); err != nil {
		return err
	}
	return nil
}

func (s *Server) now() time.Time { return s.cfg.Now() }

func (s *Server) nowMillis() int64 { return s.now().UnixMilli() }

// NewTestServer starts a simulator on an httptest server closed by
// t.Cleanup.
func NewTestServer(t testing.TB, cfg Config) *Server { return simkit.NewTestServer(t, New, cfg) }

// Call is one logged request. Bodies are not kept: token requests carry
// passwords.
type Call = simkit.Call

// Fault makes matching requests misbehave (see simkit.Fault); a Status
// without Body answers Keycloak's {"error":"unknown_error"}.
type Fault = simkit.Fault

// newFaults is the call log and fault registry with Keycloak's bodies; it
// keeps no request bodies.
func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody:  "Service Unavailable", // Keycloak behind a proxy while it restarts
		ErrorBody: func(int) string { return `{"error":"unknown_error"}` },
	})
}
