package ranchersim

import (
	"cmp"
	"fmt"
	"log/slog"
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
// 2.x that the simulator knows when Options.RoleTemplates is empty.
var DefaultRoleTemplates = []string{
	"project-owner", "project-member", "read-only",
	"create-ns", "projectroletemplatebindings-manage", "projectcatalogs-manage",
	"workloads-manage", "workloads-view", "ingress-manage", "ingress-view",
	"services-manage", "services-view", "secrets-manage", "secrets-view",
	"configmaps-manage", "configmaps-view", "persistentvolumeclaims-manage",
	"persistentvolumeclaims-view", "serviceaccounts-manage", "serviceaccounts-view",
	"edit", "view", "admin",
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
	// UniqueProjectNames makes a second project with an existing name in
	// the cluster a 409, as some sites enforce; Rancher itself allows it.
	UniqueProjectNames bool
	// AllowDuplicateBindings gives PRTBs random names, so an identical
	// binding can be created twice (Rancher before 2.14).
	AllowDuplicateBindings bool
	// NoDefaultProjects leaves out the "Default" and "System" projects
	// Rancher has in every cluster.
	NoDefaultProjects bool
	// NoCreatorBinding leaves out the creator-project-owner binding.
	NoCreatorBinding bool
	// RoleTemplates are the known role template ids; default
	// DefaultRoleTemplates. A binding to another one is a 422.
	RoleTemplates []string
	// ClusterRoleTemplates are the known cluster role template ids; default
	// DefaultClusterRoleTemplates. A cluster binding to another one is a 422.
	ClusterRoleTemplates []string
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
	// roles and clusterRoles are the known (cluster) role template ids.
	roles, clusterRoles map[string]bool
	created             time.Time // of the cluster object

	mu       sync.Mutex
	projects *simkit.Store[Project] // by id "c-…:p-…"
	bindings *simkit.Store[Binding] // by id "p-…:prtb-…"
	imports  []Import
	prov     provState // provisioned clusters, their nodes, tokens, bindings; v1 secrets

	simkit.Base
}

// New builds a simulator; it does not listen (see Start, NewTestServer,
// Handler).
func New(opts Options) (*Server, error) {
	opts.AccessKey = cmp.Or(opts.AccessKey, DefaultAccessKey)
	opts.SecretKey = cmp.Or(opts.SecretKey, DefaultSecretKey)
	opts.ClusterID = cmp.Or(opts.ClusterID, DefaultClusterID)
	opts.ClusterName = cmp.Or(opts.ClusterName, DefaultClusterName)
	opts.UserID = cmp.Or(opts.UserID, DefaultUserID)
	if len(opts.RoleTemplates) == 0 {
		opts.RoleTemplates = DefaultRoleTemplates
	}
	if len(opts.ClusterRoleTemplates) == 0 {
		opts.ClusterRoleTemplates = DefaultClusterRoleTemplates
	}
	opts.Provisioning = opts.Provisioning.withDefaults()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{
		opts:         opts,
		log:          opts.Logger.With("component", "ranchersim"),
		roles:        setOf(opts.RoleTemplates),
		clusterRoles: setOf(opts.ClusterRoleTemplates),
		created:      opts.Now().UTC(),
		projects:     simkit.NewStore[Project](),
		bindings:     simkit.NewStore[Binding](),
		prov:         newProvState(),
	}
	s.Faults = newFaults()
	if opts.Kube != nil {
		k, err := newKubeClient(opts.Kube)
		if err != nil {
			return nil, fmt.Errorf("ranchersim: %w", err)
		}
		s.kube = k
	}
	if !opts.NoDefaultProjects {
		for _, name := range []string{"Default", "System"} {
			s.addProject(&Project{Name: name, Description: name + " project created for the cluster",
				Labels: map[string]string{"authz.management.cattle.io/" + strings.ToLower(name) + "-project": "true"}}, false)
		}
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

func setOf(list []string) map[string]bool {
	set := map[string]bool{}
	for _, v := range list {
		set[v] = true
	}
	return set
}
