package rancher

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// projectsServer is Rancher with a few projects: the list, and GET and
// PUT (annotations) of each; it counts the PUTs per project. Its
// namespaces are listed, read and PUT (labels and annotations) under
// cluster c-test, the PUTs counted under NamespaceObject(name).
type projectsServer struct {
	mu         sync.Mutex
	projects   map[string]*project
	namespaces map[string]*namespace
	puts       map[string]int
	bindings   []binding
	posts      int // bindings made
}

func (s *projectsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v3/clusters/c-test/namespaces"); ok {
		s.serveNamespaces(w, r, strings.TrimPrefix(rest, "/"))
		return
	}
	if r.URL.Path == "/v3/projectroletemplatebindings" {
		if r.Method != http.MethodGet {
			s.posts++
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte("{}"))
			return
		}
		// Unfiltered: the client filters the answer again.
		_ = json.NewEncoder(w).Encode(collection[binding]{Data: s.bindings})
		return
	}
	if r.URL.Path == "/v3/projects" && r.Method == http.MethodGet {
		var col collection[project]
		for _, p := range s.projects {
			col.Data = append(col.Data, *p)
		}
		_ = json.NewEncoder(w).Encode(col)
		return
	}
	p, ok := s.projects[strings.TrimPrefix(r.URL.Path, "/v3/projects/")]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPut {
		var in struct {
			Annotations map[string]string `json:"annotations"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		p.Annotations = in.Annotations
		s.puts[p.ID]++
	}
	_ = json.NewEncoder(w).Encode(p)
}

func (s *projectsServer) serveNamespaces(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" {
		var col collection[namespace]
		for _, ns := range s.namespaces {
			col.Data = append(col.Data, *ns)
		}
		_ = json.NewEncoder(w).Encode(col)
		return
	}
	ns, ok := s.namespaces[name]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPut {
		var in struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		ns.Labels, ns.Annotations = in.Labels, in.Annotations
		s.puts[NamespaceObject(name)]++
	}
	_ = json.NewEncoder(w).Encode(ns)
}

// sitebusNamespace is the namespace Create makes in project p with
// namespace_labels gpu-pool: h100-2x, plus a foreign label, with labels
// changed ("" removes one).
func sitebusNamespace(p *project, labels map[string]string) *namespace {
	l := namespaceLabels(map[string]string{"gpu-pool": "h100-2x"})
	l["team"] = "theirs"
	for k, v := range labels {
		if v == "" {
			delete(l, k)
		} else {
			l[k] = v
		}
	}
	return &namespace{ID: p.Name, Name: p.Name, ProjectID: p.ID, State: "active", Labels: l,
		Annotations: map[string]string{AnnotationManaged: "true", "field.cattle.io/projectId": p.ID}}
}

// sitebusProject is a project as Create makes it for pyResource, with
// ann changed ("" removes one).
func sitebusProject(id string, ann map[string]string) *project {
	p := pyProject(map[string]string{AnnotationResourceUUID: pyResUUID})
	for k, v := range ann {
		if v == "" {
			delete(p.Annotations, k)
		} else {
			p.Annotations[k] = v
		}
	}
	p.ID = id
	return &p
}

func TestMarkDrift(t *testing.T) {
	foreign := &project{ID: "c-test:p-9", Name: "theirs", Annotations: map[string]string{AnnotationOrganization: "other", "team": "x"}}
	tests := []struct {
		name    string
		p       *project
		want    []backend.MarkDifference
		repairs bool
	}{
		{"a project as Create made it has no drift", sitebusProject("c-test:p-1", map[string]string{"extra": "kept"}), nil, false},
		{"a project slug removed by hand is reported and put back", sitebusProject("c-test:p-1", map[string]string{AnnotationProjectSlug: ""}),
			[]backend.MarkDifference{{Key: "annotations." + AnnotationProjectSlug, Want: "genomics"}}, true},
		{"an organization changed by hand is reported and put back", sitebusProject("c-test:p-1", map[string]string{AnnotationOrganization: "evil"}),
			[]backend.MarkDifference{{Key: "annotations." + AnnotationOrganization, Want: "acme", Have: "evil"}}, true},
		{"a project that names no resource is left to adoption", sitebusProject("c-test:p-1", map[string]string{AnnotationResourceUUID: "", AnnotationProjectSlug: ""}), nil, false},
		{"a project whose resource Waldur does not list is left out", sitebusProject("c-test:p-1", map[string]string{AnnotationResourceUUID: "gone", AnnotationProjectSlug: ""}), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &projectsServer{projects: map[string]*project{tt.p.ID: tt.p, foreign.ID: foreign}, puts: map[string]int{}}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			b := testBackend(t, hs, false)
			b.resources = finder{pyResource}
			got, err := b.MarkDrift(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 1 || !slices.Equal(got[tt.p.ID], tt.want) {
				t.Fatalf("MarkDrift = %v, want %v on %s only", got, tt.want, tt.p.ID)
			}
			if !tt.repairs {
				return
			}
			changed, err := b.RepairMarks(testCtx(t), tt.p.ID)
			if err != nil || !changed {
				t.Fatalf("RepairMarks = %v, %v; want changed", changed, err)
			}
			if after, _ := b.MarkDrift(testCtx(t)); len(after) != 0 {
				t.Errorf("drift after the repair: %v", after)
			}
			if a := srv.projects[tt.p.ID].Annotations; a["extra"] != "" || a[AnnotationResourceUUID] != pyResUUID || a[AnnotationManaged] != "true" {
				t.Errorf("the repair lost other annotations: %v", a)
			}
			if changed, err := b.RepairMarks(testCtx(t), tt.p.ID); err != nil || changed || srv.puts[tt.p.ID] != 1 {
				t.Errorf("second RepairMarks = %v, %v after %d PUTs; want unchanged after one", changed, err, srv.puts[tt.p.ID])
			}
			if srv.puts[foreign.ID] != 0 {
				t.Errorf("the foreign project was changed")
			}
		})
	}
}

func TestNamespaceMarkDrift(t *testing.T) {
	mine := sitebusProject("c-test:p-1", nil)
	foreign := &project{ID: "c-test:p-9", Name: "theirs", Annotations: map[string]string{"team": "x"}}
	// Namespaces sitebus did not make: another one in its project, and
	// one in a project it does not manage, both without sitebus's labels.
	extra := &namespace{ID: "extra", Name: "extra", ProjectID: mine.ID, Labels: map[string]string{"a": "b"}}
	theirs := &namespace{ID: foreign.Name, Name: foreign.Name, ProjectID: foreign.ID, Labels: map[string]string{"a": "b"}}
	obj := NamespaceObject(mine.Name)
	tests := []struct {
		name string
		ns   *namespace
		want []backend.MarkDifference
	}{
		{"a namespace as Create made it has no drift", sitebusNamespace(mine, nil), nil},
		{"a namespace_labels label removed by hand is reported and put back", sitebusNamespace(mine, map[string]string{"gpu-pool": ""}),
			[]backend.MarkDifference{{Key: "labels.gpu-pool", Want: "h100-2x"}}},
		{"a pod-security label changed by hand is reported and put back",
			sitebusNamespace(mine, map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}),
			[]backend.MarkDifference{{Key: "labels.pod-security.kubernetes.io/enforce", Want: "restricted", Have: "privileged"}}},
		{"the waldur/managed annotation removed by hand is reported and put back", func() *namespace {
			ns := sitebusNamespace(mine, nil)
			delete(ns.Annotations, AnnotationManaged)
			return ns
		}(), []backend.MarkDifference{{Key: "annotations." + AnnotationManaged, Want: "true"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &projectsServer{projects: map[string]*project{mine.ID: mine, foreign.ID: foreign}, puts: map[string]int{},
				namespaces: map[string]*namespace{tt.ns.Name: tt.ns, extra.Name: extra, theirs.Name: theirs}}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			b := testBackend(t, hs, false)
			b.settings.NamespaceLabels = map[string]string{"gpu-pool": "h100-2x"}
			b.resources = finder{pyResource}
			got, err := b.MarkDrift(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 1 || !slices.Equal(got[obj], tt.want) {
				t.Fatalf("MarkDrift = %v, want %v on %s only", got, tt.want, obj)
			}
			changed, err := b.RepairMarks(testCtx(t), obj)
			if err != nil || changed != (tt.want != nil) {
				t.Fatalf("RepairMarks = %v, %v; want changed %v", changed, err, tt.want != nil)
			}
			if after, _ := b.MarkDrift(testCtx(t)); len(after) != 0 {
				t.Errorf("drift after the repair: %v", after)
			}
			ns := srv.namespaces[mine.Name]
			if ns.Labels["team"] != "theirs" || ns.Annotations["field.cattle.io/projectId"] != mine.ID {
				t.Errorf("the repair lost other labels or annotations: %v %v", ns.Labels, ns.Annotations)
			}
			if _, err := b.RepairMarks(testCtx(t), obj); err != nil || srv.puts[obj] > 1 {
				t.Errorf("second RepairMarks: %v after %d PUTs; want at most one", err, srv.puts[obj])
			}
			for _, other := range []string{extra.Name, theirs.Name} {
				if _, err := b.RepairMarks(testCtx(t), NamespaceObject(other)); !errors.Is(err, fault.NotManaged) || srv.puts[NamespaceObject(other)] != 0 {
					t.Errorf("RepairMarks of %s = %v; want a refusal and no change", other, err)
				}
			}
		})
	}
}

func TestRepairMarksRefusesAProjectSitebusDoesNotManage(t *testing.T) {
	foreign := &project{ID: "c-test:p-9", Name: "theirs", Annotations: map[string]string{AnnotationResourceUUID: pyResUUID}}
	srv := &projectsServer{projects: map[string]*project{foreign.ID: foreign}, puts: map[string]int{}}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	b := testBackend(t, hs, false)
	b.resources = finder{pyResource}
	if got, err := b.MarkDrift(testCtx(t)); err != nil || len(got) != 0 {
		t.Errorf("MarkDrift = %v, %v; want the unmarked project left out", got, err)
	}
	if _, err := b.RepairMarks(testCtx(t), foreign.ID); !errors.Is(err, fault.NotManaged) || srv.puts[foreign.ID] != 0 {
		t.Errorf("RepairMarks = %v after %d PUTs; want a refusal and no change", err, srv.puts[foreign.ID])
	}
}

func TestPlanGroupBinding(t *testing.T) {
	const group = "project_genomics_workloads-manage"
	mine := sitebusProject("c-test:p-1", nil)
	foreign := &project{ID: "c-test:p-9", Name: "theirs", Annotations: map[string]string{"team": "x"}}
	bound := binding{ID: "b1", RoleTemplateID: "workloads-manage", ProjectID: mine.ID, GroupPrincipalID: GroupPrincipalID(group)}
	otherRole := bound
	otherRole.RoleTemplateID = "project-owner"
	tests := []struct {
		name     string
		project  string
		bindings []binding
		missing  bool
		refused  bool
	}{
		{"the group bound with default_role is not missing", mine.ID, []binding{bound}, false, false},
		{"a binding deleted by hand is missing", mine.ID, nil, true, false},
		{"a binding with another role does not count", mine.ID, []binding{otherRole}, true, false},
		{"a project sitebus does not manage is refused", foreign.ID, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &projectsServer{projects: map[string]*project{mine.ID: mine, foreign.ID: foreign}, puts: map[string]int{}, bindings: tt.bindings}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			b := testBackend(t, hs, false)
			b.settings.DefaultRole = "workloads-manage"
			missing, err := b.PlanGroupBinding(testCtx(t), tt.project, group)
			if tt.refused {
				if !errors.Is(err, fault.NotManaged) {
					t.Errorf("PlanGroupBinding = %v, %v; want a refusal", missing, err)
				}
			} else if err != nil || missing != tt.missing {
				t.Errorf("PlanGroupBinding = %v, %v; want %v", missing, err, tt.missing)
			}
			if srv.posts != 0 || srv.puts[tt.project] != 0 {
				t.Errorf("the dry run changed something: %d bindings made, %d PUTs", srv.posts, srv.puts[tt.project])
			}
		})
	}
}
