package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/keycloak/keycloakfake"
	"github.com/sitebus/sitebus/pkg/waldur"
)

var _ keycloakAPI = (*keycloakfake.Realm)(nil)

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
	site   *keycloakfake.Realm
	other  *keycloakfake.Realm
	waldur map[string]*fakeWaldur // by offering UUID
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{site: keycloakfake.New("site"), other: keycloakfake.New("other"),
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
