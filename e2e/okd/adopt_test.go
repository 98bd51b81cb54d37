package okd_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// After the switch from the Python agent, update, pause and terminate
// work on the OpenShift project it requested for a resource with the
// token sitebus now uses (sitebus adopts it, marking it); a project
// another user requested stays untouched and its resource's orders err.
// pythonAgentsProjects is a site (not started) as the Python agent leaves
// it: two resources of the offering, named ourSlug and theirSlug, and
// their projects as OpenShift keeps them after its ProjectRequests (the
// template's annotations and the requester: the configured token's user
// for ours, alice for theirs; the request's own annotations dropped; no
// quota, since the plugin's create sets none), with the backend_ids it
// reported to Waldur.
func pythonAgentsProjects(t *testing.T, ours, theirs, ourSlug, theirSlug string) (s *site, ourNS, theirNS string) {
	t.Helper()
	fx := harness.Fixture(t)
	fx.Orders = nil
	for _, r := range []struct{ uuid, slug string }{{ours, ourSlug}, {theirs, theirSlug}} {
		fx.Resources = append(fx.Resources, waldursim.Resource{UUID: r.uuid, Name: r.slug, Slug: r.slug, State: "OK",
			Offering: fx.Offerings[0].UUID, Project: projectUUID, Limits: map[string]int{"cpu": 1, "ram": 1, "storage": 1}})
	}
	s = &site{t: t, Site: harness.NewSite(t, harness.WithCluster(kube.Shared(t)), harness.WithOKD(), harness.WithFixture(fx),
		harness.WithSettings(map[string]any{"default_role": "view"}), harness.WithoutStart())}
	ourNS, theirNS = s.Prefix+"alloc-"+ourSlug, s.Prefix+"alloc-"+theirSlug
	if err := s.OKD.SeedProject(ctx(t), okdsim.Project{Name: ourNS, DisplayName: ourSlug, Description: ourSlug, Requester: okdsim.DefaultUser}); err != nil {
		t.Fatal(err)
	}
	if err := s.OKD.SeedProject(ctx(t), okdsim.Project{Name: theirNS, DisplayName: theirSlug, Description: theirSlug, Requester: "alice"}); err != nil {
		t.Fatal(err)
	}
	wc, err := waldur.New(waldur.Config{APIURL: s.Waldur.URL() + "/api/", Token: s.Token})
	if err != nil {
		t.Fatal(err)
	}
	for uuid, ns := range map[string]string{ours: ourNS, theirs: theirNS} {
		if err := wc.SetResourceBackendID(ctx(t), uuid, ns); err != nil {
			t.Fatal(err)
		}
	}
	return s, ourNS, theirNS
}

func TestPythonAgentsProjectIsAdopted(t *testing.T) {
	const ours, theirs = "a0000000000040008000000000000b01", "a0000000000040008000000000000b02"
	s, ourNS, theirNS := pythonAgentsProjects(t, ours, theirs, "py-web", "py-other")
	before, err := s.Cluster.Dynamic().Resource(namespaceGVR).Get(ctx(t), theirNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()

	up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: ours, Limits: map[string]int{"cpu": 3, "ram": 6, "storage": 10}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("update of the Python agent's project: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(30))
	}
	p, found, err := s.OKD.Project(ctx(t), ourNS)
	if err != nil || !found {
		t.Fatalf("project %s: %v, %v", ourNS, found, err)
	}
	if p.Labels[okd.LabelManagedBy] != okd.ManagedByValue || p.Annotations[okd.AnnotationResourceUUID] != ours {
		t.Errorf("adopted project: labels %v, annotations %v; want sitebus's mark for %s", p.Labels, p.Annotations, ours)
	}
	updated := map[string]string{"requests.cpu": "3", "limits.cpu": "6", "requests.memory": "6Gi", "limits.memory": "12Gi", "requests.storage": "10Gi"}
	if got := s.hardQuota(ourNS); !maps.Equal(got, updated) {
		t.Errorf("quota after update = %v, want %v", got, updated)
	}

	if _, err := s.Admin.SetFlags(ctx(t), ours, waldursim.FlagsRequest{Paused: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, "the adopted project's quota paused", func() bool { return allZero(s.hardQuota(ourNS)) })

	s.terminateDone(t, ours, ourNS)

	bad, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: theirs, Limits: map[string]int{"cpu": 64}})
	o := s.WaitOrder(bad, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") || !strings.Contains(o.ErrorMessage, "requester is alice") {
		t.Errorf("update of another user's project: %s (%q), want erred naming the requester", o.State, o.ErrorMessage)
	}
	after, err := s.Cluster.Dynamic().Resource(namespaceGVR).Get(ctx(t), theirNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("another user's project changed:\nbefore %v\nafter  %v", before.Object, after.Object)
	}
	if q := s.hardQuota(theirNS); q != nil {
		t.Errorf("another user's project got a quota: %v", q)
	}
}
