package rancher_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

var nsGVR = corev1.SchemeGroupVersion.WithResource("namespaces")

// wantQuota is the Python plugin's yaml.dump of the quota for cpu 4, ram
// 8, storage 100, gpu 2 (reference §4.1), byte for byte.
func wantQuota(ns string) string {
	return `apiVersion: v1
kind: ResourceQuota
metadata:
  name: custom-resource-quota
  namespace: ` + ns + `
spec:
  hard:
    limits.cpu: 4000m
    limits.memory: 8192Mi
    requests.nvidia.com/gpu: '2'
    requests.storage: 102400Mi
`
}

func (s *site) imports(ns string) []ranchersim.Import {
	var out []ranchersim.Import
	for _, im := range s.Rancher.Imports() {
		if im.Namespace == ns || im.DefaultNamespace == ns {
			out = append(out, im)
		}
	}
	return out
}

// roleEvent publishes a user_role event for the fixture's project with a
// message id of its own, so the test can wait until membership handled it.
func (s *site) roleEvent(id, user, role string, granted bool) {
	s.t.Helper()
	body := fmt.Sprintf(`{"user_uuid": "c000000000004000800000000000000%d", "user_username": "%s", "project_uuid": "%s", "role_name": "%s", "granted": %v, "offering_uuid": "%s"}`,
		len(user)%10, user, strings.ReplaceAll(projectUUID, "-", ""), role, granted, offeringHex)
	if _, err := s.Admin.PublishRaw(ctx(s.t), waldursim.RawEventRequest{OfferingUUID: offeringHex, ObjectType: "user_role", Body: body, MessageID: id}); err != nil {
		s.t.Fatal(err)
	}
}

// setTeam changes the resource's team in Waldur and tells sitebus with an
// event of id, then waits until the membership service acked it.
func (s *site) setTeam(id, resUUID string, m waldursim.TeamMember, granted bool) {
	s.t.Helper()
	if _, err := s.Admin.SetTeam(ctx(s.t), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: granted, Silent: true}); err != nil {
		s.t.Fatal(err)
	}
	s.roleEvent(id, m.Username, m.Role, granted)
	s.waitHandled("membership", id)
}

// waitHandled waits until consumer acked the events with these message ids.
func (s *site) waitHandled(consumer string, msgIDs ...string) {
	s.t.Helper()
	harness.WaitHandled(s.t, s.Sitebus.NATSURL, consumer, msgIDs...)
}

func TestRancherProjectLifecycle(t *testing.T) {
	s := newSite(t)
	limits := map[string]int{"cpu": 4, "ram": 8, "storage": 100, "gpu": 2}
	orderUUID, resUUID := s.Create("gpu-lab", limits, member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER"))
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	name := s.Prefix + "gpu-lab"
	projects := s.Rancher.ProjectsNamed(name)
	if len(projects) != 1 {
		t.Fatalf("%d projects named %s, want 1", len(projects), name)
	}
	p := projects[0]

	t.Run("the project is Python's: annotations and description", func(t *testing.T) {
		want := map[string]string{"waldur/organization": "acme", "waldur/managed": "true", "waldur/project_slug": "genomics"}
		for k, v := range want {
			if p.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q (all: %v)", k, p.Annotations[k], v, p.Annotations)
			}
		}
		if want := "gpu-lab (Customer: Acme Research, Project: Genomics)"; p.Description != want {
			t.Errorf("description %q, want %q", p.Description, want)
		}
	})
	t.Run("the namespace has the pod-security labels and namespace_labels", func(t *testing.T) {
		ns, err := s.Cluster.Dynamic().Resource(nsGVR).Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		labels := ns.GetLabels()
		for k, v := range map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest", "gpu-pool": "h100-2x"} {
			if labels[k] != v {
				t.Errorf("label %s = %q, want %q (all: %v)", k, labels[k], v, labels)
			}
		}
	})
	t.Run("the quota went to importYaml byte for byte", func(t *testing.T) {
		ims := s.imports(name)
		if len(ims) != 1 {
			t.Fatalf("%d imports for %s, want 1", len(ims), name)
		}
		if ims[0].YAML != wantQuota(name) {
			t.Errorf("quota YAML:\n%s\nwant:\n%s", ims[0].YAML, wantQuota(name))
		}
	})
	t.Run("parent and child groups, managed, with Python's descriptions", func(t *testing.T) {
		for path, desc := range map[string]string{
			"/" + parentGroup: "Cluster access group for c-m-sim00001",
			childPath:         "Project genomics members with role workloads-manage",
		} {
			g, ok := s.Keycloak.GroupByPath("waldur", path)
			if !ok {
				t.Errorf("no group %s (groups: %v)", path, s.Keycloak.Groups("waldur"))
				continue
			}
			if !slices.Equal(g.Attributes["managed_by"], []string{"sitebus"}) || !slices.Equal(g.Attributes["description"], []string{desc}) {
				t.Errorf("group %s attributes %v, want managed_by sitebus and description %q", path, g.Attributes, desc)
			}
		}
	})
	t.Run("the child group is bound to the project", func(t *testing.T) {
		bs := s.groupBindings(p.ID)
		if len(bs) != 1 || bs[0].GroupPrincipalID != "keycloakoidc_group://"+childGroup || bs[0].RoleTemplateID != "workloads-manage" {
			t.Fatalf("group bindings of %s: %+v", p.ID, bs)
		}
	})
	t.Run("the team is in the child group only", func(t *testing.T) {
		s.waitMembers(childPath, "alice01", "bob01")
		if m := s.members("/" + parentGroup); len(m) != 0 {
			t.Errorf("parent group members %v, want none", m)
		}
	})
	t.Run("Waldur got the project id and one done", func(t *testing.T) {
		res, err := s.Admin.Resource(ctx(t), resUUID)
		if err != nil {
			t.Fatal(err)
		}
		if res.BackendID != p.ID {
			t.Errorf("backend_id %q, want the project id %q", res.BackendID, p.ID)
		}
		if n := s.waldurCalls("set_state_done"); n != 1 {
			t.Errorf("%d set_state_done calls, want 1", n)
		}
		if n := s.waldurCalls("set_backend_id"); n != 1 {
			t.Errorf("%d set_backend_id calls, want 1", n)
		}
	})
	logCalls(t, s, "one create order (team of two)")

	t.Run("an update changes the quota", func(t *testing.T) {
		up, _ := s.Order(waldursim.CreateOrderRequest{Type: "Update", ResourceUUID: resUUID, Limits: map[string]int{"cpu": 6, "ram": 8, "storage": 100, "gpu": 2}})
		if o := s.WaitOrder(up, "done", "erred"); o.State != "done" {
			t.Fatalf("update: %s (%s)", o.State, o.ErrorMessage)
		}
		ims := s.imports(name)
		if len(ims) != 2 || !strings.Contains(ims[1].YAML, "limits.cpu: 6000m\n") {
			t.Fatalf("imports after the update: %+v", ims)
		}
		q, err := s.Cluster.Dynamic().Resource(corev1.SchemeGroupVersion.WithResource("resourcequotas")).Namespace(name).Get(ctx(t), "custom-resource-quota", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hard := q.Object["spec"].(map[string]any)["hard"].(map[string]any)
		if hard["limits.cpu"] != "6" {
			t.Errorf("quota in the cluster: %v", hard)
		}
	})
	t.Run("a role change keeps the user in the one group", func(t *testing.T) {
		s.setTeam("role-bob", resUUID, member("bob01", "PROJECT.ADMIN"), true)
		if got := s.members(childPath); !slices.Equal(got, []string{"alice01", "bob01"}) {
			t.Errorf("child group %v, want alice01 and bob01", got)
		}
	})
	t.Run("an added user joins the child group", func(t *testing.T) {
		s.setTeam("add-carol", resUUID, member("carol01", "PROJECT.MEMBER"), true)
		s.waitMembers(childPath, "alice01", "bob01", "carol01")
	})
	t.Run("a removed user leaves it", func(t *testing.T) {
		s.setTeam("remove-carol", resUUID, member("carol01", "PROJECT.MEMBER"), false)
		s.waitMembers(childPath, "alice01", "bob01")
		if len(s.groupBindings(p.ID)) != 1 {
			t.Error("the binding went while the group has members")
		}
	})
	t.Run("the last user removed takes the binding and the groups", func(t *testing.T) {
		s.setTeam("remove-bob", resUUID, member("bob01", "PROJECT.ADMIN"), false)
		s.setTeam("remove-alice", resUUID, member("alice01", "PROJECT.ADMIN"), false)
		if bs := s.groupBindings(p.ID); len(bs) != 0 {
			t.Errorf("bindings left: %+v", bs)
		}
		if gs := s.Keycloak.Groups("waldur"); len(gs) != 0 {
			t.Errorf("groups left: %+v", gs)
		}
	})
	t.Run("a user added again brings groups and binding back", func(t *testing.T) {
		s.setTeam("add-alice", resUUID, member("alice01", "PROJECT.ADMIN"), true)
		s.waitMembers(childPath, "alice01")
		if bs := s.groupBindings(p.ID); len(bs) != 1 || bs[0].GroupPrincipalID != "keycloakoidc_group://"+childGroup {
			t.Errorf("bindings: %+v", bs)
		}
	})
	t.Run("terminate removes the project, the binding and the groups", func(t *testing.T) {
		s.terminateDone(t, resUUID, p.ID)
		if gs := s.Keycloak.Groups("waldur"); len(gs) != 0 {
			t.Errorf("groups left: %+v", gs)
		}
	})
}

// Keycloak refusing to make groups fails the saga after the project was
// made: the compensation deletes the project, and the order errs with
// Keycloak's reason (the Python agent logs it and reports success).
func TestKeycloakFailingDuringCreateLeavesNoProject(t *testing.T) {
	s := newSite(t)
	s.Keycloak.AddFault(keycloaksim.Fault{Method: "POST", PathPrefix: "/admin/realms/waldur/groups", Status: 403, Body: `{"error":"HTTP 403 Forbidden"}`})
	orderUUID, _ := s.Create("kc-down", map[string]int{"cpu": 1}, member("alice01", "PROJECT.ADMIN"))
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "403") {
		t.Fatalf("order %s: %q, want erred with Keycloak's 403", o.State, o.ErrorMessage)
	}
	if n := s.Rancher.CallCount("POST", "/v3/projects", 201); n != 1 {
		t.Errorf("%d projects created, want 1 (the saga's first step)", n)
	}
	if ps := s.Rancher.ProjectsNamed(s.Prefix + "kc-down"); len(ps) != 0 {
		t.Errorf("project left after the compensation: %+v", ps)
	}
	if gs := s.Keycloak.Groups("waldur"); len(gs) != 0 {
		t.Errorf("groups left: %+v", gs)
	}
}

// A project of the same name that sitebus does not manage fails the order
// before anything is made, and stays as it was.
func TestForeignProjectOfTheSameNameErrsUntouched(t *testing.T) {
	s := newSite(t)
	before, err := s.Rancher.AddProject(ranchersim.Project{Name: s.Prefix + "taken", Description: "someone else's", Annotations: map[string]string{"team": "other"}})
	if err != nil {
		t.Fatal(err)
	}
	orderUUID, _ := s.Create("taken", map[string]int{"cpu": 1}, member("alice01", "PROJECT.ADMIN"))
	o := s.WaitOrder(orderUUID, "done", "erred")
	if o.State != "erred" || !strings.Contains(o.ErrorMessage, "not managed by sitebus") {
		t.Fatalf("order %s: %q, want erred naming the foreign project", o.State, o.ErrorMessage)
	}
	after, ok := s.Rancher.Project(before.ID)
	if !ok || after.Description != before.Description || !maps.Equal(after.Annotations, before.Annotations) {
		t.Errorf("foreign project changed: before %+v after %+v (exists %v)", before, after, ok)
	}
	if bs := s.Rancher.Bindings(before.ID); len(s.groupBindings(before.ID)) != 0 {
		t.Errorf("bindings made on the foreign project: %+v", bs)
	}
	if len(s.imports(s.Prefix+"taken")) != 0 {
		t.Error("a quota was imported")
	}
	if n := len(s.Rancher.ProjectsNamed(s.Prefix + "taken")); n != 1 {
		t.Errorf("%d projects named %staken, want the foreign one", n, s.Prefix)
	}
}

// logCalls prints the calls so far to each simulator, for the figures in
// the closing notes.
func logCalls(t *testing.T, s *site, what string) {
	t.Helper()
	wc, err := s.Admin.Calls(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	shape := func(m, p string) string {
		parts := strings.Split(p, "/")
		for i, x := range parts {
			if len(x) >= 20 || strings.Contains(x, ":") {
				parts[i] = "{id}"
			}
		}
		return m + " " + strings.Join(parts, "/")
	}
	count := func(calls []string) map[string]int {
		out := map[string]int{}
		for _, c := range calls {
			out[c]++
		}
		return out
	}
	var r, k, w []string
	for _, c := range s.Rancher.Calls() {
		r = append(r, shape(c.Method, c.Path))
	}
	for _, c := range s.Keycloak.Calls() {
		k = append(k, shape(c.Method, c.Path))
	}
	for _, c := range wc {
		w = append(w, shape(c.Method, c.Path))
	}
	t.Logf("calls for %s: Rancher %d %v; Keycloak %d %v; Waldur %d %v", what, len(r), count(r), len(k), count(k), len(w), count(w))
}
