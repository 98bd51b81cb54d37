package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// fakeRealm is one Keycloak realm in memory, answering as *keycloak.Client
// does: FindGroup matches names exactly on one level, EnsureGroup marks
// what it creates managed_by sitebus, DeleteGroup refuses a group that is
// not marked (or has an unmarked subgroup) and deletes the subtree, and
// AddMember of a user or group that is gone is ErrNotFound.
type fakeRealm struct {
	mu      sync.Mutex
	name    string
	seq     int
	groups  map[string]*keycloak.Group // by id
	users   map[string]keycloak.User   // by id
	members map[string]map[string]bool // group id → user ids
	// fail makes every call of a method fail with the error, until
	// cleared; failOnce fails only the next call.
	fail, failOnce map[string]error
	calls          []string
}

func newRealm(name string) *fakeRealm {
	return &fakeRealm{name: name, groups: map[string]*keycloak.Group{}, users: map[string]keycloak.User{},
		members: map[string]map[string]bool{}, fail: map[string]error{}, failOnce: map[string]error{}}
}

// kcError is what *keycloak.Client returns for an HTTP status: an error of
// one of the package's kinds.
func kcError(op string, status int, kind error) error {
	return fmt.Errorf("keycloak: %s: HTTP %d: %w", op, status, kind)
}

func (r *fakeRealm) call(method string, args ...string) error {
	r.calls = append(r.calls, method+" "+strings.Join(args, " "))
	if err := r.failOnce[method]; err != nil {
		delete(r.failOnce, method)
		return err
	}
	return r.fail[method]
}

func (r *fakeRealm) setFail(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.fail, method)
		return
	}
	r.fail[method] = err
}

// addGroup puts a group there as someone made it: managedBy is its
// managed_by mark ("" for a foreign group).
func (r *fakeRealm) addGroup(name, parentID, managedBy string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	attrs := map[string][]string{}
	if managedBy != "" {
		attrs["managed_by"] = []string{managedBy}
	}
	return r.create(name, parentID, attrs).ID
}

func (r *fakeRealm) create(name, parentID string, attrs map[string][]string) *keycloak.Group {
	r.seq++
	id := fmt.Sprintf("g%d", r.seq)
	path := "/" + name
	if p := r.groups[parentID]; p != nil {
		path = p.Path + path
	}
	g := &keycloak.Group{ID: id, Name: name, Path: path, ParentID: parentID, Attributes: attrs,
		Managed: slices.Contains(attrs["managed_by"], keycloak.ManagedBy) || slices.Contains(attrs["managed_by"], keycloak.LegacyManagedBy)}
	if d := attrs["description"]; len(d) > 0 {
		g.Description = d[0]
	}
	r.groups[id] = g
	return g
}

func (r *fakeRealm) addUser(id, username string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users[id] = keycloak.User{ID: id, Username: username}
}

func (r *fakeRealm) setMembers(groupID string, userIDs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.members[groupID] = map[string]bool{}
	for _, u := range userIDs {
		r.members[groupID][u] = true
	}
}

// memberIDs are a group's members, sorted.
func (r *fakeRealm) memberIDs(groupID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for u := range r.members[groupID] {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// byPath finds a group by its path, nil when there is none.
func (r *fakeRealm) byPath(path string) *keycloak.Group {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.groups {
		if g.Path == path {
			c := *g
			return &c
		}
	}
	return nil
}

// paths lists every group's path, sorted.
func (r *fakeRealm) paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, g := range r.groups {
		out = append(out, g.Path)
	}
	slices.Sort(out)
	return out
}

func (r *fakeRealm) children(id string) []*keycloak.Group {
	var out []*keycloak.Group
	for _, g := range r.groups {
		if g.ParentID == id {
			out = append(out, g)
		}
	}
	return out
}

func (r *fakeRealm) Realm() string { return r.name }

func (r *fakeRealm) FindGroup(_ context.Context, name, parentID string) (*keycloak.Group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("FindGroup", name, parentID); err != nil {
		return nil, err
	}
	for _, g := range r.children(parentID) {
		if g.Name == name {
			c := *g
			return &c, nil
		}
	}
	return nil, nil
}

func (r *fakeRealm) EnsureGroup(ctx context.Context, name, parentID, description string) (keycloak.Group, bool, error) {
	g, err := r.FindGroup(ctx, name, parentID)
	if err != nil || g != nil {
		return deref(g), false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("EnsureGroup", name, parentID); err != nil {
		return keycloak.Group{}, false, err
	}
	if parentID != "" && r.groups[parentID] == nil {
		return keycloak.Group{}, false, kcError("create group "+name, 404, keycloak.ErrNotFound)
	}
	desc := []string{}
	if description != "" {
		desc = []string{description}
	}
	return *r.create(name, parentID, map[string][]string{"description": desc, "managed_by": {keycloak.ManagedBy}}), true, nil
}

func deref(g *keycloak.Group) keycloak.Group {
	if g == nil {
		return keycloak.Group{}
	}
	return *g
}

func (r *fakeRealm) GetGroup(_ context.Context, id string) (*keycloak.Group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("GetGroup", id); err != nil {
		return nil, err
	}
	if g := r.groups[id]; g != nil {
		c := *g
		return &c, nil
	}
	return nil, nil
}

func (r *fakeRealm) DeleteGroup(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("DeleteGroup", id); err != nil {
		return err
	}
	g := r.groups[id]
	if g == nil {
		return nil
	}
	var check func(g *keycloak.Group) error
	check = func(g *keycloak.Group) error {
		if !g.Managed {
			return kcError("delete group "+g.Name, 0, keycloak.ErrNotManaged)
		}
		for _, k := range r.children(g.ID) {
			if err := check(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(g); err != nil {
		return err
	}
	var drop func(id string)
	drop = func(id string) {
		for _, k := range r.children(id) {
			drop(k.ID)
		}
		delete(r.groups, id)
		delete(r.members, id)
	}
	drop(id)
	return nil
}

func (r *fakeRealm) HasSubGroups(_ context.Context, id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("HasSubGroups", id); err != nil {
		return false, err
	}
	return len(r.children(id)) > 0, nil
}

func (r *fakeRealm) ManagedGroups(context.Context) ([]keycloak.Group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("ManagedGroups"); err != nil {
		return nil, err
	}
	var out []keycloak.Group
	for _, g := range r.groups {
		if g.Managed {
			out = append(out, *g)
		}
	}
	slices.SortFunc(out, func(a, b keycloak.Group) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (r *fakeRealm) FindUser(_ context.Context, ref string, byID bool) (*keycloak.User, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("FindUser", ref); err != nil {
		return nil, err
	}
	for _, u := range r.users {
		if (byID && u.ID == ref) || (!byID && u.Username == ref) {
			return &u, nil
		}
	}
	return nil, nil
}

func (r *fakeRealm) AddMember(_ context.Context, groupID, userID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("AddMember", groupID, userID); err != nil {
		return err
	}
	if r.groups[groupID] == nil {
		return kcError("add member", 404, keycloak.ErrNotFound)
	}
	if _, ok := r.users[userID]; !ok {
		return kcError("add member", 404, keycloak.ErrNotFound)
	}
	if r.members[groupID] == nil {
		r.members[groupID] = map[string]bool{}
	}
	r.members[groupID][userID] = true
	return nil
}

func (r *fakeRealm) RemoveMember(_ context.Context, groupID, userID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("RemoveMember", groupID, userID); err != nil {
		return err
	}
	delete(r.members[groupID], userID)
	return nil
}

func (r *fakeRealm) Members(_ context.Context, groupID string) ([]keycloak.User, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.call("Members", groupID); err != nil {
		return nil, err
	}
	var out []keycloak.User
	for id := range r.members[groupID] {
		out = append(out, r.users[id])
	}
	slices.SortFunc(out, func(a, b keycloak.User) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// fakeWaldur lists an offering's resources for the leftover cleanup.
type fakeWaldur struct {
	resources []waldur.Resource
	err       error
}

func (w *fakeWaldur) ListProviderResources(context.Context, waldur.ResourceFilter) ([]waldur.Resource, error) {
	return w.resources, w.err
}

// Offerings of the tests: two in realm "site", one in realm "other".
const (
	offA     = "0a0a0a0a-0a0a-4a0a-8a0a-0a0a0a0a0a0a"
	offB     = "0b0b0b0b-0b0b-4b0b-8b0b-0b0b0b0b0b0b"
	offOther = "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c"
)

// env is a keycloak-sync service on an embedded NATS with in-memory
// realms; its handlers are called directly or over the bus.
type env struct {
	s      *Service
	b      *bus.Bus
	site   *fakeRealm
	other  *fakeRealm
	waldur map[string]*fakeWaldur // by offering UUID
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{site: newRealm("site"), other: newRealm("other"),
		waldur: map[string]*fakeWaldur{offA: {}, offB: {}, offOther: {}}}
	e.b = bustest.New(t, bus.Config{})
	offering := func(uuid, realm string) Offering {
		return Offering{Config: &config.Offering{Name: "offering-" + uuid[:2], WaldurOfferingUUID: uuid}, Waldur: e.waldur[uuid],
			Keycloak: keycloak.Config{URL: "https://keycloak.example.com/", Realm: realm}}
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.Default()
	}
	s, err := newService(e.b, Config{
		Offerings:  []Offering{offering(offA, "site"), offering(offB, "site"), offering(offOther, "other")},
		MaxDeliver: 3, Backoff: bus.ExponentialBackoff(10*time.Millisecond, 50*time.Millisecond),
		Logger: log, Registerer: prometheus.NewRegistry(),
	}, func(kc keycloak.Config) (keycloakAPI, error) {
		switch kc.Realm {
		case "site":
			return e.site, nil
		case "other":
			return e.other, nil
		}
		return nil, fmt.Errorf("no realm %s", kc.Realm)
	})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := s.ensurePendingBucket(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.pending = kv
	e.s = s
	return e
}

// run starts the service's consumers and periodic jobs until the test
// ends.
func (e *env) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		// A test done before every consumer is bound stops the start.
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("keycloak-sync: %v", err)
		}
	})
}

// pendingRefs lists the pending memberships of a group as user refs.
func (e *env) pendingRefs(t *testing.T, offering, groupID string) []string {
	t.Helper()
	entries, err := e.s.pendingOf(t.Context(), offering, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range entries {
		out = append(out, p.Ref)
	}
	slices.Sort(out)
	return out
}
