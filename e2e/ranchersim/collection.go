package ranchersim

import (
	"net/http"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// normanType is one resource of the management API as its plain handlers
// serve it, each under s.mu: the list (norman filters; under a {cluster}
// path, that cluster's objects only), the show by {id}, and the delete,
// which answers the object in state removing, as Rancher does.
type normanType[T any] struct {
	name string // the norman type, e.g. "clusterRegistrationToken"
	path string // its collection, e.g. "/v3/clusterRegistrationTokens"
	// resource names it in a 404, e.g. "clusterregistrationtokens"; the
	// 404 names the object as Rancher does: by the part of the id after
	// "<cluster>:" unless fullID.
	resource string
	fullID   bool
	items    func(s *Server) map[string]*T
	cluster  func(v *T) string // nil: not cluster-scoped
	rep      func(s *Server, b string, v *T) map[string]any
}

func (nt *normanType[T]) notFound(id string) *apiError {
	name := id
	if _, n, ok := strings.Cut(id, ":"); ok && !nt.fullID {
		name = n
	}
	return notFound(nt.resource + `.management.cattle.io "` + name + `" not found`)
}

func (nt *normanType[T]) list(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		cluster := r.PathValue("cluster")
		b := simkit.BaseURL(r)
		s.mu.Lock()
		if cluster != "" && !s.knownCluster(cluster) {
			s.mu.Unlock()
			return notFoundCluster(cluster)
		}
		objs := []map[string]any{}
		for _, v := range nt.items(s) {
			if cluster == "" || nt.cluster(v) == cluster {
				objs = append(objs, nt.rep(s, b, v))
			}
		}
		s.mu.Unlock()
		writeCollection(w, r, nt.name, b+nt.path, objs)
		return nil
	}
}

func (nt *normanType[T]) get(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		s.mu.Lock()
		defer s.mu.Unlock()
		v := nt.items(s)[r.PathValue("id")]
		if v == nil {
			return nt.notFound(r.PathValue("id"))
		}
		simkit.WriteJSON(w, http.StatusOK, nt.rep(s, simkit.BaseURL(r), v))
		return nil
	}
}

func (nt *normanType[T]) remove(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		s.mu.Lock()
		defer s.mu.Unlock()
		id := r.PathValue("id")
		v := nt.items(s)[id]
		if v == nil {
			return nt.notFound(id)
		}
		delete(nt.items(s), id)
		rep := nt.rep(s, simkit.BaseURL(r), v)
		rep["state"] = "removing"
		simkit.WriteJSON(w, http.StatusOK, rep)
		return nil
	}
}

// The resources served by normanType alone.
var (
	projectsType = &normanType[project]{name: "project", path: "/v3/projects", resource: "projects",
		items: func(s *Server) map[string]*project { return s.projects },
		rep:   func(_ *Server, b string, p *project) map[string]any { return projectRep(b, p) }}
	bindingsType = &normanType[binding]{name: "projectRoleTemplateBinding", path: "/v3/projectRoleTemplateBindings",
		resource: "projectroletemplatebindings",
		items:    func(s *Server) map[string]*binding { return s.bindings },
		rep:      func(_ *Server, b string, pb *binding) map[string]any { return bindingRep(b, pb) }}
	tokensType = &normanType[regToken]{name: "clusterRegistrationToken", path: "/v3/clusterregistrationtokens",
		resource: "clusterregistrationtokens", fullID: true,
		items:   func(s *Server) map[string]*regToken { return s.prov.tokens },
		cluster: func(t *regToken) string { return t.clusterID },
		rep:     func(_ *Server, b string, t *regToken) map[string]any { return tokenRep(b, t) }}
	clusterBindingsType = &normanType[clusterBinding]{name: "clusterRoleTemplateBinding", path: "/v3/clusterRoleTemplateBindings",
		resource: "clusterroletemplatebindings",
		items:    func(s *Server) map[string]*clusterBinding { return s.prov.crtbs },
		cluster:  func(cb *clusterBinding) string { return cb.clusterID },
		rep:      func(_ *Server, b string, cb *clusterBinding) map[string]any { return clusterBindingRep(b, cb) }}
)
