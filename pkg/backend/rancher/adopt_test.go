package rancher

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

const pyResUUID = "9f8e7d6c5b4a49382716059483726150"

// pyResource's project is the Python agent's: backend_id the project id.
var pyResource = backend.Resource{UUID: pyResUUID, Slug: "alpha", BackendID: "c-test:p-1", CustomerSlug: "acme", ProjectSlug: "genomics"}

// pyProject is a project as the Python plugin creates it.
func pyProject(ann map[string]string) project {
	a := map[string]string{AnnotationOrganization: "acme", AnnotationManaged: "true", AnnotationProjectSlug: "genomics"}
	for k, v := range ann {
		if v == "" {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	return project{ID: "c-test:p-1", Name: "waldur-alpha", ClusterID: "c-test", State: "active", Annotations: a}
}

func TestDecideAdoption(t *testing.T) {
	one := []backend.Resource{pyResource}
	noProject := pyResource
	noProject.ProjectSlug = ""
	tests := []struct {
		name      string
		p         project
		claimants []backend.Resource
		adopt     bool
		why       string
	}{
		{"the Python agent's project with the resource's organization and project slug is adopted", pyProject(nil), one, true, "names it"},
		{"a project slug of unknown matches a resource without one", pyProject(map[string]string{AnnotationProjectSlug: "unknown"}),
			[]backend.Resource{noProject}, true, "names it"},
		{"a project without the organization annotations is adopted on its name",
			pyProject(map[string]string{AnnotationOrganization: "", AnnotationProjectSlug: ""}), one, true, "names it"},
		{"another organization is refused", pyProject(map[string]string{AnnotationOrganization: "other"}), one, false, `"other"`},
		{"another project slug is refused", pyProject(map[string]string{AnnotationProjectSlug: "physics"}), one, false, `"physics"`},
		{"a project without waldur/managed is refused", pyProject(map[string]string{AnnotationManaged: ""}), one, false, "waldur/managed"},
		{"a project no resource names is refused", pyProject(nil), nil, false, "no Waldur resource"},
		{"a project two resources name is refused", pyProject(nil), []backend.Resource{pyResource, {UUID: "other"}}, false, "2 Waldur resources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideAdoption(tt.p, tt.claimants)
			if d.Adopt != tt.adopt {
				t.Fatalf("adopt = %v (proof %q, reason %q), want %v", d.Adopt, d.Proof, d.Reason, tt.adopt)
			}
			if got := d.Proof + d.Reason; !strings.Contains(got, tt.why) {
				t.Errorf("proof/reason %q does not say %q", got, tt.why)
			}
		})
	}
}

type finder []backend.Resource

func (f finder) ResourcesByBackendID(_ context.Context, id string) ([]backend.Resource, error) {
	var out []backend.Resource
	for _, r := range f {
		if r.BackendID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f finder) Resources(context.Context) ([]backend.Resource, error) { return f, nil }

// projectServer is Rancher with one project: GET and PUT (annotations)
// of it, DELETE recorded.
type projectServer struct {
	mu      sync.Mutex
	p       project
	puts    int
	deleted bool
}

func (s *projectServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path != "/v3/projects/"+s.p.ID {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodPut:
		var in struct {
			Annotations map[string]string `json:"annotations"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		s.p.Annotations = in.Annotations
		s.puts++
	case http.MethodDelete:
		s.deleted = true
	}
	_ = json.NewEncoder(w).Encode(s.p)
}

func TestDeleteAdoptsThePythonAgentsProject(t *testing.T) {
	for _, tt := range []struct {
		name  string
		p     project
		adopt bool
	}{
		{"the resource's project is marked and deleted", pyProject(nil), true},
		{"another organization's is refused and left untouched", pyProject(map[string]string{AnnotationOrganization: "other"}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &projectServer{p: tt.p}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			b := testBackend(t, hs, false)
			b.resources = finder{pyResource}
			err := b.Delete(testCtx(t), "c-test:p-1")
			if tt.adopt {
				if err != nil || !srv.deleted || srv.p.Annotations[AnnotationResourceUUID] != pyResUUID {
					t.Errorf("Delete = %v; deleted %v, annotations %v; want marked for %s and deleted", err, srv.deleted, srv.p.Annotations, pyResUUID)
				}
				if got := testutil.ToFloat64(b.adoptions.WithLabelValues(Type, backend.AdoptionAdopted)); got != 1 {
					t.Errorf("adopted count = %v", got)
				}
				return
			}
			if !errors.Is(err, fault.NotManaged) || !fault.IsTerminal(err) || srv.deleted || srv.puts != 0 {
				t.Errorf("Delete = %v; deleted %v, puts %d; want a terminal refusal and no change", err, srv.deleted, srv.puts)
			}
		})
	}
}
