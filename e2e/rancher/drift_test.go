package rancher_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/ranchersim"
)

// setAnnotations replaces a project's annotations through Rancher's API,
// as an operator editing the project in Rancher's UI would.
func (s *site) setAnnotations(projectID string, ann map[string]string) {
	s.t.Helper()
	s.rancherAPI(http.MethodPut, "/v3/projects/"+projectID, map[string]any{"annotations": ann}, http.StatusOK)
}

// deleteBinding deletes a project role template binding through
// Rancher's API, as an operator would.
func (s *site) deleteBinding(id string) {
	s.t.Helper()
	s.rancherAPI(http.MethodDelete, "/v3/projectroletemplatebindings/"+id, nil, http.StatusOK, http.StatusNoContent)
}

// rancherAPI sends one request to the Rancher simulator's API with the
// site's key, as an operator would, and fails the test unless the answer
// has one of the statuses want.
func (s *site) rancherAPI(method, path string, body any, want ...int) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx(s.t), method, s.Rancher.URL()+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	o := s.Rancher.Options()
	req.SetBasicAuth(o.AccessKey, o.SecretKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if !slices.Contains(want, resp.StatusCode) {
		s.t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
}

// boundGroups are the groups bound to the project, sorted.
func (s *site) boundGroups(projectID string) []string {
	var out []string
	for _, b := range s.groupBindings(projectID) {
		out = append(out, strings.TrimPrefix(b.GroupPrincipalID, "keycloakoidc_group://"))
	}
	slices.Sort(out)
	return out
}

// foreignGroup is bound by hand to the sitebus project: sitebus did not
// make that binding, so drift never reports or removes it.
const foreignGroup = "ops-team"

// driftSite has a resource "drift" whose project lost its
// waldur/project_slug annotation and its child group's binding by hand,
// and got a binding of another group, and whose namespace lost its
// gpu-pool label (namespace_labels) and got a label of the operator's;
// and a project sitebus did not make.
func driftSite(t *testing.T, opts siteOptions) (s *site, projectID string, foreign ranchersim.Project) {
	// Only drift may put the binding back: the membership pass would too.
	opts.MembershipPeriod = "24h"
	s = newSiteWith(t, opts)
	orderUUID, _ := s.Create("drift", map[string]int{"cpu": 1}, member("alice01", "PROJECT.ADMIN"))
	if o := s.WaitOrder(orderUUID, "done", "erred"); o.State != "done" {
		t.Fatalf("create: %s (%s)\n%s", o.State, o.ErrorMessage, s.Sitebus.Tail(40))
	}
	projects := s.Rancher.ProjectsNamed(s.Prefix + "drift")
	if len(projects) != 1 {
		t.Fatalf("%d projects named %sdrift, want 1", len(projects), s.Prefix)
	}
	p := projects[0]
	ann := maps.Clone(p.Annotations)
	delete(ann, "waldur/project_slug")
	s.setAnnotations(p.ID, ann)
	bs := s.groupBindings(p.ID)
	if len(bs) != 1 || !strings.HasSuffix(bs[0].GroupPrincipalID, "//"+childGroup) {
		t.Fatalf("bindings of %s: %+v, want %s's", p.ID, bs, childGroup)
	}
	s.deleteBinding(bs[0].ID)
	s.bindGroup(p.ID, foreignGroup, "workloads-manage")
	// The namespace loses namespace_labels' gpu-pool and gets a label of
	// the operator's, through Rancher's namespace PUT.
	labels := s.namespaceLabels(p.Name)
	delete(labels, "gpu-pool")
	labels[foreignLabel] = "x"
	s.rancherAPI(http.MethodPut, "/v3/cluster/"+s.Rancher.Options().ClusterID+"/namespaces/"+p.Name, map[string]any{"labels": labels}, http.StatusOK)
	foreign, err := s.Rancher.AddProject(ranchersim.Project{Name: s.Prefix + "foreign", Description: "someone else's",
		Annotations: map[string]string{"waldur/organization": "other", "team": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	return s, p.ID, foreign
}

// foreignLabel is put on the sitebus namespace by hand: not sitebus's,
// so drift never reports or removes it.
const foreignLabel = "ops.example.org/owner"

func (s *site) namespaceLabels(name string) map[string]string {
	s.t.Helper()
	ns, err := s.Cluster.Dynamic().Resource(nsGVR).Get(ctx(s.t), name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return ns.GetLabels()
}

func (s *site) projectSlug(id string) string {
	p, _ := s.Rancher.Project(id)
	return p.Annotations["waldur/project_slug"]
}

func (s *site) checkForeignUntouched(before ranchersim.Project) {
	s.t.Helper()
	after, ok := s.Rancher.Project(before.ID)
	if !ok || after.Description != before.Description || !maps.Equal(after.Annotations, before.Annotations) {
		s.t.Errorf("foreign project changed: before %+v after %+v (exists %v)", before, after, ok)
	}
}

// An annotation removed and a group binding deleted by hand on a sitebus
// project, and a label removed from its namespace: `sitebus drift` lists
// each and exits 1, changing nothing; `--repair` puts each back; a
// binding and a namespace label sitebus did not make stay, and a project
// sitebus did not make is never listed or touched.
func TestDriftCommandReportsAndRepairsProjectMarksAndBindings(t *testing.T) {
	s, id, foreign := driftSite(t, siteOptions{Keycloak: true})
	out, code := s.Command(t, "drift")
	if code != 1 {
		t.Fatalf("drift exit %d, want 1 (drift left):\n%s", code, out)
	}
	ns := s.Prefix + "drift"
	for _, says := range []string{"labels   " + id, "labels   namespaces/" + ns, "labels.gpu-pool=h100-2x", "labels.gpu-pool missing", "bindings " + id + "/" + childGroup, "want " + childGroup + " bound, have no binding", "annotations.waldur/project_slug=genomics", "annotations.waldur/project_slug missing", "Nothing was changed"} {
		if !strings.Contains(out, says) {
			t.Errorf("drift output lacks %q:\n%s", says, out)
		}
	}
	if strings.Contains(out, foreign.ID) {
		t.Errorf("drift lists the foreign project:\n%s", out)
	}
	if got := s.projectSlug(id); got != "" {
		t.Fatalf("drift without --repair changed the project: project_slug %q", got)
	}
	if got := s.boundGroups(id); !slices.Equal(got, []string{foreignGroup}) {
		t.Fatalf("drift without --repair changed the bindings: %v", got)
	}
	if got := s.namespaceLabels(ns)["gpu-pool"]; got != "" {
		t.Fatalf("drift without --repair changed the namespace: gpu-pool %q", got)
	}

	out, code = s.Command(t, "drift", "--repair", "--nats-url", s.Sitebus.NATSURL)
	if code != 0 {
		t.Fatalf("drift --repair exit %d, want 0:\n%s", code, out)
	}
	if got := s.projectSlug(id); got != "genomics" {
		t.Fatalf("after --repair: project_slug %q, want genomics:\n%s", got, out)
	}
	if got, want := s.boundGroups(id), []string{foreignGroup, childGroup}; !slices.Equal(got, want) {
		t.Fatalf("after --repair: bound %v, want %v:\n%s", got, want, out)
	}
	if got := s.namespaceLabels(ns); got["gpu-pool"] != "h100-2x" || got[foreignLabel] != "x" {
		t.Fatalf("after --repair: namespace labels %v, want gpu-pool back and %s kept:\n%s", got, foreignLabel, out)
	}
	if out, code = s.Command(t, "drift"); code != 0 {
		t.Errorf("drift after the repair exit %d, want 0:\n%s", code, out)
	}
	s.checkForeignUntouched(foreign)
}

// The periodic drift pass of the running sitebus puts the annotation, the
// namespace label and the binding back and counts the repairs; the
// binding and label sitebus did not make and the foreign project stay
// untouched.
func TestDriftPassRepairsProjectMarksAndBindings(t *testing.T) {
	s, id, foreign := driftSite(t, siteOptions{Keycloak: true, DriftPeriod: "10s"})
	harness.Eventually(t, 60*time.Second, "the drift pass puts the project slug back", func() bool {
		return s.projectSlug(id) == "genomics"
	})
	harness.Eventually(t, 60*time.Second, "the drift pass puts the namespace's gpu-pool label back", func() bool {
		return s.namespaceLabels(s.Prefix + "drift")["gpu-pool"] == "h100-2x"
	})
	if got := s.namespaceLabels(s.Prefix + "drift")[foreignLabel]; got != "x" {
		t.Errorf("the drift pass changed the operator's label %s: %q", foreignLabel, got)
	}
	harness.Eventually(t, 60*time.Second, "the drift pass binds the child group again", func() bool {
		return slices.Equal(s.boundGroups(id), []string{foreignGroup, childGroup})
	})
	for _, kind := range []string{"labels", "bindings"} {
		series := `sitebus_drift_repairs_total{kind="` + kind + `",outcome="repaired"}`
		harness.Eventually(t, 60*time.Second, series+" ≥ 1", func() bool {
			v, err := strconv.ParseFloat(s.Metric(series), 64)
			return err == nil && v >= 1
		})
	}
	s.checkForeignUntouched(foreign)
}
