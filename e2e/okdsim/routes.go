package okdsim

import (
	"cmp"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// API group and resources the simulator serves.
const (
	Group      = "project.openshift.io"
	Version    = "v1"
	APIVersion = Group + "/" + Version
	apiPrefix  = "/apis/" + APIVersion
)

var (
	projectsGR = schema.GroupResource{Group: Group, Resource: "projects"}
	// OpenShift's AlreadyExists for a project request names the resource
	// "project" (singular): project.project.openshift.io "x" already exists.
	projectRequestGR = schema.GroupResource{Group: Group, Resource: "project"}
)

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	// Handlers answer errors as Kubernetes Status objects (see writeErr).
	hs := simkit.Handlers{WriteError: writeErr}
	static := func(v any) http.HandlerFunc {
		return simkit.Handle(hs, func(*http.Request, struct{}) (any, error) { return v, nil })
	}
	for _, slash := range []string{"", "/{$}"} { // discovery answers with and without a trailing slash
		api.HandleFunc("GET /apis"+slash, s.apiGroups)
		api.Handle("GET /apis/"+Group+slash, static(projectGroup))
		api.Handle("GET "+apiPrefix+slash, static(projectResources))
	}
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

// writeErr answers err as a Kubernetes Status: a Kubernetes API error keeps
// its own status, anything else is a 500.
func writeErr(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	var status metav1.Status
	if errors.As(err, &st) {
		status = st.Status()
	} else {
		status = apierrors.NewInternalError(err).ErrStatus
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Code = cmp.Or(status.Code, http.StatusInternalServerError)
	simkit.WriteJSON(w, int(status.Code), status)
}

// successStatus is OpenShift's answer to a project delete: a bare Status,
// no details.
func successStatus() metav1.Status {
	return metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
}
