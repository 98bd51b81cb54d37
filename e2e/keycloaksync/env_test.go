package keycloaksync_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/keycloaksync"
)

// From e2e/waldursim/testdata/fixture.yaml.
const (
	offeringUUID = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	waldurToken  = "7d2f0c4b9e8a41d3a6b5c4d3e2f1a0b9"
	aliveSlug    = "ns-alpha"
)

// Seeded Keycloak users of the "waldur" realm.
const (
	aliceID = "11111111-1111-4111-8111-111111111111"
	bobID   = "22222222-2222-4222-8222-222222222222"
	daveID  = "44444444-4444-4444-8444-444444444444"
)

type env struct {
	t   *testing.T
	kc  *keycloaksim.Server
	ws  *waldursim.Server
	bus *bus.Bus
	svc *keycloaksync.Service
}

type envOptions struct {
	pendingPeriod, cleanupPeriod time.Duration
}

// newEnv runs the keycloak-sync service in this process on an embedded
// NATS, against the Keycloak and Waldur simulators.
func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	kc := keycloaksim.NewTestServer(t, keycloaksim.Config{Logger: log, Realms: []keycloaksim.Realm{{
		Name: "waldur",
		Users: []keycloaksim.User{
			{ID: aliceID, Username: "alice"}, {ID: bobID, Username: "bob"}, {ID: daveID, Username: "dave"},
		},
	}}})
	ws := waldursim.NewTestServer(t, waldursim.Config{Fixture: harness.Fixture(t), Logger: log})

	b := bustest.New(t, bus.Config{Logger: log})

	cfg, err := config.Parse(fmt.Appendf(nil, `offerings:
  - name: kc
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: k8s-ut-namespace
    backend_settings:
      keycloak_enabled: true
      keycloak:
        keycloak_url: %s
        keycloak_username: admin
        keycloak_password: admin
`, ws.URL(), waldurToken, offeringUUID, kc.URL()), "kc.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	oc := &cfg.Offerings[0]
	kcc, enabled, err := keycloaksync.Settings(oc)
	if err != nil || !enabled {
		t.Fatalf("keycloak settings: %v (enabled %v)", err, enabled)
	}
	// Few, quick client retries: outages are the consumer's to wait out.
	kcc.MaxAttempts, kcc.RetryBase, kcc.RetryMax, kcc.Logger = 2, 20*time.Millisecond, 50*time.Millisecond, log
	wc, err := waldur.New(waldur.Config{APIURL: oc.WaldurAPIURL, Token: waldurToken, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if o.pendingPeriod == 0 {
		o.pendingPeriod = time.Hour
	}
	if o.cleanupPeriod == 0 {
		o.cleanupPeriod = -1
	}
	svc, err := keycloaksync.New(b, keycloaksync.Config{
		Offerings:     []keycloaksync.Offering{{Config: oc, Waldur: wc, Keycloak: kcc}},
		PendingPeriod: o.pendingPeriod, CleanupPeriod: o.cleanupPeriod,
		Backoff: func(int) time.Duration { return 300 * time.Millisecond },
		Logger:  log,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = svc.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	harness.Eventually(t, 30*time.Second, "the keycloak-sync consumers", func() bool { return svc.Ready(ctx(t)) == nil })
	return &env{t: t, kc: kc, ws: ws, bus: b, svc: svc}
}

func ctx(t *testing.T) context.Context { return harness.Context(t, 60*time.Second) }

// group returns the simulator's group at a top-level path.
func (e *env) group(name string) (keycloaksim.GroupInfo, bool) {
	return e.kc.GroupByPath("waldur", "/"+name)
}
