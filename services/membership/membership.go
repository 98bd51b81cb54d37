// Package membership is the membership service: it keeps who has access
// to each resource's platform object equal to the resource's team in
// Waldur. It reads desired state (the team, the roles, restrict_member_access)
// from Waldur and applies it whole, never deltas, so events that arrive
// twice or out of order converge: on user_role and resource events, on
// request from a saga, and for every resource each membership period.
// Keycloak is written only by the keycloak-sync service, through commands.
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Name is the service name used by --only.
const Name = contract.Membership

// Waldur is what the service asks Waldur (a *waldur.Client): the
// resources, and each one's team.
type Waldur interface {
	GetResource(ctx context.Context, uuid string, fields ...string) (*waldur.Resource, error)
	GetResourceTeam(ctx context.Context, uuid string, hasConsent *bool) ([]waldur.ProjectUser, error)
	ListProviderResources(ctx context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error)
}

// Offering is one offering whose access this service manages.
type Offering struct {
	Config *config.Offering
	Waldur Waldur
	// Backend is the platform the objects are on; nil for an offering
	// whose objects and groups another service owns (rancher-cluster: the
	// cluster-provisioner makes each cluster's groups and binds them), so
	// that membership only fills the groups and never remakes them.
	Backend backend.Backend
	// Groups names a resource's access groups, each with the access role
	// its members get; nil when the offering has no identity provider
	// (then only users in the object are synced).
	Groups func(res *waldur.Resource) []contract.GroupSpec
	// ProjectGroups names a Rancher project's groups by the Waldur
	// project's slug (the cluster's group, then the child bound to the
	// project, last); every member of the team goes into the child.
	ProjectGroups func(projectSlug string) []contract.GroupSpec
	// RoleMapping is merged over DefaultRoleMapping; DefaultRole is for
	// roles it does not name.
	RoleMapping map[string]string
	DefaultRole string
	// Roles, when set, are the offering's own access roles, strongest
	// first, in place of backend.Roles (a rancher-cluster offering's
	// cluster role templates): RoleMapping is then the whole mapping and a
	// project role it maps to "" or does not name gets no access
	// (DesiredIn); DefaultRole is not used.
	Roles []string
	// Access, when set, keeps the resource's access that no group of
	// Groups gives, on every sync (a virtual cluster's role template
	// bindings on its Rancher cluster).
	Access Accessor
	// UsersByID: offering usernames are Keycloak user ids (keycloak_use_user_id).
	UsersByID bool
	// SyncUsersToCR writes users into the object too, identified by
	// IdentityField (email or username), lower-cased if asked.
	SyncUsersToCR     bool
	IdentityField     string
	IdentityLowercase bool
}

// Config configures the service.
type Config struct {
	Offerings []Offering
	// Period is the full reconcile interval (membership-sync period); 0 disables it.
	Period     time.Duration
	MaxDeliver int
	Backoff    bus.Backoff
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Service is the membership service.
type Service struct {
	bus *bus.Bus
	// calls reaches keycloak-sync: the bus, or the contract.Local of
	// sitebus orders explain (see Handle).
	calls     contract.Caller
	cfg       Config
	log       *slog.Logger
	offerings map[string]Offering
	changes   *prometheus.CounterVec
	recreated prometheus.Counter
	passes    *prometheus.CounterVec
	subs      bus.Subscriptions
}

// New builds the service; Run starts it.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{bus: b, calls: b, cfg: cfg, log: cfg.Logger.With("service", Name), offerings: map[string]Offering{},
		changes: telemetry.Register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_membership_changes_total", Help: "Membership changes applied, by kind (added, removed, pending).",
		}, []string{"kind"})),
		recreated: telemetry.Register(cfg.Registerer, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sitebus_membership_groups_recreated_total", Help: "Access groups of live resources found missing and made again.",
		})),
		passes: telemetry.Register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_membership_reconcile_passes_total",
			Help: "Periodic membership reconciles of an offering, by outcome: done (every resource tried), failed (its resources could not be listed).",
		}, []string{"offering", "outcome"})),
	}
	for _, o := range cfg.Offerings {
		if o.Config == nil || o.Waldur == nil {
			return nil, errors.New("membership: offering without config or Waldur client")
		}
		if o.Backend == nil && (o.ProjectGroups != nil || o.Groups == nil) {
			return nil, errors.New("membership: an offering without a backend must have access groups and no Rancher project groups")
		}
		s.offerings[o.Config.OfferingUUIDHex()] = o
	}
	return s, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run serves sync requests, follows events and reconciles periodically.
func (s *Service) Run(ctx context.Context) error {
	if len(s.offerings) == 0 {
		<-ctx.Done()
		return nil
	}
	var filters []string
	for hex := range s.offerings {
		filters = append(filters, "waldur."+hex+"."+events.UserRole, "waldur."+hex+"."+events.Resource)
	}
	slices.Sort(filters)
	cc := bus.ConsumerConfig{MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff}
	serve, err := contract.Serve(ctx, s.bus, contract.SyncResource, cc, s.serveSync)
	if err != nil {
		return err
	}
	defer s.subs.Stop(30 * time.Second)
	s.subs.Add(serve)
	serveCreated, err := contract.Serve(ctx, s.bus, contract.SyncCreated, cc, s.serveSyncCreated)
	if err != nil {
		return err
	}
	s.subs.Add(serveCreated)
	evs, err := bus.Subscribe(ctx, s.bus, bus.ConsumerConfig{Name: Name, Stream: bus.EventsStream, FilterSubjects: filters, Partitioned: true,
		MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff, OrderingKey: bus.WaldurEventKey}, s.handleEvent)
	if err != nil {
		return err
	}
	s.subs.Add(evs)
	if s.cfg.Period > 0 {
		s.periodic(ctx)
	} else {
		<-ctx.Done()
	}
	return nil
}

// Ready reports whether the consumers are bound.
func (s *Service) Ready(ctx context.Context) error {
	if len(s.offerings) == 0 {
		return nil
	}
	return s.subs.Check(ctx)
}

func (s *Service) offering(hex string) (Offering, error) {
	o, ok := s.offerings[hex]
	if !ok {
		return Offering{}, bus.Terminal(fmt.Errorf("offering %s has no membership here", hex))
	}
	return o, nil
}

func (s *Service) serveSync(ctx context.Context, req *sitebusv1.SyncResourceRequest) (*sitebusv1.SyncResourceResponse, error) {
	o, err := s.offering(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	d, _ := bus.DeliveryFromContext(ctx)
	return s.syncResource(ctx, o, req.ResourceUuid, "sync:"+d.Header.Get(bus.HeaderMsgID), false)
}

// serveSyncCreated is sync-resource for the team step of a create saga
// whose earlier steps made the object and bound the project group to it
// (contract.SyncCreated): it does not look the object up again nor bind
// again. A redelivery or a resumed saga is the same: the team step runs
// only after those steps' results are recorded.
func (s *Service) serveSyncCreated(ctx context.Context, req *sitebusv1.SyncResourceRequest) (*sitebusv1.SyncResourceResponse, error) {
	o, err := s.offering(req.OfferingUuid)
	if err != nil {
		return nil, err
	}
	d, _ := bus.DeliveryFromContext(ctx)
	return s.syncResource(ctx, o, req.ResourceUuid, "sync:"+d.Header.Get(bus.HeaderMsgID), true)
}

// Handle has l answer the commands the service serves, and sends the
// service's own commands through l: sitebus orders explain runs a saga's
// team step this way, without the bus.
func (s *Service) Handle(l *contract.Local) {
	s.calls = l
	contract.Handle(l, contract.SyncResource, s.serveSync)
	contract.Handle(l, contract.SyncCreated, s.serveSyncCreated)
}

// handleEvent syncs the resources a user_role or resource event concerns.
func (s *Service) handleEvent(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
	o, err := s.offering(ev.OfferingUuid)
	if err != nil {
		return err
	}
	d, _ := bus.DeliveryFromContext(ctx)
	key := fmt.Sprintf("event:%s:%d", d.Stream, d.StreamSeq)
	var targets []string
	switch ev.ObjectType {
	case events.Resource:
		var m events.ResourceMessage
		if err := json.Unmarshal(ev.Body, &m); err != nil || !events.IsUUID(m.ResourceUUID) {
			return bus.Terminal(fmt.Errorf("resource event %q has no valid resource_uuid", ev.Body))
		}
		targets = []string{m.ResourceUUID}
	case events.UserRole:
		var m events.UserRoleMessage
		if err := json.Unmarshal(ev.Body, &m); err != nil {
			return bus.Terminal(fmt.Errorf("user_role event %q: %w", ev.Body, err))
		}
		if events.IsUUID(m.ResourceUUID) {
			targets = []string{m.ResourceUUID}
			break
		}
		filter := waldur.ResourceFilter{OfferingUUID: o.Config.WaldurOfferingUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}}
		if events.IsUUID(m.ProjectUUID) {
			filter.ProjectUUID = m.ProjectUUID
		}
		resources, err := o.Waldur.ListProviderResources(ctx, filter)
		if err != nil {
			return fmt.Errorf("list resources for a role change: %w", err)
		}
		for _, r := range resources {
			targets = append(targets, r.UUID)
		}
	default:
		return nil
	}
	// One resource that cannot be synced (say, its groups were never made,
	// as for a namespace created without Keycloak) must not hold back the
	// others: its terminal errors are logged; only retryable ones make the
	// event come again.
	var errs []error
	for _, uuid := range targets {
		_, err := s.syncResource(ctx, o, uuid, key+":"+uuid, false)
		switch {
		case err == nil:
		case bus.IsTerminal(err):
			s.log.Warn("membership of a resource cannot be synced", "offering", o.Config.Name, "resource", uuid, "err", err)
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Service) periodic(ctx context.Context) {
	t := time.NewTicker(s.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, o := range s.offerings {
				s.syncOffering(ctx, o, now)
			}
		}
	}
}

// passResources are the resources the periodic pass syncs: the live ones
// with an object.
func passResources(ctx context.Context, o Offering) ([]waldur.Resource, error) {
	return o.Waldur.ListProviderResources(ctx, waldur.ResourceFilter{
		OfferingUUID: o.Config.WaldurOfferingUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred}, DropEmptyBackendID: true,
	})
}

func (s *Service) syncOffering(ctx context.Context, o Offering, now time.Time) {
	resources, err := passResources(ctx, o)
	if err != nil {
		if ctx.Err() == nil {
			s.passes.WithLabelValues(o.Config.OfferingUUIDHex(), "failed").Inc()
			s.log.Error("listing resources for the membership reconcile failed; next try at the next period", "offering", o.Config.Name, "err", err)
		}
		return
	}
	key := fmt.Sprintf("periodic:%d", now.UnixNano())
	ctx = withPassCache(ctx)
	for _, r := range resources {
		if _, err := s.syncResource(ctx, o, r.UUID, key+":"+r.UUID, false); err != nil && ctx.Err() == nil {
			s.log.Warn("membership reconcile of a resource failed", "offering", o.Config.Name, "resource", r.UUID, "err", err)
		}
	}
	if ctx.Err() == nil {
		s.passes.WithLabelValues(o.Config.OfferingUUIDHex(), "done").Inc()
	}
}

// desired is who should have access to res, and how, by the offering's
// role mapping.
func (o Offering) desired(team []waldur.ProjectUser, res *waldur.Resource) map[string]Member {
	if o.Roles != nil {
		return DesiredIn(team, o.RoleMapping, o.Roles, res.RestrictMemberAccess)
	}
	return Desired(team, o.RoleMapping, o.DefaultRole, res.RestrictMemberAccess)
}

// syncResource applies Waldur's team of one resource to its access groups
// and, where configured, to the users listed in the object. key makes the
// commands it sends idempotent for this one sync. created says the caller
// is a create saga that made the object and bound its project group.
func (s *Service) syncResource(ctx context.Context, o Offering, resourceUUID, key string, created bool) (*sitebusv1.SyncResourceResponse, error) {
	res, err := o.Waldur.GetResource(ctx, resourceUUID)
	if waldur.IsNotFound(err) {
		return &sitebusv1.SyncResourceResponse{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get resource %s: %w", resourceUUID, err)
	}
	if res.Slug == "" || res.State == waldur.ResourceStateTerminated || res.State == waldur.ResourceStateTerminating {
		return &sitebusv1.SyncResourceResponse{}, nil
	}
	team, err := readTeam(ctx, o.Waldur, res.UUID)
	if err != nil {
		return nil, fmt.Errorf("get team of resource %s: %w", res.UUID, err)
	}
	byRole := ByRole(o.desired(team, res))
	out := &sitebusv1.SyncResourceResponse{}
	if o.Groups != nil {
		if err := s.syncAccessGroups(ctx, o, res, byRole, key, out); err != nil {
			return nil, err
		}
	}
	if o.ProjectGroups != nil {
		if err := s.syncProjectGroups(ctx, o, res, team, key, created, out); err != nil {
			return nil, err
		}
	}
	if binder, ok := o.Backend.(RoleBinder); ok {
		if err := s.syncRoleBindings(ctx, o, binder, res, team); err != nil {
			return nil, err
		}
	}
	if o.Access != nil {
		if err := s.syncAccess(ctx, o, res); err != nil {
			return nil, err
		}
	}
	if syncer, ok := o.Backend.(backend.UserSyncer); ok && o.SyncUsersToCR {
		if err := s.syncUsersToObject(ctx, o, syncer, res, byRole); err != nil {
			return nil, err
		}
	}
	s.changes.WithLabelValues("added").Add(float64(out.Added))
	s.changes.WithLabelValues("removed").Add(float64(out.Removed))
	s.changes.WithLabelValues("pending").Add(float64(out.Pending))
	if out.Added+out.Removed+out.Pending > 0 {
		s.log.Info("membership synced", "offering", o.Config.Name, "resource", res.UUID, "added", out.Added, "removed", out.Removed, "pending", out.Pending)
	}
	return out, nil
}

// syncAccessGroups puts each role's members into the resource's group of
// that role. A group that is missing (deleted by hand, or by a cleanup that
// raced the resource) is made again with its siblings and then filled: a
// live resource keeps its access, where a not-found would last until the
// resource is terminated.
func (s *Service) syncAccessGroups(ctx context.Context, o Offering, res *waldur.Resource, byRole map[string][]Member, key string, out *sitebusv1.SyncResourceResponse) error {
	groups := o.Groups(res)
	recreated := false
	for _, gm := range accessGroupMembers(o, res, byRole) {
		g := gm.Group
		req := &sitebusv1.SetGroupMembersRequest{OfferingUuid: o.Config.OfferingUUIDHex(), Group: &sitebusv1.GroupRef{Name: g.Name, ParentName: g.Parent}, IfExists: true}
		for _, ref := range gm.Members {
			req.Members = append(req.Members, &sitebusv1.UserRef{Ref: ref, ById: gm.ByID})
		}
		resp, err := contract.SetGroupMembers.Call(ctx, s.calls, req, bus.WithKey(key+":"+g.Role))
		if err == nil && resp.Missing && !recreated {
			made, rerr := s.recreateGroups(ctx, o, res, groups, key)
			if rerr != nil {
				return rerr
			}
			if !made {
				return nil // no object: nothing to grant access to
			}
			recreated = true
			req.IfExists = false
			resp, err = contract.SetGroupMembers.Call(ctx, s.calls, req, bus.WithKey(key+":"+g.Role+":recreated"))
		}
		if err == nil && resp.Missing {
			err = bus.Terminal(fmt.Errorf("group %s is missing again right after it was made", g.Name))
		}
		if err != nil {
			return fmt.Errorf("set members of group %s: %w", g.Name, err)
		}
		out.Added += int32(len(resp.Added))
		out.Removed += int32(len(resp.Removed))
		out.Pending += int32(len(resp.Pending))
	}
	return nil
}

// recreateGroups has keycloak-sync make a live resource's missing groups,
// when its object exists (a resource whose namespace was never made, or
// is gone, has nothing the groups would grant access to); made is false
// when it does not.
func (s *Service) recreateGroups(ctx context.Context, o Offering, res *waldur.Resource, groups []contract.GroupSpec, key string) (made bool, err error) {
	if o.Backend == nil {
		// Their owner makes them (a cluster's groups, with their bindings
		// to the cluster's roles, are the cluster-provisioner's): a group
		// made here would grant nothing.
		s.log.Warn("access groups of a resource are missing; left to the service that makes them", "offering", o.Config.Name, "resource", res.UUID)
		return false, nil
	}
	id := res.BackendID
	if id == "" {
		if id, err = o.Backend.BackendID(backend.Resource{UUID: res.UUID, Slug: res.Slug, CustomerSlug: res.CustomerSlug, ProjectSlug: res.ProjectSlug}); err != nil {
			return false, bus.Terminal(err)
		}
	}
	exists, err := o.Backend.Exists(ctx, id)
	if err != nil {
		return false, fmt.Errorf("look up %s %s: %w", o.Backend.Type(), id, err)
	}
	if !exists {
		s.log.Debug("access groups missing, and so is the object: nothing to grant access to", "offering", o.Config.Name, "resource", res.UUID, "backend_id", id)
		return false, nil
	}
	req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: o.Config.OfferingUUIDHex()}
	// A parent the groups do not list (a virtual cluster's c_<uuid hex>)
	// is ensured first: keycloak-sync makes a child only under a parent
	// that exists or comes before it in the request.
	listed := map[string]bool{}
	for _, g := range groups {
		listed[g.Name] = true
	}
	for _, g := range groups {
		if g.Parent != "" && !listed[g.Parent] {
			listed[g.Parent] = true
			req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: g.Parent})
		}
	}
	for _, g := range groups {
		req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: g.Name, Description: g.Description, ParentName: g.Parent})
	}
	resp, err := contract.EnsureGroups.Call(ctx, s.calls, req, bus.WithKey(key+":recreate"))
	if err != nil {
		return false, fmt.Errorf("recreate the groups of resource %s: %w", res.UUID, err)
	}
	var names []string
	for _, g := range resp.Groups {
		if g.Created {
			names = append(names, g.Name)
		}
	}
	s.recreated.Add(float64(len(names)))
	s.log.Warn("access groups of a live resource were missing; made again", "offering", o.Config.Name, "resource", res.UUID, "groups", names)
	return true, nil
}

func (s *Service) syncUsersToObject(ctx context.Context, o Offering, syncer backend.UserSyncer, res *waldur.Resource, byRole map[string][]Member) error {
	backendID, err := o.Backend.BackendID(backend.Resource{UUID: res.UUID, Slug: res.Slug})
	if err != nil {
		return bus.Terminal(err)
	}
	users := map[string][]string{}
	for role, members := range byRole {
		for _, m := range members {
			var id string
			switch o.IdentityField {
			case "username":
				id = m.Username
			case "":
				// cr_user_identity_field: "" names no attribute: the
				// Python plugin finds no identity and skips every user.
			default:
				id = m.Email
			}
			if id == "" {
				continue // the Python plugin skips users without the identity
			}
			if o.IdentityLowercase {
				id = strings.ToLower(id)
			}
			users[role] = append(users[role], id)
		}
	}
	if _, err := syncer.SetUsers(ctx, backendID, users); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return fmt.Errorf("set users of %s %s: %w", o.Backend.Type(), backendID, err)
	}
	return nil
}

// Accessor keeps one resource's access from a source of its own, as
// desired state (the bindings of a virtual cluster's Rancher cluster, from
// its role groups or its Rancher project's members): added and removed
// count what it changed.
type Accessor interface {
	SyncAccess(ctx context.Context, res *waldur.Resource) (added, removed int, err error)
}

// syncAccess applies o.Access to res. An error that redelivery cannot
// heal (a foreign Rancher cluster of the resource's name) is terminal;
// the period tries again.
func (s *Service) syncAccess(ctx context.Context, o Offering, res *waldur.Resource) error {
	added, removed, err := o.Access.SyncAccess(ctx, res)
	if added+removed > 0 {
		s.log.Info("access synced", "offering", o.Config.Name, "resource", res.UUID, "added", added, "removed", removed)
	}
	if err != nil {
		err = fmt.Errorf("sync the access of resource %s: %w", res.UUID, err)
		if fault.IsTerminal(err) {
			return bus.Terminal(err)
		}
	}
	return err
}

// RoleBinder is a backend that grants each user access in the object by
// the user's Waldur role, mapped through the backend's own role map (OKD:
// a RoleBinding per user to the mapped ClusterRole). It has no identity
// provider in between, so the membership service applies the team to it
// directly.
type RoleBinder interface {
	// SetRoleBindings makes the object's bindings exactly users
	// (username → Waldur role); changed is false when they were already.
	SetRoleBindings(ctx context.Context, backendID string, users map[string]string) (changed bool, err error)
}

// syncRoleBindings applies the whole team to the resource's object: the
// desired users (offering usernames, restrict_member_access honoured) with
// the roles Waldur sends. A resource without a backend id yet has no
// object; the sync after its create or the next period binds it.
func (s *Service) syncRoleBindings(ctx context.Context, o Offering, binder RoleBinder, res *waldur.Resource, team []waldur.ProjectUser) error {
	if res.BackendID == "" {
		return nil
	}
	users := bindingUsers(team, res)
	changed, err := binder.SetRoleBindings(ctx, res.BackendID, users)
	if errors.Is(err, backend.ErrNotFound) {
		return nil // the object is gone: nothing to grant access to
	}
	if err != nil {
		err = fmt.Errorf("set role bindings of %s %s: %w", o.Backend.Type(), res.BackendID, err)
		if fault.IsTerminal(err) {
			// A foreign project or a username that cannot name a binding
			// does not heal by redelivery; the period tries again.
			return bus.Terminal(err)
		}
		return err
	}
	if changed {
		s.log.Info("role bindings synced", "offering", o.Config.Name, "resource", res.UUID, "backend_id", res.BackendID, "users", len(users))
	}
	return nil
}

// bindingUsers are the users a RoleBinder binds in res's object: the
// desired users (offering usernames, restrict_member_access honoured)
// with the roles Waldur sends.
func bindingUsers(team []waldur.ProjectUser, res *waldur.Resource) map[string]string {
	users := map[string]string{}
	for ref, m := range Desired(team, nil, "", res.RestrictMemberAccess) {
		users[ref] = m.WaldurRole
	}
	return users
}

// ResourceBindings is what the membership pass binds in one resource's
// object: username → Waldur role.
type ResourceBindings struct {
	Resource  string            `json:"resource"`
	BackendID string            `json:"backend_id"`
	Users     map[string]string `json:"users"`
}

// PlanBindings is the dry run of the pass's role bindings for the
// offering (its UUID as hex), for a backend that binds users itself
// (RoleBinder; none otherwise): per resource with an object, the users
// the pass binds, decided as the pass decides. It changes nothing.
func (s *Service) PlanBindings(ctx context.Context, offeringHex string) ([]ResourceBindings, error) {
	o, ok := s.offerings[offeringHex]
	if !ok {
		return nil, fmt.Errorf("offering %s has no membership here", offeringHex)
	}
	if _, ok := o.Backend.(RoleBinder); !ok {
		return nil, nil
	}
	resources, err := passResources(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	ctx = withPassCache(ctx)
	var out []ResourceBindings
	for i := range resources {
		res := &resources[i]
		if res.Slug == "" {
			continue // the pass leaves it alone (syncResource)
		}
		team, err := readTeam(ctx, o.Waldur, res.UUID)
		if err != nil {
			return nil, fmt.Errorf("get team of resource %s: %w", res.UUID, err)
		}
		out = append(out, ResourceBindings{Resource: res.UUID, BackendID: res.BackendID, Users: bindingUsers(team, res)})
	}
	return out, nil
}

// GroupMembers is what the membership pass sets one Keycloak group's
// members to.
type GroupMembers struct {
	// Resource is the Waldur resource the group is set for.
	Resource string `json:"resource"`
	// Group names the group (Parent for a Rancher project's child group)
	// and the access role it grants.
	Group contract.GroupSpec `json:"group"`
	// Members are the users' refs: offering usernames, or Keycloak user
	// ids when ByID.
	Members []string `json:"members"`
	ByID    bool     `json:"by_id,omitempty"`
}

// accessGroupMembers are the resource's access groups, each with the
// members of its role (byRole, from Desired).
func accessGroupMembers(o Offering, res *waldur.Resource, byRole map[string][]Member) []GroupMembers {
	var out []GroupMembers
	for _, g := range o.Groups(res) {
		gm := GroupMembers{Resource: res.UUID, Group: g, ByID: o.UsersByID}
		for _, m := range byRole[g.Role] {
			gm.Members = append(gm.Members, m.Ref)
		}
		out = append(out, gm)
	}
	return out
}

// Plan is the dry run of the periodic membership pass for the offering
// (its UUID as hex): for every resource the pass syncs, the groups it
// sets and the members it sets them to, decided as the pass decides
// (Desired with the offering's role mapping, restrict_member_access, the
// union of a Rancher project's resources). A Rancher child group shared by
// several resources is listed once. It sends no command and changes
// nothing; the bus is not used.
func (s *Service) Plan(ctx context.Context, offeringHex string) ([]GroupMembers, error) {
	o, ok := s.offerings[offeringHex]
	if !ok {
		return nil, fmt.Errorf("offering %s has no membership here", offeringHex)
	}
	resources, err := passResources(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	ctx = withPassCache(ctx)
	var out []GroupMembers
	seen := map[contract.GroupSpec]bool{}
	for i := range resources {
		res := &resources[i]
		if res.Slug == "" {
			continue
		}
		team, err := readTeam(ctx, o.Waldur, res.UUID)
		if err != nil {
			return nil, fmt.Errorf("get team of resource %s: %w", res.UUID, err)
		}
		if o.Groups != nil {
			out = append(out, accessGroupMembers(o, res, ByRole(o.desired(team, res)))...)
		}
		if o.ProjectGroups == nil {
			continue
		}
		groups := o.ProjectGroups(res.ProjectSlug)
		child := groups[len(groups)-1]
		if seen[child] {
			continue
		}
		exists, err := o.Backend.Exists(ctx, res.BackendID)
		if err != nil {
			return nil, fmt.Errorf("look up %s %s: %w", o.Backend.Type(), res.BackendID, err)
		}
		if !exists {
			continue // the pass leaves the shared group alone for it
		}
		seen[child] = true
		members, err := s.projectMembers(ctx, o, res, Desired(team, nil, "", res.RestrictMemberAccess))
		if err != nil {
			return nil, err
		}
		gm := GroupMembers{Resource: res.UUID, Group: child, ByID: o.UsersByID}
		for _, m := range members {
			gm.Members = append(gm.Members, m.Ref)
		}
		slices.Sort(gm.Members)
		out = append(out, gm)
	}
	return out, nil
}

// ProjectGroupBinding is a Rancher project's binding of its Waldur
// project's child group, as the membership pass keeps it.
type ProjectGroupBinding struct {
	Resource  string             `json:"resource"`
	BackendID string             `json:"backend_id"`
	Group     contract.GroupSpec `json:"group"`
}

// PlanGroupBindings is the dry run of the bindings the pass keeps for an
// offering with project groups (Rancher; none otherwise): per resource
// whose project exists, its child group, when the pass binds it there,
// which it does (syncProjectGroups) whenever the group's members (Plan's,
// the union of the Waldur project's teams) are not empty. It changes
// nothing.
func (s *Service) PlanGroupBindings(ctx context.Context, offeringHex string) ([]ProjectGroupBinding, error) {
	o, ok := s.offerings[offeringHex]
	if !ok {
		return nil, fmt.Errorf("offering %s has no membership here", offeringHex)
	}
	if o.ProjectGroups == nil {
		return nil, nil
	}
	plan, err := s.Plan(ctx, offeringHex)
	if err != nil {
		return nil, err
	}
	members := map[contract.GroupSpec]int{}
	for _, gm := range plan {
		members[gm.Group] = len(gm.Members)
	}
	resources, err := passResources(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("list the offering's resources: %w", err)
	}
	var out []ProjectGroupBinding
	for _, res := range resources {
		if res.Slug == "" {
			continue // the pass leaves it alone (syncResource)
		}
		groups := o.ProjectGroups(res.ProjectSlug)
		child := groups[len(groups)-1]
		if members[child] > 0 {
			out = append(out, ProjectGroupBinding{Resource: res.UUID, BackendID: res.BackendID, Group: child})
		}
	}
	return out, nil
}
