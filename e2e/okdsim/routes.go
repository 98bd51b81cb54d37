package okdsim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	api.Handle("/", s.kube.Proxy)

	// OAuth sits outside authentication; faults and the call log cover
	// both.
	top := http.NewServeMux()
	token := simkit.Handle(simkit.Handlers{}, s.oauthToken)
	top.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		token(w, r)
	})
	top.Handle("/", s.authed(api))
	return s.Middleware(top)
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

// Discovery: the project group is added to the real server's group list,
// so a discovery client or REST mapper finds it next to the real groups.
// The real server is asked for the plain APIGroupList, not the aggregated
// discovery document a recent client-go prefers; client-go falls back to
// per-group documents when it gets the plain list.

var projectGroup = metav1.APIGroup{
	TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
	Name:             Group,
	Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: APIVersion, Version: Version}},
	PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: APIVersion, Version: Version},
}

// projectResources are OpenShift's, with the verbs the simulator serves.
var projectResources = metav1.APIResourceList{
	TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
	GroupVersion: APIVersion,
	APIResources: []metav1.APIResource{
		{Name: "projectrequests", Namespaced: false, Kind: "ProjectRequest", Verbs: metav1.Verbs{"create"}},
		{Name: "projects", Namespaced: false, Kind: "Project", Verbs: metav1.Verbs{"delete"}},
	},
}

func (s *Server) apiGroups(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.kube.Proxy.Host.JoinPath("/apis").String(), nil)
	if err != nil {
		writeErr(w, err)
		return
	}
	req.Header.Set("Accept", "application/json")
	// The proxy's transport carries the cluster's credentials.
	resp, err := (&http.Client{Transport: s.kube.Proxy.Transport}).Do(req)
	var list metav1.APIGroupList
	if err == nil {
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK { // the API server's own error, passed on
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
			return
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
	}
	if err != nil {
		writeErr(w, fmt.Errorf("discovery from the API server: %w", err))
		return
	}
	list.Groups = append(list.Groups, projectGroup)
	simkit.WriteJSON(w, http.StatusOK, list)
}
