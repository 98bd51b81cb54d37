package rancher_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

// From e2e/waldursim/testdata/fixture.yaml: the offering and the project
// every order goes to (customer acme, project genomics).
const (
	offeringHex = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	projectUUID = "5e4d3c2b-1a09-48f7-a6e5-d4c3b2a19087"
)

// Names Python gives the cluster's and the project's Keycloak groups for
// the simulator's cluster c-m-sim00001 and the fixture's project.
const (
	parentGroup = "c_cmsim000"
	childGroup  = "project_genomics_workloads-manage"
	childPath   = "/" + parentGroup + "/" + childGroup
)

// kcAdminPassword is distinctive so that the harness's grep of sitebus's
// logs for configured secrets would find it.
const kcAdminPassword = "kc-admin-r4nch3r-77"

// site is a sitebus process serving a Rancher offering with Keycloak,
// against the Waldur, Rancher and Keycloak simulators, the shared RabbitMQ
// and the shared Kubernetes API server and controller manager (where the
// Rancher simulator makes the namespaces and quotas).
type site struct {
	*harness.Site
	t testing.TB
}

func newSite(t testing.TB) *site { return newSiteWith(t, siteOptions{Keycloak: true}) }

// siteOptions choose how the site is configured.
type siteOptions struct {
	// Keycloak turns keycloak_enabled on: creates run the
	// rancher-project-create saga and teams go into Keycloak groups.
	// Without it, creates take the direct path.
	Keycloak bool
	// DriftPeriod, when set, is sitebus.periods.drift_period (else the
	// default 30m: only the drift command repairs).
	DriftPeriod string
	// MembershipPeriod, when set, is sitebus.periods.membership_sync_period.
	MembershipPeriod string
}

func newSiteWith(t testing.TB, opts siteOptions) *site {
	t.Helper()
	// Only the tests' own resources: the fixture's ns-alpha is a live
	// resource of the same Waldur project, so its team would share the
	// project's child group (it holds the union of the project's teams).
	fx := harness.Fixture(t)
	fx.Orders, fx.Resources = nil, nil
	periods := map[string]any{"keycloak_pending_period": "2s", "saga_lease": "3s"}
	if opts.DriftPeriod != "" {
		periods["drift_period"] = opts.DriftPeriod
	}
	if opts.MembershipPeriod != "" {
		periods["membership_sync_period"] = opts.MembershipPeriod
	}
	return &site{t: t, Site: harness.NewSite(t, harness.WithFixture(fx), harness.WithCluster(kube.Shared(t)), harness.WithRancher(ranchersim.Options{}),
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...), harness.WithGPU(),
		harness.WithSettings(map[string]any{"default_role": "workloads-manage", "namespace_labels": map[string]any{"gpu-pool": "h100-2x"},
			"keycloak_enabled": opts.Keycloak}),
		harness.WithSitebusConfig(map[string]any{"periods": periods}))}
}

func ctx(t testing.TB) context.Context { return harness.Context(t, 2*time.Minute) }

func member(user, role string) waldursim.TeamMember { return harness.Member(user, role) }

// members returns the usernames in the group at path, sorted (nil if
// there is no such group).
func (s *site) members(path string) []string {
	g, ok := s.Keycloak.GroupByPath("waldur", path)
	if !ok {
		return nil
	}
	m := s.Keycloak.MemberNames("waldur", g.ID)
	slices.Sort(m)
	return m
}

func (s *site) waitMembers(path string, want ...string) {
	s.t.Helper()
	slices.Sort(want)
	harness.Eventually(s.t, 60*time.Second, fmt.Sprintf("group %s with %v", path, want), func() bool {
		_, ok := s.Keycloak.GroupByPath("waldur", path)
		return ok && slices.Equal(s.members(path), want)
	})
}

// groupBindings are the project's bindings of the child group.
// terminateDone orders the resource terminated, fails t unless the order
// ends done, and checks that its Rancher project and the project's group
// bindings are gone.
func (s *site) terminateDone(t testing.TB, resUUID, projectID string) {
	t.Helper()
	term, _ := s.Order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID})
	if o := s.WaitOrder(term, "done", "erred"); o.State != "done" {
		t.Fatalf("terminate of project %s: %s (%s)", projectID, o.State, o.ErrorMessage)
	}
	if _, ok := s.Rancher.Project(projectID); ok {
		t.Errorf("project %s is still there", projectID)
	}
	if bs := s.groupBindings(projectID); len(bs) != 0 {
		t.Errorf("bindings left on project %s: %+v", projectID, bs)
	}
}

func (s *site) groupBindings(projectID string) []ranchersim.Binding {
	var out []ranchersim.Binding
	for _, b := range s.Rancher.Bindings(projectID) {
		if b.GroupPrincipalID != "" {
			out = append(out, b)
		}
	}
	return out
}

// waldurCalls counts the Waldur calls whose path ends in action.
func (s *site) waldurCalls(action string) int {
	s.t.Helper()
	calls, err := s.Admin.Calls(ctx(s.t))
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, c := range calls {
		if strings.HasSuffix(strings.TrimRight(c.Path, "/"), "/"+action) {
			n++
		}
	}
	return n
}
