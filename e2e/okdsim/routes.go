package okdsim

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("GET /apis", s.apiGroups)
	api.HandleFunc("GET /apis/{$}", s.apiGroups)
	// Handlers answer errors as Kubernetes Status objects (see writeErr).
	hs := simkit.Handlers{WriteError: writeErr}
	static := func(v any) http.HandlerFunc {
		return simkit.Handle(hs, func(*http.Request, struct{}) (any, error) { return v, nil })
	}
	api.Handle("GET /apis/"+Group, static(projectGroup))
	api.Handle("GET /apis/"+Group+"/{$}", static(projectGroup))
	api.Handle("GET "+apiPrefix, static(projectResources))
	api.Handle("GET "+apiPrefix+"/{$}", static(projectResources))
	api.Handle("POST "+apiPrefix+"/projectrequests", simkit.Handle(hs, s.createProjectRequest))
	api.Handle("DELETE "+apiPrefix+"/projects/{name}", simkit.Handle(hs, s.deleteProject))
	// The group's other paths and methods are not the real server's to
	// answer.
	api.Handle("/apis/"+Group+"/", simkit.Handle(hs, func(*http.Request, struct{}) (any, error) {
		return nil, apierrors.NewGenericServerResponse(http.StatusNotFound, "", projectsGR, "", "", 0, false)
	}))
	api.Handle("GET /apis/user.openshift.io/v1/users/~", simkit.Handle(hs, currentUser))
	api.Handle("/", s.kube.proxy)

	// OAuth sits outside authentication.
	top := http.NewServeMux()
	top.Handle("GET /.well-known/oauth-authorization-server", s.Middleware(http.HandlerFunc(s.oauthMetadata)))
	token := simkit.Handle(simkit.Handlers{}, s.oauthToken)
	top.Handle("POST /oauth/token", s.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		token(w, r)
	})))
	top.Handle("/", s.Middleware(s.authed(api)))
	return top
}

// currentUser is OpenShift's users/~: the user the bearer token belongs
// to, the same the simulator records as openshift.io/requester.
func currentUser(r *http.Request, _ struct{}) (any, error) {
	return map[string]any{"kind": "User", "apiVersion": "user.openshift.io/v1",
		"metadata": map[string]any{"name": userFrom(r.Context())}}, nil
}
