package ranchersim

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Defaults of Options.
const (
	DefaultAccessKey   = "token-sim01"
	DefaultSecretKey   = "sim-secret-key"
	DefaultClusterID   = "c-m-sim00001"
	DefaultClusterName = "sim"
	DefaultUserID      = "user-sim01"
)

// DefaultRoleTemplates are the built-in project role templates of Rancher
// 2.x that the simulator knows; a binding to another one is a 422.
var DefaultRoleTemplates = []string{
	"project-owner", "project-member", "read-only", "create-ns", "projectroletemplatebindings-manage",
	"projectcatalogs-manage", "workloads-manage", "workloads-view", "ingress-manage", "ingress-view",
	"services-manage", "services-view", "secrets-manage", "secrets-view", "configmaps-manage", "configmaps-view",
	"persistentvolumeclaims-manage", "persistentvolumeclaims-view", "serviceaccounts-manage",
	"serviceaccounts-view", "edit", "view", "admin",
}

// Options configure a simulator. The zero value serves one cluster with the
// default keys and no Kubernetes behind it.
type Options struct {
	// AccessKey and SecretKey are the API key pair (the agent's username and
	// password), accepted as HTTP basic auth or as "Bearer access:secret".
	AccessKey, SecretKey string
	// ClusterID (c-m-…) and ClusterName describe the one downstream cluster.
	ClusterID, ClusterName string
	// UserID is the user the key belongs to: creatorId of new objects and
	// the subject of the creator-project-owner binding Rancher adds to
	// every project it creates.
	UserID string
	// Kube is the cluster's API server. Nil means none: namespace routes,
	// importYaml and /k8s/clusters answer 503 ClusterUnavailable, the rest
	// works (handy for tests of the management API alone).
	Kube *rest.Config
	// Provisioning paces the provisioned clusters' simulated controllers
	// (see ProvisioningOptions); the zero value takes the defaults.
	Provisioning ProvisioningOptions
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the simulator. Management state sits behind one mutex, which is
// never held during a Kubernetes call.
type Server struct {
	opts Options
	log  *slog.Logger
	kube *kubeClient // nil without Options.Kube

	mu       sync.Mutex
	projects simkit.Store[Project] // by id "c-…:p-…"
	bindings simkit.Store[Binding] // by id "p-…:prtb-…"
	imports  []Import
	prov     provState       // provisioned clusters, their nodes, tokens, bindings; v1 secrets
	agents   map[string]bool // imported clusters whose agent connected (clusters.go)

	simkit.Base
}

// New builds a simulator; it does not listen (Start, NewTestServer, Handler).
func New(opts Options) (*Server, error) {
	opts.AccessKey = cmp.Or(opts.AccessKey, DefaultAccessKey)
	opts.SecretKey = cmp.Or(opts.SecretKey, DefaultSecretKey)
	opts.ClusterID = cmp.Or(opts.ClusterID, DefaultClusterID)
	opts.ClusterName = cmp.Or(opts.ClusterName, DefaultClusterName)
	opts.UserID = cmp.Or(opts.UserID, DefaultUserID)
	opts.Provisioning = opts.Provisioning.withDefaults()
	log := simkit.Defaults("ranchersim", &opts.Now, &opts.Logger)
	s := &Server{opts: opts, log: log, agents: map[string]bool{}}
	s.Faults = newFaults()
	s.prov.clusters.Put(opts.ClusterID, &Cluster{ID: opts.ClusterID, Name: opts.ClusterName, Created: s.now(), own: true})
	if opts.Kube != nil {
		k, err := newKubeClient(opts.Kube)
		if err != nil {
			return nil, fmt.Errorf("ranchersim: %w", err)
		}
		s.kube = k
	}
	// Rancher has a Default and a System project in every cluster.
	for _, name := range []string{"Default", "System"} {
		s.addProject(&Project{Name: name, Description: name + " project created for the cluster",
			Labels: map[string]string{"authz.management.cattle.io/" + strings.ToLower(name) + "-project": "true"}}, false)
	}
	s.Init(s.routes(), s.log)
	return s, nil
}

// Options returns the effective options (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// NewTestServer starts a simulator on 127.0.0.1 (an httptest server) closed
// by t.Cleanup.
func NewTestServer(t testing.TB, opts Options) *Server { return simkit.NewTestServer(t, New, opts) }

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// Handlers run under s.mu (the call log has read the body into memory
	// already, so a slow client holds no lock), except those that call the
	// Kubernetes API, which take it themselves (kubeAPI).
	kubeAPI := func(pattern string, h http.Handler) { mux.Handle(pattern, s.authed(h)) }
	api := func(pattern string, h http.Handler) { kubeAPI(pattern, s.serial(h)) }
	// Each pair of paths below is one collection: norman matches type
	// names case-insensitively; links use the camel case plural, the agent
	// the lower case one.
	both := func(method, prefix, lower, camel string, h http.Handler) {
		api(method+" "+prefix+lower, h)
		api(method+" "+prefix+camel, h)
	}

	api("GET /v3", handle(s.root))
	api("POST /v3", handle(s.root))
	api("GET /v3/{$}", handle(s.root))

	// The simulator's own cluster and the provisioned ones (clusters.go).
	clustersType.routes(s, api, []string{"/v3/clusters"}, nil, true)
	kubeAPI("POST /v3/clusters/{cluster}", handle(s.clusterAction))
	api("PUT /v3/clusters/{id}", handle(update(s, clustersType, s.updateCluster)))

	projectsType.routes(s, api, []string{"/v3/projects"}, handle(s.createProject), true)
	api("PUT /v3/projects/{id}", handle(update(s, projectsType, updateProject)))
	kubeAPI("DELETE /v3/projects/{id}", handle(s.deleteProject))
	both("GET", "/v3/projects/{project}/", "projectroletemplatebindings", "projectRoleTemplateBindings", handle(bindingsType.list(s)))
	bindingsType.routes(s, api, []string{"/v3/projectroletemplatebindings", "/v3/projectRoleTemplateBindings"}, handle(s.createBinding), false)

	// Namespaces are cluster-scoped: reachable under the cluster's link
	// (/v3/clusters/<id>/namespaces) and, as their self links say, under
	// /v3/cluster/<id>/namespaces.
	for _, prefix := range []string{"/v3/clusters/{cluster}/namespaces", "/v3/cluster/{cluster}/namespaces"} {
		kubeAPI("GET "+prefix, handle(s.onKube(s.listNamespaces)))
		kubeAPI("POST "+prefix, handle(s.onKube(s.createNamespace)))
		kubeAPI("GET "+prefix+"/{name}", handle(s.onKube(s.getNamespace)))
		kubeAPI("PUT "+prefix+"/{name}", handle(s.onKube(s.updateNamespace)))
	}

	// Provisioning (provisioning.go): steve's v1 clusters and secrets.
	v1ClustersType.routes(s, api, []string{"/v1/provisioning.cattle.io.clusters", "/v1/provisioning.cattle.io.cluster"}, handle(s.createV1Cluster), false)
	secretsType.routes(s, api, []string{"/v1/secrets"}, handle(s.createSecret), false)
	// Waldur's client posts tokens to the singular; the collection link is
	// the plural.
	tokensType.routes(s, api, []string{"/v3/clusterregistrationtoken", "/v3/clusterregistrationtokens", "/v3/clusterRegistrationTokens"}, handle(s.createToken), true)
	both("GET", "/v3/clusters/{cluster}/", "clusterregistrationtokens", "clusterRegistrationTokens", handle(tokensType.list(s)))
	clusterBindingsType.routes(s, api, []string{"/v3/clusterroletemplatebindings", "/v3/clusterRoleTemplateBindings"}, handle(s.createClusterBinding), false)
	both("GET", "/v3/clusters/{cluster}/", "clusterroletemplatebindings", "clusterRoleTemplateBindings", handle(clusterBindingsType.list(s)))
	nodesType.routes(s, api, []string{"/v3/nodes"}, nil, false)
	api("GET /v3/clusters/{cluster}/nodes", handle(nodesType.list(s)))
	api("POST /v3/nodes/{id}", handle(s.nodeAction))
	// Not Rancher's API: what a VM running system-agent-install.sh does
	// (nodes.go). It takes the registration token instead of an API key
	// and sits behind the fault middleware, so Down fails it too.
	mux.Handle("POST "+RegisterPath, s.serial(handle(s.register)))

	mux.HandleFunc("GET /v3/import/{file}", s.importManifest) // imported clusters' agent manifests (clusters.go)

	mux.Handle("/k8s/clusters/{cluster}/{rest...}", s.authed(http.HandlerFunc(s.proxyKube)))

	mux.Handle("/", s.authed(handle(func(*http.Request, struct{}) (any, error) { return nil, errNoRoute })))

	// The admin API sits outside the middleware: faults and Down must not
	// lock a test out of inspecting the simulator.
	top := http.NewServeMux()
	s.adminRoutes(top)
	top.Handle("/", s.Middleware(mux))
	return top
}

// serial serves h under s.mu.
func (s *Server) serial(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// authed checks the API key before anything else, as Rancher's auth filter
// does: an unknown path with a bad key is a 401, not a 404.
func (s *Server) authed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authenticated(r) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, unauthorizedBody)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// authenticated accepts the key pair as basic auth (the agent's way) or as
// a bearer token "access:secret" (Rancher's other way).
func (s *Server) authenticated(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		tok, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		user, pass, ok = strings.Cut(tok, ":")
		ok = ok && bearer
	}
	return ok && subtle.ConstantTimeCompare([]byte(user), []byte(s.opts.AccessKey))&
		subtle.ConstantTimeCompare([]byte(pass), []byte(s.opts.SecretKey)) == 1
}

// root is the v3 API root; the agent POSTs to it as a login probe and only
// looks at the status.
func (s *Server) root(r *http.Request, _ struct{}) (any, error) {
	b := simkit.BaseURL(r) + "/v3"
	return map[string]any{
		"id": "v3", "type": "apiRoot", "baseType": "apiRoot", "apiVersion": map[string]string{
			"group": "management.cattle.io", "path": "/v3", "version": "v3",
		},
		"links": map[string]string{
			"self": b, "clusters": b + "/clusters", "projects": b + "/projects",
			"projectRoleTemplateBindings": b + "/projectRoleTemplateBindings",
		},
	}, nil
}

// Call is one logged request, with its body except for /k8s/ requests,
// which stream through (the API key is in the unlogged Authorization).
type Call = simkit.Call

// Fault makes matching requests misbehave (see simkit.Fault).
// QueryContains tells apart requests that share a path, e.g.
// "action=importYaml" from GET cluster; a Status without Body answers a
// Rancher error body.
type Fault = simkit.Fault

// newFaults is the call log and fault registry with Rancher's bodies.
func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody: "503 Service Temporarily Unavailable", // Rancher's ingress while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"baseType":"error","type":"error","status":%d,"code":"ServerError","message":"injected fault"}`, status)
		},
		KeepBody: func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/k8s/") },
	})
}

// adminRoutes serve under /sim/, without a key and past faults and the
// call log, what the methods of the same names answer and simkit's fault
// routes, for a simulator run as a process (make run); listen on loopback
// only.
func (s *Server) adminRoutes(mux *http.ServeMux) {
	get := func(path string, f func() any) {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) { simkit.WriteJSON(w, http.StatusOK, f()) })
	}
	get("/sim/projects", func() any { return s.Projects() })
	get("/sim/bindings", func() any { return s.Bindings("") })
	get("/sim/imports", func() any { return s.Imports() })
	get("/sim/calls", func() any { return s.Calls() })
	get("/sim/inventory", func() any { return s.Inventory() })
	get("/sim/drains", func() any { return s.Drains() })
	s.AdminRoutes(mux, func(w http.ResponseWriter, msg string) { writeErr(w, invalidBody(msg)) })
}
