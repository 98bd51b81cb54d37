package ranchersim

import (
	"crypto/subtle"
	"io"
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// handler serves one authenticated API request; a returned error is written
// as Rancher's error body.
type handler func(w http.ResponseWriter, r *http.Request) *apiError

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h handler) { mux.Handle(pattern, s.authed(h)) }
	// norman matches type names case-insensitively; links use the camel
	// case plural, the agent the lower case one.
	prtb := func(method, rest string, h handler) {
		api(method+" /v3/projectroletemplatebindings"+rest, h)
		api(method+" /v3/projectRoleTemplateBindings"+rest, h)
	}

	api("GET /v3", s.root)
	api("POST /v3", s.root)
	api("GET /v3/{$}", s.root)

	// The simulator's own cluster and the provisioned ones (provisioning.go).
	api("GET /v3/clusters", s.listAllClusters)
	api("GET /v3/clusters/{cluster}", s.getAnyCluster)
	api("POST /v3/clusters/{cluster}", s.anyClusterAction)
	s.provisioningRoutes(mux, api)

	api("GET /v3/projects", projectsType.list(s))
	api("POST /v3/projects", s.createProject)
	api("GET /v3/projects/{id}", projectsType.get(s))
	api("PUT /v3/projects/{id}", s.updateProject)
	api("DELETE /v3/projects/{id}", s.deleteProject)
	api("GET /v3/projects/{id}/projectroletemplatebindings", s.listProjectBindings)
	api("GET /v3/projects/{id}/projectRoleTemplateBindings", s.listProjectBindings)

	prtb("GET", "", bindingsType.list(s))
	prtb("POST", "", s.createBinding)
	prtb("GET", "/{id}", bindingsType.get(s))
	prtb("DELETE", "/{id}", bindingsType.remove(s))

	// Namespaces are cluster-scoped: reachable under the cluster's link
	// (/v3/clusters/<id>/namespaces) and, as their self links say, under
	// /v3/cluster/<id>/namespaces.
	for _, prefix := range []string{"/v3/clusters/{cluster}/namespaces", "/v3/cluster/{cluster}/namespaces"} {
		api("GET "+prefix, s.listNamespaces)
		api("POST "+prefix, s.createNamespace)
		api("GET "+prefix+"/{name}", s.getNamespace)
		api("DELETE "+prefix+"/{name}", s.deleteNamespace)
	}

	mux.Handle("/k8s/clusters/{cluster}/{rest...}", s.authed(s.proxyKube))

	mux.Handle("/", s.authed(func(http.ResponseWriter, *http.Request) *apiError { return errNoRoute }))

	// The admin API sits outside the middleware: faults and Down must not
	// lock a test out of inspecting the simulator.
	top := http.NewServeMux()
	s.adminRoutes(top)
	top.Handle("/", s.Faults.Middleware(mux))
	return top
}

// authed checks the API key before anything else, as Rancher's auth filter
// does: an unknown path with a bad key is a 401, not a 404.
func (s *Server) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authenticated(r) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, unauthorizedBody)
			return
		}
		if err := h(w, r); err != nil {
			writeErr(w, err)
		}
	})
}

// authenticated accepts the key pair as basic auth (the agent's way) or as
// a bearer token "access:secret" (Rancher's other way).
func (s *Server) authenticated(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !found {
			return false
		}
		user, pass, ok = strings.Cut(tok, ":")
		if !ok {
			return false
		}
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(s.opts.AccessKey)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(s.opts.SecretKey)) == 1
	return userOK && passOK
}

// root is the v3 API root; the agent POSTs to it as a login probe and only
// looks at the status.
func (s *Server) root(w http.ResponseWriter, r *http.Request) *apiError {
	b := simkit.BaseURL(r) + "/v3"
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"id": "v3", "type": "apiRoot", "baseType": "apiRoot", "apiVersion": map[string]string{
			"group": "management.cattle.io", "path": "/v3", "version": "v3",
		},
		"links": map[string]string{
			"self": b, "clusters": b + "/clusters", "projects": b + "/projects",
			"projectRoleTemplateBindings": b + "/projectRoleTemplateBindings",
		},
	})
	return nil
}

// cluster resolves the {cluster} path value; only the configured cluster
// exists.
func (s *Server) cluster(r *http.Request) *apiError {
	if id := r.PathValue("cluster"); id != s.opts.ClusterID {
		return notFound(`clusters.management.cattle.io "` + id + `" not found`)
	}
	return nil
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.cluster(r); err != nil {
		return err
	}
	simkit.WriteJSON(w, http.StatusOK, s.clusterRep(simkit.BaseURL(r)))
	return nil
}

// clusterAction serves POST /v3/clusters/<id>?action=…; only importYaml is
// simulated.
func (s *Server) clusterAction(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.cluster(r); err != nil {
		return err
	}
	switch action := paramValue(r, "action"); action {
	case "importYaml":
		return s.importYAML(w, r)
	case "":
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "Method POST not supported")
	default:
		return newErr(http.StatusUnprocessableEntity, "InvalidAction", "Invalid action: "+action)
	}
}
