// Package keycloaksync is the keycloak-sync service, the only component that
// writes to Keycloak. It serves commands (ensure and delete groups, set,
// add, remove and list members) sent with bus.Call on
// cmd.keycloak-sync.<command>, and runs two periodic jobs: memberships
// whose user is not in Keycloak yet stay pending and are retried, and
// managed groups whose Waldur resource is gone are removed.
//
// Keycloak being down is never skipped: the client retries a little, then
// the command fails retryably and the consumer redelivers it with backoff.
package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Name is the service name used by --only and in command subjects.
const Name = contract.KeycloakSync

// Commands the service serves, the last token of cmd.keycloak-sync.<command>
// (declared with their types in pkg/contract).
const (
	CmdEnsureGroups    = contract.CmdEnsureGroups
	CmdDeleteGroups    = contract.CmdDeleteGroups
	CmdSetGroupMembers = contract.CmdSetGroupMembers
	CmdAddMember       = contract.CmdAddMember
	CmdRemoveMember    = contract.CmdRemoveMember
	CmdListMembers     = contract.CmdListMembers
)

// Defaults of the periodic jobs: the Python agent has neither job; these
// are sitebus's.
const (
	DefaultPendingPeriod = 15 * time.Minute
	DefaultCleanupPeriod = time.Hour
)

// Waldur is what the leftover cleanup asks Waldur (a *waldur.Client).
type Waldur interface {
	ListProviderResources(ctx context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error)
}

// keycloakAPI is what the service calls in one realm: a *keycloak.Client,
// or a keycloakfake.Realm in the unit tests.
type keycloakAPI interface {
	Realm() string
	FindGroup(ctx context.Context, name, parentID string) (*keycloak.Group, error)
	EnsureGroup(ctx context.Context, name, parentID, description string, opts ...keycloak.GroupOption) (keycloak.Group, bool, error)
	GetGroup(ctx context.Context, id string) (*keycloak.Group, error)
	SetGroupAttributes(ctx context.Context, id string, attrs map[string][]string) error
	DeleteGroup(ctx context.Context, id string) error
	HasSubGroups(ctx context.Context, id string) (bool, error)
	ManagedGroups(ctx context.Context) ([]keycloak.Group, error)
	FindUser(ctx context.Context, idOrUsername string, byID bool) (*keycloak.User, error)
	AddMember(ctx context.Context, groupID, userID string) error
	RemoveMember(ctx context.Context, groupID, userID string) error
	Members(ctx context.Context, groupID string) ([]keycloak.User, error)
}

var _ keycloakAPI = (*keycloak.Client)(nil)

// Offering is an offering whose groups sitebus keeps in Keycloak.
type Offering struct {
	Config *config.Offering
	// Waldur lists the offering's resources for the leftover cleanup.
	Waldur Waldur
	// Keycloak is backend_settings.keycloak, parsed (see Settings).
	Keycloak keycloak.Config
	// Names lists the groups a resource of the offering uses, for the
	// leftover cleanup; nil means ManagedNamespace's ns_<slug>_<role>.
	Names func(r waldur.Resource) []GroupName
	// Bindings lists the platform objects a group is bound to (a Rancher
	// project's group bindings); nil when the offering binds no groups.
	// The cleanup keeps a group bound to anything.
	Bindings func(ctx context.Context, group string) ([]string, error)
}

// Config configures the service.
type Config struct {
	Offerings []Offering
	// PendingPeriod is how often pending memberships are retried.
	PendingPeriod time.Duration
	// CleanupPeriod is how often leftover managed groups are removed
	// (sitebus.periods.keycloak_cleanup_period); negative disables the job.
	CleanupPeriod time.Duration
	// MaxDeliver and Backoff shape the retries of a command while
	// Keycloak is unavailable (defaults 20, 1 s..1 min: about 15 minutes).
	MaxDeliver int
	Backoff    bus.Backoff

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.PendingPeriod == 0 {
		c.PendingPeriod = DefaultPendingPeriod
	}
	if c.CleanupPeriod == 0 {
		c.CleanupPeriod = DefaultCleanupPeriod
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 20
	}
	if c.Backoff == nil {
		c.Backoff = bus.ExponentialBackoff(time.Second, time.Minute)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports configuration that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.PendingPeriod < time.Second {
		errs = append(errs, fmt.Errorf("keycloak-sync: pending period %s < 1s", c.PendingPeriod))
	}
	if c.CleanupPeriod > 0 && c.CleanupPeriod < time.Second {
		errs = append(errs, fmt.Errorf("keycloak-sync: cleanup period %s < 1s", c.CleanupPeriod))
	}
	for _, o := range c.Offerings {
		if o.Config == nil {
			errs = append(errs, errors.New("keycloak-sync: offering without config"))
		}
	}
	return errors.Join(errs...)
}

// realm is one Keycloak realm and the offerings that use it. Offerings
// that share a realm share a client, and the leftover cleanup asks all of
// them whether a group's resource is alive.
type realm struct {
	key       string // URL|realm
	client    keycloakAPI
	offerings []Offering
}

// Service is the keycloak-sync service.
type Service struct {
	bus     *bus.Bus
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	// byOffering maps an offering UUID (32 hex digits) to its realm.
	byOffering map[string]*realm
	realms     []*realm

	subs    bus.Subscriptions
	mu      sync.Mutex
	pending jetstream.KeyValue
}

// New builds the service and its Keycloak clients (no call is made); Run
// starts it.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	return newService(b, cfg, func(kc keycloak.Config) (keycloakAPI, error) { return keycloak.New(kc) })
}

// newService is New with the realms' clients made by connect.
func newService(b *bus.Bus, cfg Config, connect func(keycloak.Config) (keycloakAPI, error)) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		bus: b, cfg: cfg, log: cfg.Logger.With("service", Name),
		metrics: newMetrics(cfg.Registerer), byOffering: map[string]*realm{},
	}
	byKey := map[string]*realm{}
	for _, o := range cfg.Offerings {
		kc := o.Keycloak
		key := strings.TrimRight(kc.URL, "/") + "|" + kc.Realm
		r := byKey[key]
		if r == nil {
			if kc.Logger == nil {
				kc.Logger = s.log.With("offering", o.Config.Name)
			}
			c, err := connect(kc)
			if err != nil {
				return nil, fmt.Errorf("offering %q: %w", o.Config.Name, err)
			}
			r = &realm{key: key, client: c}
			byKey[key] = r
			s.realms = append(s.realms, r)
		}
		r.offerings = append(r.offerings, o)
		s.byOffering[o.Config.OfferingUUIDHex()] = r
	}
	return s, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run serves the commands and runs the periodic jobs until ctx ends. With
// no Keycloak-enabled offering it idles.
func (s *Service) Run(ctx context.Context) error {
	if len(s.realms) == 0 {
		<-ctx.Done()
		return nil
	}
	pending, err := s.ensurePendingBucket(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.pending = pending
	s.mu.Unlock()
	defer s.subs.Stop(30 * time.Second)
	if err := s.serve(ctx); err != nil {
		return err
	}

	var wg sync.WaitGroup
	wg.Go(func() { every(ctx, s.cfg.PendingPeriod, s.retryPending) })
	if s.cfg.CleanupPeriod > 0 {
		wg.Go(func() { every(ctx, s.cfg.CleanupPeriod, s.removeLeftovers) })
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// Ready reports whether every command consumer is bound.
func (s *Service) Ready(ctx context.Context) error {
	if len(s.realms) == 0 {
		return nil
	}
	return s.subs.Check(ctx)
}

// every calls fn each period until ctx ends.
func every(ctx context.Context, period time.Duration, fn func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}
