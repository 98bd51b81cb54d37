package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// fakeWaldur holds resources and their teams as Waldur's REST API gives
// them; an unknown resource is a 404 like Waldur's.
type fakeWaldur struct {
	mu        sync.Mutex
	resources map[string]*waldur.Resource // by UUID
	teams     map[string][]waldur.ProjectUser
	// fail makes a method fail (retryably, as a 503) while set.
	fail    map[string]bool
	filters []waldur.ResourceFilter
	// teamReads counts GetResourceTeam calls.
	teamReads int
}

func newWaldur() *fakeWaldur {
	return &fakeWaldur{resources: map[string]*waldur.Resource{}, teams: map[string][]waldur.ProjectUser{}, fail: map[string]bool{}}
}

func (w *fakeWaldur) add(r waldur.Resource, team ...waldur.ProjectUser) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resources[r.UUID] = &r
	w.teams[r.UUID] = team
}

func unavailable(path string) error {
	return &waldur.APIError{Method: http.MethodGet, Path: path, StatusCode: http.StatusServiceUnavailable}
}

func (w *fakeWaldur) GetResource(_ context.Context, uuid string, _ ...string) (*waldur.Resource, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	path := "/api/marketplace-provider-resources/" + uuid + "/"
	if w.fail["GetResource"] {
		return nil, unavailable(path)
	}
	r, ok := w.resources[uuid]
	if !ok {
		return nil, &waldur.APIError{Method: http.MethodGet, Path: path, StatusCode: http.StatusNotFound}
	}
	c := *r
	return &c, nil
}

func (w *fakeWaldur) GetResourceTeam(_ context.Context, uuid string, _ *bool) ([]waldur.ProjectUser, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.teamReads++
	if w.fail["GetResourceTeam"] {
		return nil, unavailable("/api/marketplace-provider-resources/" + uuid + "/team/")
	}
	return slices.Clone(w.teams[uuid]), nil
}

func (w *fakeWaldur) ListProviderResources(_ context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.filters = append(w.filters, f)
	if w.fail["ListProviderResources"] {
		return nil, unavailable("/api/marketplace-provider-resources/")
	}
	var out []waldur.Resource
	for _, r := range w.resources {
		if (f.ProjectUUID == "" || r.ProjectUUID == f.ProjectUUID) && (!f.DropEmptyBackendID || r.BackendID != "") &&
			(len(f.States) == 0 || slices.Contains(f.States, r.State)) {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b waldur.Resource) int { return strings.Compare(a.UUID, b.UUID) })
	return out, nil
}

// platform is the backend of an offering as membership sees it: it names
// objects (a Rancher project by the Waldur project's slug, a namespace by
// the resource's) and says which exist. Only the methods membership calls
// are implemented.
type platform struct {
	backend.Backend
	mu        sync.Mutex
	objects   map[string]bool
	existsErr error
	idErr     error
	// groupBindings are Rancher's group bindings (group → backend ids);
	// bindCalls are the binds and unbinds asked, as "bind|unbind <backend
	// id> <group>", in order; bindErr fails them while set.
	groupBindings map[string]map[string]bool
	bindCalls     []string
	bindErr       error
}

var _ GroupBinder = (*platform)(nil)

func newPlatform(objects ...string) *platform {
	p := &platform{objects: map[string]bool{}, groupBindings: map[string]map[string]bool{}}
	for _, o := range objects {
		p.objects[o] = true
	}
	return p
}

func (p *platform) Type() string { return "fake" }

func (p *platform) BackendID(r backend.Resource) (string, error) {
	if p.idErr != nil {
		return "", p.idErr
	}
	if r.ProjectSlug != "" {
		return "p-" + r.ProjectSlug, nil
	}
	return "ns-" + r.Slug, nil
}

func (p *platform) Exists(_ context.Context, id string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.objects[id], p.existsErr
}

func (p *platform) BindGroup(_ context.Context, backendID, group string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bindCalls = append(p.bindCalls, "bind "+backendID+" "+group)
	if p.bindErr != nil {
		return false, p.bindErr
	}
	if p.groupBindings[group] == nil {
		p.groupBindings[group] = map[string]bool{}
	}
	created := !p.groupBindings[group][backendID]
	p.groupBindings[group][backendID] = true
	return created, nil
}

func (p *platform) UnbindGroup(_ context.Context, backendID, group string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bindCalls = append(p.bindCalls, "unbind "+backendID+" "+group)
	if p.bindErr != nil {
		return p.bindErr
	}
	delete(p.groupBindings[group], backendID)
	return nil
}

func (p *platform) GroupBindings(_ context.Context, group string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bindErr != nil {
		return nil, p.bindErr
	}
	var out []string
	for id := range p.groupBindings[group] {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// bind makes group bound to exactly projects.
func (p *platform) bind(group string, projects ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groupBindings[group] = map[string]bool{}
	for _, id := range projects {
		p.groupBindings[group][id] = true
	}
}

// bound are the projects group is bound to.
func (p *platform) bound(group string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id := range p.groupBindings[group] {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// binds are the bind and unbind calls made.
func (p *platform) binds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bindCalls)
}

// okd is an OpenShift-like platform: role bindings per user, made from
// the Waldur role by the platform's own role map.
type okd struct {
	*platform
	bindings map[string]map[string]string // backend id → user → Waldur role
	err      error
}

func (o *okd) SetRoleBindings(_ context.Context, backendID string, users map[string]string) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return false, o.err
	}
	if !o.objects[backendID] {
		return false, fmt.Errorf("project %s: %w", backendID, backend.ErrNotFound)
	}
	if o.bindings == nil {
		o.bindings = map[string]map[string]string{}
	}
	o.bindings[backendID] = users
	return true, nil
}

// managedNS is a platform that lists users in the object itself
// (sync_users_to_cr).
type managedNS struct {
	*platform
	users map[string]map[string][]string // backend id → role → users
	err   error
}

func (m *managedNS) SetUsers(_ context.Context, backendID string, users map[string][]string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return false, m.err
	}
	if !m.objects[backendID] {
		return false, fmt.Errorf("namespace %s: %w", backendID, backend.ErrNotFound)
	}
	if m.users == nil {
		m.users = map[string]map[string][]string{}
	}
	for _, u := range users {
		slices.Sort(u)
	}
	m.users[backendID] = users
	return true, nil
}

// siblings are the services membership sends commands to, on the bus as
// they are in sitebus: keycloak-sync's groups (by name, members by ref,
// users Keycloak knows). Group bindings are the platform's (GroupBinder).
type siblings struct {
	mu     sync.Mutex
	groups map[string]map[string]bool // group name → member refs
	known  map[string]bool            // refs of users in Keycloak
	// down makes keycloak-sync fail every command retryably (Keycloak
	// unavailable) while set.
	down bool
	// calls are "service command key", in order.
	calls []string
	reqs  []proto.Message
}

func (s *siblings) record(ctx context.Context, service, command string, req proto.Message) {
	d, _ := bus.DeliveryFromContext(ctx)
	s.calls = append(s.calls, service+" "+command+" "+d.Header.Get(bus.HeaderCallKey))
	s.reqs = append(s.reqs, req)
}

// commands are the calls made, as "service command" without their key.
func (s *siblings) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c[:strings.LastIndex(c, " ")])
	}
	return out
}

func (s *siblings) members(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for m := range s.groups[group] {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

func (s *siblings) setMembers(group string, refs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[group] = map[string]bool{}
	for _, r := range refs {
		s.groups[group][r] = true
		s.known[r] = true
	}
}

func (s *siblings) hasGroup(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.groups[name]
	return ok
}

func (s *siblings) setGroupMembers(ctx context.Context, req *sitebusv1.SetGroupMembersRequest) (*sitebusv1.SetGroupMembersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(ctx, contract.KeycloakSync, contract.CmdSetGroupMembers, req)
	if s.down {
		return nil, errors.New("keycloak: list members: HTTP 503: unavailable")
	}
	name := req.GetGroup().GetName()
	have, ok := s.groups[name]
	if !ok && req.IfExists {
		return &sitebusv1.SetGroupMembersResponse{Missing: true}, nil
	}
	if !ok {
		return nil, bus.Terminal(fmt.Errorf("set members of group %s: not found", name))
	}
	resp := &sitebusv1.SetGroupMembersResponse{GroupId: "id-" + name}
	want := map[string]bool{}
	for _, m := range req.Members {
		if !s.known[m.Ref] {
			resp.Pending = append(resp.Pending, m)
			continue
		}
		want[m.Ref] = true
		if !have[m.Ref] {
			resp.Added = append(resp.Added, &sitebusv1.Member{Id: m.Ref})
		}
	}
	for m := range have {
		if !want[m] {
			resp.Removed = append(resp.Removed, &sitebusv1.Member{Id: m})
		}
	}
	s.groups[name] = want
	return resp, nil
}

func (s *siblings) listMembers(ctx context.Context, req *sitebusv1.ListMembersRequest) (*sitebusv1.ListMembersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(ctx, contract.KeycloakSync, contract.CmdListMembers, req)
	if s.down {
		return nil, errors.New("keycloak: list members: HTTP 503: unavailable")
	}
	name := req.GetGroup().GetName()
	have, ok := s.groups[name]
	if !ok && req.IfExists {
		return &sitebusv1.ListMembersResponse{Missing: true}, nil
	}
	if !ok {
		return nil, bus.Terminal(fmt.Errorf("list members of group %s: not found", name))
	}
	resp := &sitebusv1.ListMembersResponse{GroupId: "id-" + name}
	for _, m := range slices.Sorted(maps.Keys(have)) {
		resp.Members = append(resp.Members, &sitebusv1.Member{Id: m, Username: m})
	}
	return resp, nil
}

func (s *siblings) addMember(ctx context.Context, req *sitebusv1.AddMemberRequest) (*sitebusv1.AddMemberResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(ctx, contract.KeycloakSync, contract.CmdAddMember, req)
	if s.down {
		return nil, errors.New("keycloak: add member: HTTP 503: unavailable")
	}
	name := req.GetGroup().GetName()
	if _, ok := s.groups[name]; !ok {
		return nil, bus.Terminal(fmt.Errorf("add to group %s: not found", name))
	}
	if !s.known[req.GetUser().GetRef()] {
		return &sitebusv1.AddMemberResponse{GroupId: "id-" + name, Pending: true}, nil
	}
	s.groups[name][req.GetUser().GetRef()] = true
	return &sitebusv1.AddMemberResponse{GroupId: "id-" + name, UserId: req.GetUser().GetRef()}, nil
}

func (s *siblings) ensureGroups(ctx context.Context, req *sitebusv1.EnsureGroupsRequest) (*sitebusv1.EnsureGroupsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(ctx, contract.KeycloakSync, contract.CmdEnsureGroups, req)
	if s.down {
		return nil, errors.New("keycloak: find group: HTTP 503: unavailable")
	}
	resp := &sitebusv1.EnsureGroupsResponse{}
	for _, g := range req.Groups {
		_, ok := s.groups[g.Name]
		if !ok {
			s.groups[g.Name] = map[string]bool{}
		}
		resp.Groups = append(resp.Groups, &sitebusv1.EnsuredGroup{Id: "id-" + g.Name, Name: g.Name, Created: !ok, Managed: true})
	}
	return resp, nil
}

func (s *siblings) deleteGroups(ctx context.Context, req *sitebusv1.DeleteGroupsRequest) (*sitebusv1.DeleteGroupsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(ctx, contract.KeycloakSync, contract.CmdDeleteGroups, req)
	resp := &sitebusv1.DeleteGroupsResponse{}
	for _, g := range req.Groups {
		if _, ok := s.groups[g.Name]; ok {
			delete(s.groups, g.Name)
			resp.DeletedIds = append(resp.DeletedIds, "id-"+g.Name)
		}
	}
	return resp, nil
}

// serveSiblings serves the siblings' commands on b until the test ends;
// a retryable failure is retried twice, milliseconds apart.
func serveSiblings(t *testing.T, b *bus.Bus, s *siblings) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	consumer := bus.ConsumerConfig{MaxDeliver: 2, Backoff: bus.ExponentialBackoff(5*time.Millisecond, 20*time.Millisecond)}
	cfg := func(service, command string) bus.ServeConfig {
		return bus.ServeConfig{Service: service, Command: command, Consumer: consumer}
	}
	var subs []*bus.Subscription
	add := func(sub *bus.Subscription, err error) {
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	add(bus.Serve(ctx, b, cfg(contract.KeycloakSync, contract.CmdSetGroupMembers), s.setGroupMembers))
	add(bus.Serve(ctx, b, cfg(contract.KeycloakSync, contract.CmdEnsureGroups), s.ensureGroups))
	add(bus.Serve(ctx, b, cfg(contract.KeycloakSync, contract.CmdDeleteGroups), s.deleteGroups))
	add(bus.Serve(ctx, b, cfg(contract.KeycloakSync, contract.CmdListMembers), s.listMembers))
	add(bus.Serve(ctx, b, cfg(contract.KeycloakSync, contract.CmdAddMember), s.addMember))
	t.Cleanup(func() {
		cancel()
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		for _, sub := range subs {
			sub.Stop(stop)
		}
	})
}

// The offering of the tests, and Rancher's groups for it: the cluster's
// group, then the child of the Waldur project.
const (
	offeringUUID = "5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	offeringHex  = "5e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b"
	projectUUID  = "7a7a7a7a-7a7a-4a7a-8a7a-7a7a7a7a7a7a"
)

func nsGroups(res *waldur.Resource) []contract.GroupSpec {
	slug := res.Slug
	var out []contract.GroupSpec
	for _, r := range backend.Roles {
		out = append(out, contract.GroupSpec{Role: r, Name: "ns_" + slug + "_" + r})
	}
	return out
}

func rancherGroups(projectSlug string) []contract.GroupSpec {
	return []contract.GroupSpec{{Name: "c_cm1"}, {Name: "project_" + projectSlug + "_member", Parent: "c_cm1"}}
}

// env is a membership service on an embedded NATS, with its siblings
// served there and Waldur and the platform in memory.
type env struct {
	s        *Service
	b        *bus.Bus
	w        *fakeWaldur
	sib      *siblings
	offering Offering
}

func newEnv(t *testing.T, o Offering) *env {
	t.Helper()
	if o.Backend == nil {
		o.Backend = newPlatform()
	}
	return newEnvAs(t, o)
}

// newEnvAs is newEnv for o as it is, without a backend if it has none.
func newEnvAs(t *testing.T, o Offering) *env {
	t.Helper()
	e := &env{w: newWaldur(), sib: &siblings{groups: map[string]map[string]bool{}, known: map[string]bool{}}}
	e.b = bustest.New(t, bus.Config{})
	if o.Groups != nil || o.ProjectGroups != nil {
		serveSiblings(t, e.b, e.sib)
	}
	o.Config = &config.Offering{Name: "test", WaldurOfferingUUID: offeringUUID}
	o.Waldur = e.w
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.Default()
	}
	s, err := New(e.b, Config{Offerings: []Offering{o}, MaxDeliver: 2, Backoff: bus.ExponentialBackoff(5*time.Millisecond, 20*time.Millisecond),
		Logger: log, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	e.s, e.offering = s, s.offerings[offeringHex]
	return e
}

func (e *env) sync(t *testing.T, uuid string, created bool) (*sitebusv1.SyncResourceResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return e.s.syncResource(ctx, e.offering, uuid, "test:"+uuid, created)
}

// user is a team member with an offering account named ref.
func user(ref, role string) waldur.ProjectUser {
	return waldur.ProjectUser{Username: ref + "-waldur", OfferingUserUsername: ref, Role: role, Email: strings.ToUpper(ref[:1]) + ref[1:] + "@example.org"}
}

func resUUID(i int) string { return fmt.Sprintf("0000000%d-1111-4111-8111-111111111111", i) }
