package distributed_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/bus"
)

// convergeTimeout bounds the wait, after the last order settled, for role
// and flag events still in flight (or, after faults, for the periodic
// passes) to bring the platform to Waldur's state.
const convergeTimeout = 3 * time.Minute

// counts are the figures a run ends with.
type counts struct {
	orders, duplicates, lost, deadLetters int
}

// verify checks what a run left behind, against Waldur's call log, the API
// server, Keycloak and the DLQ. malformed are the message ids of frames
// meant to be dead-lettered (and nothing else may be).
func (s *site) verify(t *testing.T, d *driver, w *workload, malformed []string) counts {
	t.Helper()
	var c counts
	d.mu.Lock()
	orders, outcomes, errs := slices.Clone(d.orders), slices.Clone(d.outcomes), slices.Clone(d.errs)
	d.mu.Unlock()
	for _, err := range errs {
		t.Error(err)
	}
	c.orders = len(orders)
	if len(orders) != w.orders {
		t.Errorf("%d orders made, want %d (a resource's plan stopped early)", len(orders), w.orders)
	}
	c.duplicates, c.lost = s.checkTransitions(t, orders)
	s.checkNamespaces(t, outcomes)
	if s.Keycloak != nil {
		s.checkGroups(t, outcomes)
	}
	c.deadLetters = s.checkDeadLetters(t, malformed)
	return c
}

// checkTransitions: every order got exactly one terminal call from sitebus
// (set_state_done, or set_state_erred for the one meant to fail).
func (s *site) checkTransitions(t *testing.T, orders []*orderRecord) (duplicates, lost int) {
	t.Helper()
	transitions := harness.TerminalTransitions(s.Waldur.Calls())
	for _, o := range orders {
		got := transitions[strings.ReplaceAll(o.uuid, "-", "")]
		want := "set_state_done→200"
		if o.wantState == "erred" {
			want = "set_state_erred→200"
		}
		switch {
		case len(got) == 0 || o.state == "":
			lost++
			t.Errorf("%s order %s of %s: not settled (state %q, terminal calls %v)", o.typ, o.uuid, o.res.name, o.state, got)
		case len(got) > 1:
			duplicates += len(got) - 1
			t.Errorf("%s order %s of %s: terminal calls %v, want exactly one %s", o.typ, o.uuid, o.res.name, got, want)
		case got[0] != want:
			t.Errorf("%s order %s of %s: terminal call %s, want %s", o.typ, o.uuid, o.res.name, got[0], want)
		}
	}
	return duplicates, lost
}

// checkNamespaces: a ManagedNamespace for every live resource, with the
// quota its limits and flags make, and none for a terminated, refused or
// unknown one.
func (s *site) checkNamespaces(t *testing.T, outcomes []*outcome) {
	t.Helper()
	prefix := managedns.DefaultSettings().NamespacePrefix
	want := map[string]map[string]string{}
	skip := map[string]bool{} // resources whose plan stopped: state unknown
	for _, o := range outcomes {
		name := prefix + o.plan.slug
		switch {
		case !o.settled && !o.plan.invalid:
			skip[name] = true
		case o.settled && !o.terminated && !o.plan.invalid:
			want[name] = wantQuota(o.limits, o.paused, o.downscaled)
		}
	}
	var diff []string
	deadline := time.Now().Add(convergeTimeout)
	for {
		got, err := s.crs(harness.Context(t, time.Minute))
		if err == nil {
			maps.DeleteFunc(got, func(name string, _ map[string]string) bool { return skip[name] })
			diff = diffMaps(want, got, func(a, b map[string]string) bool { return maps.Equal(a, b) })
			if len(diff) == 0 {
				return
			}
		} else {
			diff = []string{err.Error()}
		}
		if time.Now().After(deadline) {
			t.Errorf("ManagedNamespaces differ from Waldur's resources after %s: %s", convergeTimeout, describe(diff, 12))
			logPlans(t, outcomes, diff)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkGroups: three groups for every live resource with its team in them
// by role, none left of a terminated or refused resource, and each group
// created exactly once over the run.
func (s *site) checkGroups(t *testing.T, outcomes []*outcome) {
	t.Helper()
	want := wantGroups(outcomes)
	for _, m := range want {
		slices.Sort(m)
	}
	skip := map[string]bool{}
	created := 0
	for _, o := range outcomes {
		if !o.settled && !o.plan.invalid {
			for _, suffix := range []string{"admin", "readwrite", "readonly"} {
				skip["ns_"+o.plan.slug+"_"+suffix] = true
			}
		}
		if o.created {
			created++
		}
	}
	var diff []string
	deadline := time.Now().Add(convergeTimeout)
	for {
		got := map[string][]string{}
		for _, g := range s.Keycloak.Groups("waldur") {
			if skip[g.Name] {
				continue
			}
			if _, dup := got[g.Name]; dup {
				got[g.Name+" (again)"] = nil
			}
			m := s.Keycloak.MemberNames("waldur", g.ID)
			slices.Sort(m)
			if m == nil {
				m = []string{}
			}
			got[g.Name] = m
		}
		diff = diffMaps(want, got, slices.Equal[[]string])
		if len(diff) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("Keycloak groups differ from Waldur's teams after %s: %s", convergeTimeout, describe(diff, 12))
			logPlans(t, outcomes, diff)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := s.Keycloak.CallCount("POST", "/admin/realms/waldur/groups", 201); n != 3*created {
		t.Errorf("%d Keycloak groups created, want %d (three per resource created, each once)", n, 3*created)
	}
}

// checkDeadLetters: the DLQ holds the malformed frames, each once, and
// nothing else. It returns the number of dead letters.
func (s *site) checkDeadLetters(t *testing.T, malformed []string) int {
	t.Helper()
	reader := harness.NewReader(t, s.nats.URL())
	// The frames' own signal: the orders settling says nothing about when
	// the bridge got to a frame published beside them, so wait until each
	// is parked (or the deadline says it never will be), then check.
	var dls []bus.DeadLetter
	harness.Eventually(t, time.Minute, "the malformed frames dead-lettered", func() bool {
		dls = reader.DeadLetters(t)
		for _, m := range malformed {
			found := false
			for _, dl := range dls {
				found = found || strings.Contains(string(dl.Data), m)
			}
			if !found {
				return false
			}
		}
		return true
	})
	seen := map[string]int{}
	for _, dl := range dls {
		id := ""
		for _, m := range malformed {
			if strings.Contains(string(dl.Data), m) {
				id = m
			}
		}
		if id == "" || dl.Source != "stomp-bridge" {
			t.Errorf("unexpected dead letter #%d from %s on %q: %s", dl.Seq, dl.Source, dl.Subject, dl.Reason)
			continue
		}
		seen[id]++
	}
	for _, m := range malformed {
		if seen[m] != 1 {
			t.Errorf("malformed frame %s dead-lettered %d times, want once", m, seen[m])
		}
	}
	return len(dls)
}

// logPlans logs the plans of the resources (at most 12) a diff names.
func logPlans(t *testing.T, outcomes []*outcome, diff []string) {
	t.Helper()
	n := 0
	for _, o := range outcomes {
		for _, d := range diff {
			if strings.Contains(d, o.plan.slug+" ") || strings.Contains(d, o.plan.slug+"_") {
				t.Logf("resource %s: %s", o.uuid, o.plan)
				n++
				break
			}
		}
		if n == 12 {
			return
		}
	}
}

// diffMaps lists what got lacks, has in excess, or has different from want.
func diffMaps[V any](want, got map[string]V, equal func(a, b V) bool) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s", k))
		case !equal(w, g):
			out = append(out, fmt.Sprintf("%s is %v, want %v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("orphaned %s (%v)", k, g))
		}
	}
	slices.Sort(out)
	return out
}

// summary is the line a run ends with.
func (c counts) summary(what string, seed uint64, extra string) string {
	return fmt.Sprintf("%s: seed %d, orders %d, duplicates %d, lost %d, DLQ entries %d%s", what, seed, c.orders, c.duplicates, c.lost, c.deadLetters, extra)
}

// exitsNote names the processes that exited on their own (and were
// started again), for the summary: a crash is a finding even when the
// restart hid it from the checks.
func (s *site) exitsNote() string {
	exits := s.Distributed.Exits()
	if len(exits) == 0 {
		return ", no process exited on its own"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(exits)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, exits[name]))
	}
	return ", processes that exited on their own and were restarted: " + strings.Join(parts, ", ")
}

// deliverMalformed publishes an order frame without an order_uuid: the
// bridge must dead-letter it (and only it).
func (s *site) deliverMalformed(ctx context.Context, id string) error {
	body := fmt.Sprintf(`{"order_state": "pending-provider", "offering_uuid": "%s", "note": "%s"}`, s.OfferingHex, id)
	_, err := s.Admin.PublishRaw(ctx, waldursim.RawEventRequest{OfferingUUID: s.OfferingHex, ObjectType: "order", Body: body, MessageID: id})
	return err
}
