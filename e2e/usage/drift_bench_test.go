package usage_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/app"
	"github.com/sitebus/sitebus/services/drift"
	"github.com/sitebus/sitebus/services/membership"
)

// BenchmarkDriftPass1000Resources measures one drift pass (the one
// `sitebus drift` and the periodic pass run, built by app.DriftOffering
// from a configuration file) over 1,000 ManagedNamespaces on a real
// kube-apiserver, the Waldur simulator and the Keycloak simulator: each
// resource has a team of two whose access groups exist with the right
// members, so the pass finds nothing and every iteration is the steady
// pass a site runs every drift_period. The calls it makes per pass are
// reported per peer (kube-calls/op, waldur-calls/op, keycloak-calls/op).
//
//	go test -run '^$' -bench DriftPass1000 -benchtime 3x ./usage/
func BenchmarkDriftPass1000Resources(b *testing.B) {
	const n = 1000
	c := cluster(b)
	dyn := c.Dynamic()
	crNS := fmt.Sprintf("drift-crs-%d", time.Now().UnixNano()%1e6)
	createNamespace(b, dyn, crNS)

	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	kc := keycloaksim.NewTestServer(b, keycloaksim.Config{Logger: discard})
	// Ten people share the 1,000 teams, as a site's staff do.
	var people []waldursim.TeamMember
	for i := range 10 {
		name := fmt.Sprintf("user%02d", i)
		if _, err := kc.AddUser("waldur", keycloaksim.User{Username: name, Email: name + "@example.org"}); err != nil {
			b.Fatal(err)
		}
		people = append(people, waldursim.TeamMember{UUID: fmt.Sprintf("b%031d", i), Username: name, FullName: name,
			Email: name + "@example.org", OfferingUserUsername: name, OfferingUserState: "OK"})
	}
	resources := make([]waldursim.Resource, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		id := fmt.Sprintf("%s-r%04d", crNS, i)
		r := resource(i+1, id)
		r.Limits = map[string]int{"cpu": 8, "ram": 16, "storage": 0}
		admin, member := people[i%10], people[(i+1)%10]
		admin.Role, member.Role = "PROJECT.ADMIN", "PROJECT.MEMBER"
		r.Team = []waldursim.TeamMember{admin, member}
		resources[i] = r
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			createCR(b, dyn, crNS, id, id)
		})
	}
	wg.Wait()

	fx := fixture(b, resources)
	sim := waldursim.NewTestServer(b, waldursim.Config{Fixture: fx, Logger: discard})
	cfg := harness.SiteConfig{WaldurURL: sim.URL(), Token: fx.Users[0].Token, OfferingUUID: offeringUUID,
		WebSTOMPAddr: "127.0.0.1:1", WebSTOMPPath: "/ws", MembershipBackend: "k8s-ut-namespace",
		Kubeconfig: c.KubeconfigPath(), CRNamespace: crNS, KeycloakURL: kc.URL()}
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg.YAML()), 0o600); err != nil {
		b.Fatal(err)
	}
	plan, err := app.LoadPlan(path)
	if err != nil {
		b.Fatal(err)
	}
	op := &plan.Offerings[0]
	calls := map[string]*countingTransport{"kube": {}, "waldur": {}, "keycloak": {}}
	counted := func(peer string) func(http.RoundTripper) http.RoundTripper {
		return func(rt http.RoundTripper) http.RoundTripper { calls[peer].rt = rt; return calls[peer] }
	}
	op.Waldur.Logger, op.Waldur.WrapTransport = discard, counted("waldur")
	op.Keycloak.WrapTransport = counted("keycloak")
	w, err := waldur.New(op.Waldur)
	if err != nil {
		b.Fatal(err)
	}
	be, err := op.NewBackend(op.ObjectBackend(), app.BackendOptions{Logger: discard, Resources: app.WaldurResources(w, op.Config.WaldurOfferingUUID),
		WrapTransport: func(rt http.RoundTripper, _ string) http.RoundTripper { return counted("kube")(rt) }})
	if err != nil {
		b.Fatal(err)
	}
	seedGroups(b, kc, op, w, be)

	o, err := app.DriftOffering(op, w, be, be, nil, discard, nil)
	if err != nil {
		b.Fatal(err)
	}
	svc := drift.New(drift.Config{Offerings: []drift.Offering{o}, Logger: discard})
	pass := func() (time.Duration, map[string]int64) {
		before := map[string]int64{}
		for p, ct := range calls {
			before[p] = ct.n.Load()
		}
		start := time.Now()
		reports := svc.Pass(context.Background(), false)
		took := time.Since(start)
		for _, r := range reports {
			if len(r.Errors) > 0 || len(r.Findings) > 0 {
				b.Fatalf("the steady pass found drift: %d finding(s), errors %v; first: %+v", len(r.Findings), r.Errors, first(r.Findings))
			}
		}
		out := map[string]int64{}
		for p, ct := range calls {
			out[p] = ct.n.Load() - before[p]
		}
		return took, out
	}
	took, got := pass()
	for p, v := range got {
		if v == 0 {
			// Each check reads its peer: none read means a check is missing.
			b.Fatalf("the pass made no %s call (calls %v)", p, got)
		}
	}
	b.Logf("first pass over %d resources: %s, calls %v", n, took.Round(time.Millisecond), got)

	b.ResetTimer()
	total := map[string]int64{}
	for b.Loop() {
		_, got := pass()
		for p, v := range got {
			total[p] += v
		}
	}
	for _, p := range []string{"kube", "waldur", "keycloak"} {
		b.ReportMetric(float64(total[p])/float64(b.N), p+"-calls/op")
	}
}

// seedGroups makes every access group membership's plan wants, with its
// members and sitebus's mark, as the membership pass leaves them.
func seedGroups(b *testing.B, kc *keycloaksim.Server, op *app.OfferingPlan, w *waldur.Client, be backend.Backend) {
	b.Helper()
	svc, err := membership.New(nil, membership.Config{Offerings: []membership.Offering{app.MembershipOffering(op.Config, w, be)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	plan, err := svc.Plan(context.Background(), op.Config.OfferingUUIDHex())
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range plan {
		if _, err := kc.AddGroup("waldur", "", keycloaksim.Group{Name: g.Group.Name, Members: g.Members,
			Attributes: map[string][]string{"managed_by": {"sitebus"}}}); err != nil {
			b.Fatalf("group %s: %v", g.Group.Name, err)
		}
	}
	b.Logf("seeded %d access groups", len(plan))
}

func first(fs []contract.DriftFinding) any {
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}
