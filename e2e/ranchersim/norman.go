package ranchersim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiError is an error answer: norman's {"baseType":"error","type":"error",
// "status":<int>,"code":…,"message":…[,"fieldName":…]}, or with steve set
// steve's {"type":"error","links":{},"code":…,"message":…,"status":…}.
type apiError struct {
	status    int
	code      string
	message   string
	fieldName string
	steve     bool
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func newErr(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, message: msg}
}

func steveErr(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, message: msg, steve: true}
}

func alreadyExists(msg string) *apiError { return newErr(http.StatusConflict, "AlreadyExists", msg) }

func missingRequired(field string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "MissingRequired", fieldName: field}
}

func invalidReference(field, msg string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "InvalidReference", fieldName: field, message: msg}
}

func invalidBody(msg string) *apiError {
	return newErr(http.StatusUnprocessableEntity, "InvalidBodyContent", msg)
}

func invalidAction(action string) *apiError {
	return newErr(http.StatusUnprocessableEntity, "InvalidAction", "Invalid action: "+action)
}

var (
	errNoKube = newErr(http.StatusServiceUnavailable, "ClusterUnavailable",
		"cluster not available: the simulator has no Kubernetes API server")
	errNoRoute   = newErr(http.StatusNotFound, "NotFound", "not found")
	errNoPost    = newErr(http.StatusMethodNotAllowed, "MethodNotAllow", "Method POST not supported")
	errNotNull   = newErr(http.StatusUnprocessableEntity, "NotNullable", "name")
	unauthorized = newErr(http.StatusUnauthorized, "Unauthorized", "registration token is not valid")
)

// unauthorizedBody is Rancher's 401 body verbatim: status is a string and
// there is no code (rancher/rancher#14235), unlike every other error.
const unauthorizedBody = `{"type":"error","status":"401","message":"must authenticate"}`

func writeErr(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"type": "error", "status": e.status, "code": e.code, "message": e.message}
	if e.steve {
		body["links"] = map[string]string{}
	} else {
		body["baseType"] = "error"
	}
	if e.fieldName != "" {
		body["fieldName"] = e.fieldName
	}
	simkit.WriteJSON(w, e.status, body)
}

// handler serves one authenticated API request without a body: its
// answer's body (a simkit.Reply for another status than 200), or an
// *apiError.
type handler = func(r *http.Request, _ struct{}) (any, error)

// handle adapts h (whose In decodeBody reads) once: its answer written as
// JSON, its error in its API's format.
func handle[In any](h func(r *http.Request, in In) (any, error)) http.Handler {
	return simkit.Handle(simkit.Handlers{Decode: decodeBody, WriteError: func(w http.ResponseWriter, err error) {
		writeErr(w, err.(*apiError))
	}}, h)
}

// param is one query parameter as sent.
type param struct{ key, value string }

// rawParams splits a raw query on '&' and each pair at its first '='. The
// Python agent sends some values unencoded (groupPrincipalId=keycloakoidc_
// group://…), so only a valid %XX escape is decoded and '+' stays '+'.
func rawParams(raw string) []param {
	var out []param
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		out = append(out, param{unescape(k), unescape(v)})
	}
	return out
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// paramValue returns the first value of key in the raw query.
func paramValue(r *http.Request, key string) string {
	p, _ := first(rawParams(r.URL.RawQuery), func(p param) bool { return p.key == key })
	return p.value
}

// nonFilters are the query parameters norman uses for paging and sorting.
var nonFilters = map[string]bool{"limit": true, "marker": true, "sort": true, "order": true, "reverse": true, "action": true}

// conditions are the norman filters of a list: field=value. Norman's
// _ne and _prefix modifiers are not served: sitebus sends neither.
func conditions(r *http.Request) []param {
	return slices.DeleteFunc(rawParams(r.URL.RawQuery), func(p param) bool { return nonFilters[p.key] })
}

// matches applies the conditions as norman does: a condition on a field the
// resource does not have is ignored; a null field equals nothing.
func matches(obj map[string]any, conds []param) bool {
	for _, c := range conds {
		if v, ok := obj[c.key]; ok && (v == nil || fmt.Sprint(v) != c.value) {
			return false
		}
	}
	return true
}

// collection filters objs by the request's conditions, sorts them by id
// and makes a norman collection of resourceType.
func collection(r *http.Request, resourceType, createURL string, objs []map[string]any) map[string]any {
	conds := conditions(r)
	filters := map[string]any{}
	for _, c := range conds {
		filters[c.key] = []map[string]string{{"modifier": "eq", "value": c.value}}
	}
	data := slices.DeleteFunc(append([]map[string]any{}, objs...), func(o map[string]any) bool { return !matches(o, conds) })
	sort.Slice(data, func(i, j int) bool { return fmt.Sprint(data[i]["id"]) < fmt.Sprint(data[j]["id"]) })
	self := simkit.BaseURL(r) + r.URL.Path
	if r.URL.RawQuery != "" {
		self += "?" + r.URL.RawQuery
	}
	return map[string]any{
		"type":         "collection",
		"resourceType": resourceType,
		"links":        map[string]string{"self": self},
		"createTypes":  map[string]string{resourceType: createURL},
		"actions":      map[string]string{},
		"pagination":   map[string]any{"limit": 1000, "total": len(data)},
		"sort":         map[string]any{"order": "asc", "reverse": self},
		"filters":      filters,
		"data":         data,
	}
}

// decodeBody reads a JSON object body (none into a struct{}); norman
// answers a malformed one with 422 InvalidBodyContent.
func decodeBody(r *http.Request, v any) error {
	if err := simkit.DecodeJSON(r, v); err != nil {
		return invalidBody("Failed to parse body: " + fmt.Sprint(err.(*simkit.Error).Body))
	}
	return nil
}

// Representations are maps, not structs: collection filters match on the
// fields of what is written, as norman's do.

// normanObj completes m, which holds an object's own fields, as every
// norman object: type and baseType typ, links self (also update and
// remove) plus links, actions, the created time, and state active.
func normanObj(typ, self string, created time.Time, m map[string]any, links, actions map[string]string) map[string]any {
	m["type"], m["baseType"] = typ, typ
	m["links"] = map[string]string{"self": self, "update": self, "remove": self}
	maps.Copy(m["links"].(map[string]string), links)
	m["actions"] = simkit.CloneOrEmpty(actions)
	m["created"] = created.UTC().Format(time.RFC3339)
	m["createdTS"] = created.UnixMilli()
	m["state"], m["transitioning"], m["transitioningMessage"] = "active", "no", ""
	return m
}

// removing marks a deleted object's answer, as Rancher's finalizers leave
// it until they are done.
func removing(m map[string]any, transitioning bool) map[string]any {
	m["state"] = "removing"
	if transitioning {
		m["transitioning"] = "yes"
	}
	return m
}

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
