package okdsim

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Project is a project as tests see (and seed) it: its namespace's
// metadata.
type Project struct {
	Name        string
	DisplayName string
	Description string
	Requester   string
	Annotations map[string]string
	Labels      map[string]string
	Phase       string // Active, Terminating
}

func projectOf(ns *unstructured.Unstructured) Project {
	a := ns.GetAnnotations()
	phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
	return Project{Name: ns.GetName(), DisplayName: a[DisplayNameAnnotation], Description: a[DescriptionAnnotation],
		Requester: a[RequesterAnnotation], Annotations: a, Labels: ns.GetLabels(), Phase: phase}
}

// Projects returns what GET projects lists, ordered by name.
func (s *Server) Projects(ctx context.Context) ([]Project, error) {
	list, _, err := s.projects(ctx, metav1.ListOptions{})
	out := simkit.Map(list, projectOf)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// Project returns one project; found is false when its namespace does not
// exist.
func (s *Server) Project(ctx context.Context, name string) (p Project, found bool, err error) {
	ns, err := s.kube.namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Project{}, false, nil
	}
	if err != nil {
		return Project{}, false, err
	}
	return projectOf(ns), true, nil
}

// SeedProject creates a project behind the client's back, as another user
// of the cluster would: a namespace with p's annotations and labels, the
// display name, description and requester (default "someone-else") set
// from p's fields.
func (s *Server) SeedProject(ctx context.Context, p Project) error {
	a := map[string]string{}
	maps.Copy(a, p.Annotations)
	p.Requester = cmp.Or(p.Requester, "someone-else")
	a[DisplayNameAnnotation], a[DescriptionAnnotation], a[RequesterAnnotation] = p.DisplayName, p.Description, p.Requester
	_, err := s.kube.namespaces().Create(ctx, newNamespace(p.Name, a, p.Labels), metav1.CreateOptions{})
	return err
}

// adminRoutes serve the inspection API under /sim/ for a simulator run as
// a process, where tests cannot call Server's methods. It needs no token
// and bypasses faults and the call log. Listen on loopback only.
//
//	GET    /sim/projects  projects           GET    /sim/calls   call log
//	POST   /sim/token     {"token":…} rotate DELETE /sim/calls   reset it
//	POST   /sim/oauth/expire  expire OAuth   POST   /sim/faults  add a fault
//	POST   /sim/down      {"down":bool}      DELETE /sim/faults  clear faults
func (s *Server) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /sim/projects", func(w http.ResponseWriter, r *http.Request) {
		ps, err := s.Projects(r.Context())
		if err != nil {
			writeErr(w, err)
			return
		}
		simkit.WriteJSON(w, http.StatusOK, ps)
	})
	mux.HandleFunc("GET /sim/calls", func(w http.ResponseWriter, _ *http.Request) { simkit.WriteJSON(w, http.StatusOK, s.Calls()) })
	mux.HandleFunc("POST /sim/token", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Token string `json:"token"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Token == "" {
			writeErr(w, apierrors.NewBadRequest(`want {"token":"…"}`))
			return
		}
		if err := s.RotateToken(in.Token); err != nil {
			writeErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /sim/oauth/expire", func(w http.ResponseWriter, _ *http.Request) {
		s.ExpireOAuthTokens()
		w.WriteHeader(http.StatusNoContent)
	})
	s.AdminRoutes(mux, func(w http.ResponseWriter, msg string) { writeErr(w, apierrors.NewBadRequest(msg)) })
}
