package okdsim

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// handler serves one route of the project API: the body of its success
// status, or an error answered as a Kubernetes Status (see writeErr).
type handler func(r *http.Request) (any, error)

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("GET /apis", s.apiGroups)
	api.HandleFunc("GET /apis/{$}", s.apiGroups)
	static := func(v any) handler { return func(*http.Request) (any, error) { return v, nil } }
	for _, rt := range []struct {
		pattern string
		status  int
		h       handler
	}{
		{"GET /apis/" + Group, http.StatusOK, static(projectGroup)},
		{"GET /apis/" + Group + "/{$}", http.StatusOK, static(projectGroup)},
		{"GET " + apiPrefix, http.StatusOK, static(projectResources)},
		{"GET " + apiPrefix + "/{$}", http.StatusOK, static(projectResources)},
		{"POST " + apiPrefix + "/projectrequests", http.StatusCreated, s.createProjectRequest},
		{"GET " + apiPrefix + "/projectrequests", http.StatusOK, static(successStatus())},
		{"GET " + apiPrefix + "/projects", http.StatusOK, s.listProjects},
		{"GET " + apiPrefix + "/projects/{name}", http.StatusOK, s.getProject},
		{"PUT " + apiPrefix + "/projects/{name}", http.StatusOK, s.updateProject},
		{"PATCH " + apiPrefix + "/projects/{name}", http.StatusOK, s.patchProject},
		{"DELETE " + apiPrefix + "/projects/{name}", http.StatusOK, s.deleteProject},
		// The group's other paths and methods are not the real server's
		// to answer.
		{"/apis/" + Group + "/", 0, func(*http.Request) (any, error) {
			return nil, apierrors.NewGenericServerResponse(http.StatusNotFound, "", projectsGR, "", "", 0, false)
		}},
	} {
		api.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if out, err := rt.h(r); err != nil {
				writeErr(w, err)
			} else {
				simkit.WriteJSON(w, rt.status, out)
			}
		})
	}
	api.Handle("/", s.kube.proxy)

	// The admin API and OAuth sit outside authentication; the admin API
	// outside faults and the call log too, so a test is never locked out
	// of inspecting the simulator.
	top := http.NewServeMux()
	s.adminRoutes(top)
	top.Handle("GET /.well-known/oauth-authorization-server", s.Faults.Middleware(http.HandlerFunc(s.oauthMetadata)))
	top.Handle("POST /oauth/token", s.Faults.Middleware(http.HandlerFunc(s.oauthToken)))
	top.Handle("/", s.Faults.Middleware(s.authed(api)))
	return top
}
