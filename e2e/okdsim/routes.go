package okdsim

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("GET /apis", s.apiGroups)
	api.HandleFunc("GET /apis/{$}", s.apiGroups)
	api.HandleFunc("GET /apis/"+Group, s.projectGroupDoc)
	api.HandleFunc("GET /apis/"+Group+"/{$}", s.projectGroupDoc)
	api.HandleFunc("GET "+apiPrefix, s.projectResourceList)
	api.HandleFunc("GET "+apiPrefix+"/{$}", s.projectResourceList)
	api.HandleFunc("POST "+apiPrefix+"/projectrequests", s.createProjectRequest)
	api.HandleFunc("GET "+apiPrefix+"/projectrequests", s.listProjectRequests)
	api.HandleFunc("GET "+apiPrefix+"/projects", s.listProjects)
	api.HandleFunc("GET "+apiPrefix+"/projects/{name}", s.getProject)
	api.HandleFunc("PUT "+apiPrefix+"/projects/{name}", s.updateProject)
	api.HandleFunc("PATCH "+apiPrefix+"/projects/{name}", s.patchProject)
	api.HandleFunc("DELETE "+apiPrefix+"/projects/{name}", s.deleteProject)
	// The group's other paths and methods are not the real server's to
	// answer.
	api.HandleFunc("/apis/"+Group+"/", func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, apierrors.NewGenericServerResponse(http.StatusNotFound, "", projectsGR, "", "", 0, false))
	})
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
