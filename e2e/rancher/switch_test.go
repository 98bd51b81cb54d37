package rancher_test

import (
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// migrate runs `sitebus migrate -c CONFIG args...` as an operator would;
// it returns the output and the exit code.
func (s *site) migrate(args ...string) (string, int) {
	s.t.Helper()
	return s.Command(s.t, "migrate", args...)
}

// reportLines are the lines of migrate's output about one object or group.
var reportLines = regexp.MustCompile(`(?m)^\s+(would adopt \S+|adopted \S+|REFUSES \S+|keycloak: the cleanup would \S+ group \S+)`)

func reportOf(out string) []string {
	var got []string
	for _, m := range reportLines.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	slices.Sort(got) // the order of the lines is not the point
	return got
}

// pythonProject seeds a Rancher project as the Python Rancher plugin
// leaves it: the project with its annotations and description, its
// namespace of the same name in the project, and the quota it imported.
func (s *site) pythonProject(slug, org string) ranchersim.Project {
	s.t.Helper()
	name := s.Prefix + slug
	p, err := s.Rancher.AddProject(ranchersim.Project{Name: name, Description: slug + " (Customer: Acme Research, Project: Genomics)",
		Annotations: map[string]string{"waldur/managed": "true", "waldur/organization": org, "waldur/project_slug": "genomics"}})
	if err != nil {
		s.t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	ns.SetLabels(map[string]string{ranchersim.ProjectIDLabel: strings.TrimPrefix(p.ID, p.ClusterID+":"),
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest", "gpu-pool": "h100-2x"})
	ns.SetAnnotations(map[string]string{ranchersim.ProjectIDAnnotation: p.ID, "waldur/managed": "true"})
	if _, err := s.Cluster.Dynamic().Resource(nsGVR).Create(ctx(s.t), ns, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
	q := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": "custom-resource-quota", "namespace": name},
		"spec":     map[string]any{"hard": map[string]any{"limits.cpu": "2000m", "limits.memory": "4096Mi", "requests.storage": "10240Mi"}}}}
	if _, err := s.Cluster.Dynamic().Resource(quotaGVR).Namespace(name).Create(ctx(s.t), q, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
	return p
}

var quotaGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")

// bindGroup binds a Keycloak group to a project through Rancher's API, as
// the Python plugin does (a project role template binding of the group
// principal).
func (s *site) bindGroup(projectID, group, role string) {
	s.t.Helper()
	s.rancherAPI(http.MethodPost, "/v3/projectroletemplatebindings",
		map[string]string{"projectId": projectID, "roleTemplateId": role, "groupPrincipalId": "keycloakoidc_group://" + group}, http.StatusCreated)
}

// foreignState is what must not change on a foreign project: the project
// as Rancher shows it, its bindings, and its namespace's labels,
// annotations and resourceVersion (which proves no write).
type foreignState struct {
	Project  ranchersim.Project
	Bindings []ranchersim.Binding
	NS       struct {
		Version             string
		Labels, Annotations map[string]string
	}
}

func (s *site) foreignState(p ranchersim.Project) foreignState {
	s.t.Helper()
	var st foreignState
	var ok bool
	if st.Project, ok = s.Rancher.Project(p.ID); !ok {
		s.t.Fatalf("foreign project %s gone", p.ID)
	}
	st.Bindings = s.Rancher.Bindings(p.ID)
	ns, err := s.Cluster.Dynamic().Resource(nsGVR).Get(ctx(s.t), p.Name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	st.NS.Version, st.NS.Labels, st.NS.Annotations = ns.GetResourceVersion(), ns.GetLabels(), ns.GetAnnotations()
	return st
}

// The switch-over of a Rancher offering: the site as the Python Rancher
// plugin leaves it (a project of the customer's, its namespace and quota,
// the Keycloak groups c_<cluster> and project_<slug>_<role> with the
// plugin's managed_by mark bound to it, and a project of another
// organization that a resource's backend_id names); `migrate` lists
// exactly the adoption, the refusal and the groups keycloak-sync's cleanup
// will adopt; --apply adopts; sitebus then updates, pauses, restores,
// changes a role and terminates on the adopted project and groups, while
// the foreign project stays as it was.
func TestRancherSwitchOverFromThePythonAgent(t *testing.T) {
	const ours, theirs = "a0000000000040008000000000000d01", "a0000000000040008000000000000d02"
	fx := harness.Fixture(t)
	fx.Orders, fx.Resources = nil, nil
	alice, bob := member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER")
	alice.UUID, bob.UUID = "c0000000000040008000000000000001", "c0000000000040008000000000000002"
	team := []waldursim.TeamMember{alice, bob}
	fx.Resources = append(fx.Resources,
		waldursim.Resource{UUID: ours, Name: "sw-lab", Slug: "sw-lab", State: "OK", Offering: fx.Offerings[0].UUID, Project: projectUUID,
			Limits: map[string]int{"cpu": 2, "ram": 4, "storage": 10}, Team: team},
		waldursim.Resource{UUID: theirs, Name: "sw-other", Slug: "sw-other", State: "OK", Offering: fx.Offerings[0].UUID, Project: projectUUID,
			Limits: map[string]int{"cpu": 1, "ram": 1, "storage": 1}})
	s := &site{t: t, Site: harness.NewSite(t, harness.WithFixture(fx), harness.WithCluster(kube.Shared(t)), harness.WithRancher(ranchersim.Options{}),
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...), harness.WithGPU(),
		harness.WithSettings(map[string]any{"default_role": "workloads-manage", "namespace_labels": map[string]any{"gpu-pool": "h100-2x"}, "keycloak_enabled": true}),
		harness.WithSitebusConfig(map[string]any{"periods": map[string]any{"keycloak_pending_period": "2s", "saga_lease": "3s", "keycloak_cleanup_period": "10s"}}),
		harness.WithoutStart())}

	mine := s.pythonProject("sw-lab", "acme")
	other := s.pythonProject("sw-other", "other-org")
	// The plugin's groups: the cluster's parent and the project's child,
	// marked managed_by waldur-site-agent, with the team in the child.
	_, err := s.Keycloak.AddGroup("waldur", "", keycloaksim.Group{Name: parentGroup,
		Attributes: map[string][]string{"managed_by": {"waldur-site-agent"}, "description": {"Cluster access group for c-m-sim00001"}},
		Children: []keycloaksim.Group{{Name: childGroup, Members: []string{"alice01", "bob01"},
			Attributes: map[string][]string{"managed_by": {"waldur-site-agent"}, "description": {"Project genomics members with role workloads-manage"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	s.bindGroup(mine.ID, childGroup, "workloads-manage")
	wc, err := waldur.New(waldur.Config{APIURL: s.Waldur.URL() + "/api/", Token: s.Token})
	if err != nil {
		t.Fatal(err)
	}
	for uuid, id := range map[string]string{ours: mine.ID, theirs: other.ID} {
		if err := wc.SetResourceBackendID(ctx(t), uuid, id); err != nil {
			t.Fatal(err)
		}
	}
	before := s.foreignState(other)

	out, code := s.migrate()
	if code != 1 {
		t.Fatalf("migrate exit %d, want 1 (a refusal needs a person):\n%s", code, out)
	}
	wantGroups := []string{"keycloak: the cleanup would adopt group /" + parentGroup, "keycloak: the cleanup would adopt group " + childPath}
	want := slices.Sorted(slices.Values(append([]string{"REFUSES " + other.Name, "would adopt " + mine.Name}, wantGroups...)))
	if got := reportOf(out); !slices.Equal(got, want) {
		t.Fatalf("migrate lists %v, want exactly %v:\n%s", got, want, out)
	}
	for _, says := range []string{`its waldur/organization is "other-org", but the resource's customer is "acme"`,
		"adoption: 1 to adopt, 1 refused", "nothing was changed"} {
		if !strings.Contains(out, says) {
			t.Errorf("migrate output lacks %q:\n%s", says, out)
		}
	}
	if p, _ := s.Rancher.Project(mine.ID); p.Annotations["sitebus.io/resource-uuid"] != "" {
		t.Errorf("migrate without --apply marked the project: %v", p.Annotations)
	}

	out, code = s.migrate("--apply")
	if code != 1 {
		t.Fatalf("migrate --apply exit %d, want 1 (the refusal stays):\n%s", code, out)
	}
	want = slices.Sorted(slices.Values(append([]string{"REFUSES " + other.Name, "adopted " + mine.Name}, wantGroups...)))
	if got := reportOf(out); !slices.Equal(got, want) {
		t.Fatalf("migrate --apply lists %v, want %v:\n%s", got, want, out)
	}
	if p, _ := s.Rancher.Project(mine.ID); p.Annotations["sitebus.io/resource-uuid"] != ours {
		t.Errorf("adopted project's annotations %v; want sitebus's mark for %s", p.Annotations, ours)
	}

	s.Start()

	up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: ours, Limits: map[string]int{"cpu": 3, "ram": 6, "storage": 20}})
	if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
		t.Fatalf("update of the adopted project: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(30))
	}
	updated := map[string]string{"limits.cpu": "3", "limits.memory": "6Gi", "requests.storage": "20Gi"}
	quota := func() map[string]string {
		got := s.hardQuota(t, mine.Name)
		return map[string]string{"limits.cpu": got["limits.cpu"], "limits.memory": got["limits.memory"], "requests.storage": got["requests.storage"]}
	}
	if got := quota(); !maps.Equal(got, updated) {
		t.Errorf("quota after the update %v, want %v", got, updated)
	}
	for _, st := range []struct {
		name  string
		flags waldursim.FlagsRequest
		want  map[string]string
	}{
		{"pause zeroes the adopted project's quota", waldursim.FlagsRequest{Paused: ptr(true)}, map[string]string{"limits.cpu": "0", "limits.memory": "0", "requests.storage": "0"}},
		{"restore brings the limits of before back", waldursim.FlagsRequest{Paused: ptr(false)}, updated},
	} {
		if _, err := s.Admin.SetFlags(ctx(t), ours, st.flags); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 60*time.Second, st.name, func() bool { return maps.Equal(quota(), st.want) })
	}

	// A role change keeps the user in the project's one child group (the
	// Python plugin's rule); a new member joins the adopted group.
	s.setTeam("sw-role-bob", ours, member("bob01", "PROJECT.ADMIN"), true)
	if got := s.members(childPath); !slices.Equal(got, []string{"alice01", "bob01"}) {
		t.Errorf("child group after the role change %v, want alice01 and bob01", got)
	}
	s.setTeam("sw-add-carol", ours, member("carol01", "PROJECT.MEMBER"), true)
	s.waitMembers(childPath, "alice01", "bob01", "carol01")

	// keycloak-sync's cleanup adopts the Python agent's groups (live
	// resources name them) in its first period: they get this offering
	// and keep the plugin's managed_by mark. Checked before the terminate,
	// which deletes the child group as the Python plugin does.
	for _, path := range []string{"/" + parentGroup, childPath} {
		harness.Eventually(t, 60*time.Second, "group "+path+" adopted", func() bool {
			g, ok := s.Keycloak.GroupByPath("waldur", path)
			return ok && slices.Equal(g.Attributes[keycloak.OfferingAttribute], []string{offeringHex}) &&
				slices.Equal(g.Attributes["managed_by"], []string{"waldur-site-agent"})
		})
	}

	s.terminateDone(t, ours, mine.ID)

	if after := s.foreignState(other); !reflect.DeepEqual(after, before) {
		t.Errorf("the other organization's project changed:\nbefore %+v\nafter  %+v", before, after)
	}
	bad, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: theirs, Limits: map[string]int{"cpu": 64}})
	if o := s.WaitOrder(bad, "done", "erred"); o.State != "erred" || !strings.Contains(o.ErrorMessage, "other-org") {
		t.Errorf("update of the other organization's project: %s (%q), want erred naming its organization", o.State, o.ErrorMessage)
	}
	if after := s.foreignState(other); !reflect.DeepEqual(after, before) {
		t.Errorf("the other organization's project changed by a refused update:\nbefore %+v\nafter  %+v", before, after)
	}
}
