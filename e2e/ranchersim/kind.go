package ranchersim

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// kind is one resource type as its plain handlers serve it, each under
// s.mu: list, show and delete, in the wire format of Rancher's v3 (norman)
// API or, with steve set, of its v1 (steve) API. Each type is one entry
// below; creates, updates and actions have handlers of their own.
type kind[T any] struct {
	// name is the type (norman's, or steve's resourceType); path is
	// norman's collection link, e.g. "/v3/clusterRegistrationTokens".
	name, path string
	steve      bool
	// resource names the type in a 404 as Rancher does, e.g.
	// "nodes.management.cattle.io" or "secrets", followed by the object's
	// name: its id after "<cluster>:" or "<namespace>/", unless fullID.
	resource string
	fullID   bool
	items    func(s *Server) *simkit.Store[T]
	// scope is an object's cluster (a list under {cluster} shows its
	// objects), project (under {project}) or namespace (steve, under
	// {ns}); nil when it has none.
	scope func(v *T) string
	// keys, when set, are the fields a norman list filters on before it
	// renders v, which counts as a read of v.
	keys func(v *T) map[string]any
	// labels, when set, lets a steve list take a labelSelector.
	labels func(v *T) map[string]string
	// rep renders v; read counts the call as a read of v.
	rep func(s *Server, b string, v *T, read bool) map[string]any
	// deleted, when set, finishes a delete (v is out of items, rep the
	// answer). A norman delete answers the object in state removing, as
	// Rancher does, and transitioning if transitioning.
	deleted       func(s *Server, v *T, rep map[string]any)
	transitioning bool
}

func (k *kind[T]) key(r *http.Request) string {
	if k.steve {
		return r.PathValue("ns") + "/" + r.PathValue("name")
	}
	return r.PathValue("id")
}

func (k *kind[T]) notFound(id string) *apiError {
	name, sep := id, map[bool]string{false: ":", true: "/"}[k.steve]
	if _, n, ok := strings.Cut(id, sep); ok && !k.fullID {
		name = n
	}
	return &apiError{status: http.StatusNotFound, code: "NotFound", message: k.resource + ` "` + name + `" not found`, steve: k.steve}
}

func (k *kind[T]) list(s *Server) handler {
	return func(r *http.Request, _ struct{}) (any, error) {
		scope, conds, sel := cmp.Or(r.PathValue("cluster"), r.PathValue("project"), r.PathValue("ns")), conditions(r), labels.Everything()
		if k.labels != nil {
			// Steve parses labelSelector as the Kubernetes API does.
			var err error
			if sel, err = labels.Parse(r.URL.Query().Get("labelSelector")); err != nil {
				return nil, steveErr(http.StatusBadRequest, "BadRequest", err.Error())
			}
		}
		b := simkit.BaseURL(r)
		switch {
		case r.PathValue("cluster") != "" && !s.knownCluster(scope):
			return nil, clustersType.notFound(scope)
		case r.PathValue("project") != "" && s.projects.Get(scope) == nil:
			return nil, projectsType.notFound(scope)
		}
		objs := simkit.Map(k.items(s).ListByID(func(v *T) bool {
			return (scope == "" || k.scope(v) == scope) && (k.keys == nil || matches(k.keys(v), conds)) &&
				(k.labels == nil || sel.Matches(labels.Set(k.labels(v))))
		}), func(v *T) map[string]any { return k.rep(s, b, v, true) })
		if !k.steve {
			return collection(r, k.name, b+k.path, objs), nil
		}
		return map[string]any{ // steve's collection envelope
			"type": "collection", "resourceType": k.name, "count": len(objs), "revision": "1",
			"links":       map[string]string{"self": b + r.URL.Path},
			"createTypes": map[string]string{k.name: b + r.URL.Path},
			"actions":     map[string]string{},
			"data":        objs,
		}, nil
	}
}

// find is the object with id, or k's 404. Caller holds s.mu.
func (k *kind[T]) find(s *Server, id string) (*T, *apiError) {
	if v := k.items(s).Get(id); v != nil {
		return v, nil
	}
	return nil, k.notFound(id)
}

func (k *kind[T]) get(s *Server) handler {
	return func(r *http.Request, _ struct{}) (any, error) {
		v, err := k.find(s, k.key(r))
		if err != nil {
			return nil, err
		}
		return k.rep(s, simkit.BaseURL(r), v, true), nil
	}
}

// update serves a norman PUT of the object the path names: change checks
// the body and applies it under s.mu; the answer is the object as changed.
func update[T, In any](s *Server, k *kind[T], change func(v *T, in In) *apiError) func(*http.Request, In) (any, error) {
	return func(r *http.Request, in In) (any, error) {
		v, err := k.find(s, k.key(r))
		if err == nil {
			err = change(v, in)
		}
		if err != nil {
			return nil, err
		}
		return k.rep(s, simkit.BaseURL(r), v, false), nil
	}
}

func (k *kind[T]) remove(s *Server) handler {
	return func(r *http.Request, _ struct{}) (any, error) {
		v := k.items(s).Delete(k.key(r))
		if v == nil {
			return nil, k.notFound(k.key(r))
		}
		rep := k.rep(s, simkit.BaseURL(r), v, false)
		if k.deleted != nil {
			k.deleted(s, v, rep)
		}
		if !k.steve {
			removing(rep, k.transitioning)
		}
		return rep, nil
	}
}

// routes serves k at each of paths: its list (steve's also under {ns}),
// create when set, show and, unless noDelete, delete.
func (k *kind[T]) routes(s *Server, api func(string, http.Handler), paths []string, create http.Handler, noDelete bool) {
	item := map[bool]string{false: "/{id}", true: "/{ns}/{name}"}[k.steve]
	for _, p := range paths {
		colls := []string{p}
		if k.steve {
			colls = append(colls, p+"/{ns}")
		}
		for _, c := range colls {
			api("GET "+c, handle(k.list(s)))
			if create != nil {
				api("POST "+c, create)
			}
		}
		api("GET "+p+item, handle(k.get(s)))
		if !noDelete {
			api("DELETE "+p+item, handle(k.remove(s)))
		}
	}
}

// The resource types.
var (
	// The simulator's own cluster is listed with the provisioned ones.
	clustersType = &kind[Cluster]{name: "cluster", path: "/v3/clusters", resource: "clusters.management.cattle.io", fullID: true,
		items: func(s *Server) *simkit.Store[Cluster] { return &s.prov.clusters },
		rep:   (*Server).clusterRep}
	projectsType = &kind[Project]{name: "project", path: "/v3/projects", resource: "projects.management.cattle.io",
		items: func(s *Server) *simkit.Store[Project] { return &s.projects },
		rep:   func(_ *Server, b string, p *Project, _ bool) map[string]any { return projectRep(b, p) }}
	bindingsType = &kind[Binding]{name: "projectRoleTemplateBinding", path: "/v3/projectRoleTemplateBindings",
		resource: "projectroletemplatebindings.management.cattle.io",
		items:    func(s *Server) *simkit.Store[Binding] { return &s.bindings },
		scope:    func(pb *Binding) string { return pb.ProjectID },
		rep:      func(_ *Server, b string, pb *Binding, _ bool) map[string]any { return bindingRep(b, pb) }}
	tokensType = &kind[RegistrationToken]{name: "clusterRegistrationToken", path: "/v3/clusterregistrationtokens",
		resource: "clusterregistrationtokens.management.cattle.io", fullID: true,
		items: func(s *Server) *simkit.Store[RegistrationToken] { return &s.prov.tokens },
		scope: func(t *RegistrationToken) string { return t.ClusterID },
		rep:   func(_ *Server, b string, t *RegistrationToken, _ bool) map[string]any { return tokenRep(b, t) }}
	clusterBindingsType = &kind[ClusterBinding]{name: "clusterRoleTemplateBinding", path: "/v3/clusterRoleTemplateBindings",
		resource: "clusterroletemplatebindings.management.cattle.io",
		items:    func(s *Server) *simkit.Store[ClusterBinding] { return &s.prov.crtbs },
		scope:    func(cb *ClusterBinding) string { return cb.ClusterID },
		rep:      func(_ *Server, b string, cb *ClusterBinding, _ bool) map[string]any { return clusterBindingRep(b, cb) }}
	// A node list filters on clusterId and hostname before it counts as a
	// read of the nodes it shows, so a list of another cluster's nodes
	// does not move these on.
	nodesType = &kind[Node]{name: "node", path: "/v3/nodes", resource: "nodes.management.cattle.io", transitioning: true,
		items: func(s *Server) *simkit.Store[Node] { return &s.prov.nodes },
		scope: func(n *Node) string { return n.ClusterID },
		keys: func(n *Node) map[string]any {
			return map[string]any{"clusterId": n.ClusterID, "requestedHostname": n.Hostname, "hostname": n.Hostname}
		},
		rep: (*Server).nodeRep}
	// Deleting a v1 cluster removes its v3 cluster with it.
	v1ClustersType = &kind[ProvisioningCluster]{name: "provisioning.cattle.io.cluster", steve: true,
		resource: "clusters.provisioning.cattle.io",
		items:    func(s *Server) *simkit.Store[ProvisioningCluster] { return &s.prov.v1 },
		scope:    func(pc *ProvisioningCluster) string { return pc.Namespace },
		rep:      (*Server).v1ClusterRep,
		deleted: func(s *Server, pc *ProvisioningCluster, rep map[string]any) {
			s.removeCluster(pc.ClusterID)
			rep["metadata"].(map[string]any)["deletionTimestamp"] = s.now().Format(time.RFC3339)
		}}
	secretsType = &kind[Secret]{name: "secret", steve: true, resource: "secrets",
		items:  func(s *Server) *simkit.Store[Secret] { return &s.prov.secrets },
		scope:  func(sec *Secret) string { return sec.Namespace },
		labels: func(sec *Secret) map[string]string { return sec.Labels },
		rep:    func(_ *Server, b string, sec *Secret, _ bool) map[string]any { return secretRep(b, sec) }}
)
