// Package keycloakshare_test runs two sitebus deployments, each serving an
// offering of its own, on one Keycloak realm (two clusters of one site, as
// sites run them), and checks that neither removes the other's groups.
package keycloakshare_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

// kcAdminPassword is distinctive so that the harness's grep of sitebus's
// logs for configured secrets would find it.
const kcAdminPassword = "kc-admin-sh4r3d-realm"

// The fixture's offering and provider user, and those of the second
// deployment's Waldur (the same world under other UUIDs).
const (
	fixtureOffering = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	fixtureUser     = "3f1c2b7e9a4d4c8e8f0a1b2c3d4e5f60"
	offeringB       = "b2b2b2b2b2b24b2b8b2b2b2b2b2b2b2b"
	userB           = "b3b3b3b3b3b34b3b8b3b3b3b3b3b3b3b"
	// offeringGone is no deployment's: an offering removed from every
	// config, whose groups nobody here may delete.
	offeringGone = "e0e0e0e0e0e04e0e8e0e0e0e0e0e0e0e"
)

// cleanupsDone is the metric that counts keycloak-sync's cleanup passes
// that looked at the groups.
const cleanupsDone = `sitebus_keycloak_cleanup_passes_total{outcome="done"}`

// periods: the cleanup as often as it may run, membership every 2 s, so
// that a test sees several periods of each.
var periods = harness.WithSitebusConfig(map[string]any{"periods": map[string]any{
	"keycloak_pending_period": "2s", "saga_lease": "3s", "keycloak_cleanup_period": "10s", "membership_sync_period": "2s"}})

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

// fixtureB is the standard fixture for the second deployment: another
// offering, served by another provider user (its own broker vhost).
func fixtureB(t *testing.T) *waldursim.Fixture {
	t.Helper()
	path, err := harness.FixturePath()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(fixtureOffering, offeringB, fixtureUser, userB).Replace(string(raw))
	fx, err := waldursim.ParseFixture([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	fx.Orders = nil
	return fx
}

// cleanups is how many cleanup passes of s looked at the groups.
func cleanups(t *testing.T, s *harness.Site) int {
	t.Helper()
	v := s.Metric(cleanupsDone)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s = %q", cleanupsDone, v)
	}
	return int(n)
}

// waitCleanups waits until every site ran n more cleanup passes.
func waitCleanups(t *testing.T, n int, sites ...*harness.Site) {
	t.Helper()
	var from []int
	for _, s := range sites {
		from = append(from, cleanups(t, s))
	}
	harness.Eventually(t, time.Duration(n+3)*15*time.Second, fmt.Sprintf("%d more cleanup passes of every deployment", n), func() bool {
		for i, s := range sites {
			if cleanups(t, s) < from[i]+n {
				return false
			}
		}
		return true
	})
}

func members(kc *keycloaksim.Server, path string) ([]string, bool) {
	g, ok := kc.GroupByPath("waldur", path)
	if !ok {
		return nil, false
	}
	m := kc.MemberNames("waldur", g.ID)
	slices.Sort(m)
	return m, true
}

func TestTwoDeploymentsOnOneRealmKeepEachOthersGroups(t *testing.T) {
	a := harness.NewSite(t, harness.WithCluster(kube.Shared(t)), harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...), periods)
	kc := a.Keycloak
	b := harness.NewSite(t, harness.WithCluster(kube.Shared(t)), harness.WithFixture(fixtureB(t)), periods,
		harness.WithOffering(map[string]any{"membership_sync_backend": "k8s-ut-namespace"}),
		harness.WithSettings(map[string]any{"namespace_prefix": "b-", "keycloak_enabled": true, "keycloak_use_user_id": false, "keycloak": map[string]any{
			"keycloak_url": kc.URL() + "/", "keycloak_realm": "waldur", "keycloak_user_realm": "master",
			"keycloak_username": "admin", "keycloak_password": kcAdminPassword}}))

	// Each deployment makes its resource's groups.
	orderA, _ := a.Create("team-a", map[string]int{"cpu": 2}, harness.Member("alice01", "PROJECT.ADMIN"), harness.Member("bob01", "PROJECT.MEMBER"))
	orderB, _ := b.Create("team-b", map[string]int{"cpu": 2}, harness.Member("carol01", "PROJECT.ADMIN"))
	for _, w := range []struct {
		s     *harness.Site
		order string
	}{{a, orderA}, {b, orderB}} {
		if o := w.s.WaitOrder(w.order, "done", "erred"); o.State != "done" {
			t.Fatalf("order %s: %s (%s)", w.order, o.State, o.ErrorMessage)
		}
	}
	want := map[string][]string{
		"/ns_team-a_admin": {"alice01"}, "/ns_team-a_readwrite": {"bob01"}, "/ns_team-a_readonly": nil,
		"/ns_team-b_admin": {"carol01"}, "/ns_team-b_readwrite": nil, "/ns_team-b_readonly": nil,
	}
	for path := range want {
		wantOwner := a.OfferingHex
		if strings.Contains(path, "team-b") {
			wantOwner = offeringB
		}
		g, ok := kc.GroupByPath("waldur", path)
		if !ok {
			t.Fatalf("group %s missing after the creates", path)
		}
		if got := g.Attributes[keycloak.OfferingAttribute]; !slices.Equal(got, []string{wantOwner}) {
			t.Errorf("%s carries offering %v, want [%s]", path, got, wantOwner)
		}
	}

	// Leftovers: one of A's offering whose resource is gone (A removes
	// it), one of an offering no deployment serves any more (nobody does).
	attrs := func(offering string) map[string][]string {
		return map[string][]string{"managed_by": {keycloak.ManagedBy}, keycloak.OfferingAttribute: {offering}}
	}
	for name, offering := range map[string]string{"ns_gone-a_admin": a.OfferingHex, "ns_gone-elsewhere_admin": offeringGone} {
		if _, err := kc.AddGroup("waldur", "", keycloaksim.Group{Name: name, Attributes: attrs(offering)}); err != nil {
			t.Fatal(err)
		}
	}

	check := func(when string) {
		t.Helper()
		for path, wantMembers := range want {
			got, ok := members(kc, path)
			if !ok || !slices.Equal(got, wantMembers) {
				t.Errorf("%s: %s has %v (exists %v), want %v", when, path, got, ok, wantMembers)
			}
		}
		if _, ok := kc.GroupByPath("waldur", "/ns_gone-elsewhere_admin"); !ok {
			t.Errorf("%s: a group of an offering no deployment serves was deleted", when)
		}
	}
	waitCleanups(t, 3, a, b)
	check("after three cleanup periods")
	if _, ok := kc.GroupByPath("waldur", "/ns_gone-a_admin"); ok {
		t.Errorf("A's leftover group outlived three of A's cleanup passes")
	}

	// A group deleted by hand comes back with its members at the next
	// membership period, and stays through the cleanups that follow.
	g, _ := kc.GroupByPath("waldur", "/ns_team-b_admin")
	admin, err := keycloak.New(keycloak.Config{URL: kc.URL() + "/", Realm: "waldur", UserRealm: "master", ClientID: "admin-cli",
		Username: "admin", Password: config.Secret(kcAdminPassword), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteGroup(ctx(t), g.ID); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, "ns_team-b_admin made again with carol01", func() bool {
		got, ok := members(kc, "/ns_team-b_admin")
		return ok && slices.Equal(got, []string{"carol01"})
	})
	waitCleanups(t, 2, a, b)
	check("after two more cleanup periods")
}
