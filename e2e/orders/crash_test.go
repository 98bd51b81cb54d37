package orders_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// crashOrder is one order of the crash test and what it must leave behind.
type crashOrder struct {
	uuid, typ, slug, resource string
}

// TestBurstWithKillsSettlesEveryOrderOnce sends bursts of create, update
// and terminate orders across many resources, every order's event twice at
// once (as a STOMP frame and the periodic order pass both deliver it), and
// kill -9s `sitebus run` at seeded random moments while they are handled.
// Afterwards, from the simulators' call logs: every order is done, its
// terminal transition was sent exactly once, every namespace exists once
// or not at all as its orders say, and (with Keycloak) every group was
// created once and holds its member once. SITEBUS_CRASH_SEED replays a run.
func TestBurstWithKillsSettlesEveryOrderOnce(t *testing.T) {
	for name, keycloak := range map[string]bool{
		"orders handled directly":           false,
		"orders run as sagas with Keycloak": true,
	} {
		t.Run(name, func(t *testing.T) { crashTest(t, keycloak) })
	}
}

func crashTest(t *testing.T, keycloak bool) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SITEBUS_CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SITEBUS_CRASH_SEED=%q: %v", v, err)
		}
	}
	t.Logf("crash seed %d (replay with SITEBUS_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	var opts []harness.SiteOption
	if keycloak {
		opts = append(opts, withKeycloak)
	}
	s := newSite(t, opts...)
	kc := s.Keycloak
	alice := member("alice01", "PROJECT.ADMIN")

	// newResource makes a resource with a team, its Create order not yet
	// delivered.
	newResource := func(i int) crashOrder {
		slug := fmt.Sprintf("crash-%02d", i)
		return s.undeliveredCreate(slug, alice)
	}
	followUp := func(typ string, of crashOrder, limits map[string]int) crashOrder {
		res, err := s.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{Type: typ, ResourceUUID: of.resource, Limits: limits, Silent: true})
		if err != nil {
			t.Fatal(err)
		}
		return crashOrder{uuid: res.Order.UUID, typ: typ, slug: of.slug, resource: of.resource}
	}
	// burst delivers the orders' events at once, then kills and restarts
	// sitebus `kills` times at random moments while they are handled.
	var lastRestart time.Time
	totalKills := 0
	inFlightAtLastKill := 0
	burst := func(orders []crashOrder, kills int, maxDelay time.Duration) {
		var wg sync.WaitGroup
		for _, o := range orders {
			wg.Go(func() { s.deliverOrder(o.uuid) })
			wg.Go(func() { s.deliverOrderAs(o.uuid, "again-") })
		}
		for k := range kills {
			// The moments are the point of the test, not a wait for
			// something: a burst takes a few hundred milliseconds of
			// handling, so kills this soon after a (re)start land while
			// orders are in the handlers.
			delay := 10*time.Millisecond + time.Duration(rng.Int64N(int64(maxDelay)))
			time.Sleep(delay)
			inFlight := s.notSettled(orders)
			s.Sitebus.Kill()
			totalKills++
			inFlightAtLastKill = inFlight
			t.Logf("kill %d of this burst after %s: %d of %d orders not settled", k+1, delay, inFlight, len(orders))
			lastRestart = time.Now()
			s.Start()
		}
		wg.Wait()
	}

	// Burst 1: creates.
	var creates []crashOrder
	for i := range 24 {
		creates = append(creates, newResource(i))
	}
	burst(creates, 2, 140*time.Millisecond)
	s.waitAll(creates)

	// Burst 2: 12 updates, 12 terminates and 36 new creates.
	var second []crashOrder
	for i, c := range creates {
		if i%2 == 0 {
			second = append(second, followUp("Update", c, map[string]int{"cpu": 4, "ram": 8}))
		} else {
			second = append(second, followUp("Terminate", c, nil))
		}
	}
	for i := range 36 {
		second = append(second, newResource(24+i))
	}
	rng.Shuffle(len(second), func(i, j int) { second[i], second[j] = second[j], second[i] })
	burst(second, 3, 140*time.Millisecond)
	s.waitAll(second)

	// Burst 3: 60 creates killed once right after delivery, so that all of
	// them are in flight when the last restart begins.
	var third []crashOrder
	for i := range 60 {
		third = append(third, newResource(60+i))
	}
	burst(third, 1, 30*time.Millisecond)
	s.waitAll(third)

	all := append(append(slices.Clone(creates), second...), third...)
	calls, err := s.Admin.Calls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	transitions := map[string][]string{}
	var lastDone time.Time
	for _, c := range calls {
		parts := strings.Split(strings.Trim(c.Path, "/"), "/") // api marketplace-orders <uuid> <action>
		if len(parts) != 4 || parts[1] != "marketplace-orders" || (parts[3] != "set_state_done" && parts[3] != "set_state_erred") {
			continue
		}
		id := strings.ReplaceAll(parts[2], "-", "")
		transitions[id] = append(transitions[id], fmt.Sprintf("%s→%d", parts[3], c.Status))
		if c.Time.After(lastDone) {
			lastDone = c.Time
		}
	}
	duplicates, lost := 0, 0
	for _, o := range all {
		got := transitions[strings.ReplaceAll(o.uuid, "-", "")]
		switch {
		case len(got) == 0:
			lost++
			t.Errorf("%s order %s (%s): no terminal transition sent", o.typ, o.uuid, o.slug)
		case len(got) > 1:
			duplicates += len(got) - 1
			t.Errorf("%s order %s (%s): terminal transitions %v, want exactly one", o.typ, o.uuid, o.slug, got)
		}
	}

	// Namespaces: created and not terminated → exactly one, with the
	// updated quota where an update ran; terminated → gone.
	want := map[string]map[string]string{}
	for _, o := range all {
		switch o.typ {
		case "Create":
			if _, ok := want[o.slug]; !ok {
				want[o.slug] = map[string]string{"cpu": "1", "memory": "2Gi"}
			}
		case "Update":
			want[o.slug] = map[string]string{"cpu": "4", "memory": "8Gi"}
		}
	}
	for _, o := range all {
		if o.typ == "Terminate" {
			delete(want, o.slug)
		}
	}
	if n := s.crCount(); n != len(want) {
		t.Errorf("%d ManagedNamespaces, want %d", n, len(want))
	}
	for slug, q := range want {
		cr, err := s.cr("waldur-" + slug)
		if err != nil {
			t.Errorf("ManagedNamespace waldur-%s: %v", slug, err)
			continue
		}
		if got := quota(cr); !maps.Equal(got, q) {
			t.Errorf("ManagedNamespace waldur-%s quota %v, want %v", slug, got, q)
		}
	}

	if keycloak {
		checkCrashGroups(t, kc, all, want)
	}

	recovery := lastDone.Sub(lastRestart)
	summary := fmt.Sprintf("crash test (%s): seed %d, %d orders, %d kills, duplicates %d, lost %d; %d orders in flight at the last kill, last restart → last order settled %s",
		t.Name(), seed, len(all), totalKills, duplicates, lost, inFlightAtLastKill, recovery.Round(time.Millisecond))
	t.Log(summary)
	fmt.Println(summary)
}

// checkCrashGroups: three groups per live resource, each created exactly once
// over the whole run (a terminated resource's groups once, then gone),
// alice in each admin group once.
func checkCrashGroups(t *testing.T, kc *keycloaksim.Server, all []crashOrder, want map[string]map[string]string) {
	t.Helper()
	// Keycloak: three groups per live resource, each created exactly once
	// over the whole run (a terminated resource's groups once, then gone),
	// alice in each admin group once.
	groups := kc.Groups("waldur")
	seen := map[string]int{}
	for _, g := range groups {
		seen[g.Name]++
	}
	for name, n := range seen {
		if n > 1 {
			t.Errorf("Keycloak group %s exists %d times", name, n)
		}
	}
	if len(groups) != 3*len(want) {
		t.Errorf("%d Keycloak groups, want %d (three per live resource)", len(groups), 3*len(want))
	}
	created := 0
	for _, o := range all {
		if o.typ == "Create" {
			created++
		}
	}
	if n := kc.CallCount("POST", "/admin/realms/waldur/groups", 201); n != 3*created {
		t.Errorf("%d Keycloak groups created, want %d (three per Create order, each once)", n, 3*created)
	}
	for slug := range want {
		harness.Eventually(t, 30*time.Second, "alice in ns_"+slug+"_admin", func() bool {
			return slices.Equal(members(kc, "ns_"+slug+"_admin"), []string{"alice01"})
		})
	}
}

// notSettled counts orders that Waldur does not show done or erred yet.
func (s *site) notSettled(orders []crashOrder) int {
	n := 0
	for _, o := range orders {
		got, err := s.Admin.Order(context.Background(), o.uuid)
		if err != nil || (got.State != "done" && got.State != "erred") {
			n++
		}
	}
	return n
}

// waitAll waits for every order to be settled and requires it done.
func (s *site) waitAll(orders []crashOrder) {
	s.t.Helper()
	for _, o := range orders {
		if got := s.WaitOrder(o.uuid, "done", "erred"); got.State != "done" {
			s.t.Errorf("%s order %s (%s) %s: %s", o.typ, o.uuid, o.slug, got.State, got.ErrorMessage)
		}
	}
}
