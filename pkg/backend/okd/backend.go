package okd

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/config"
)

// Type is the backend_type this package serves.
const Type = "okd"

// Resources the backend uses.
var (
	ProjectGVR        = schema.GroupVersionResource{Group: "project.openshift.io", Version: "v1", Resource: "projects"}
	ProjectRequestGVR = schema.GroupVersionResource{Group: "project.openshift.io", Version: "v1", Resource: "projectrequests"}
	namespaceGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	quotaGVR          = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	roleBindingGVR    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// Marks and annotations.
const (
	// LabelManagedBy=ManagedByValue on a project's namespace (and on the
	// role bindings sitebus makes) marks it as sitebus's; objects without
	// it are never changed. A label, not an annotation, so List can select.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "sitebus"
	// AnnotationResourceUUID records the Waldur resource a project is for,
	// so a project of a reused slug is not handed to another resource.
	AnnotationResourceUUID = "sitebus.io/resource-uuid"
	// The Python plugin's project annotations.
	AnnotationDescription  = "openshift.io/description"
	AnnotationDisplayName  = "openshift.io/display-name"
	AnnotationOrganization = "waldur/organization"
	AnnotationParent       = "waldur/parent"
	// On the quota: AnnotationStatus is "paused" or "downscaled" while the
	// quota is reduced, and AnnotationSavedHard the hard map (JSON) from
	// before the first Pause or Downscale, for Restore. Kept on the quota
	// so that one update changes both the limits and the state.
	AnnotationStatus    = "sitebus.io/status"
	AnnotationSavedHard = "sitebus.io/hard-before-pause"
)

// DefaultFieldManager names sitebus in managedFields.
const DefaultFieldManager = "sitebus"

// defaultTimeout bounds one request to the OAuth server as the API
// requests are bounded.
const defaultTimeout = kubeapi.DefaultTimeout

// Options are the dependencies of a Backend.
type Options struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// WrapTransport, when set, wraps the HTTP transport to the API server
	// (tracing, request metrics); it sees every attempt, a 401 included.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// RootCAs, when set, are the CAs the API server's certificate is
	// verified against instead of the system's (a private cluster CA).
	RootCAs []byte
	// Resources finds the offering's Waldur resources, to adopt the
	// projects the Python agent made for them; nil refuses every project
	// without sitebus's mark.
	Resources backend.ResourceFinder
	// Registerer exports sitebus_adoptions_total; nil does not.
	Registerer prometheus.Registerer
}

// Backend manages the OpenShift projects of one offering.
type Backend struct {
	settings Settings
	quota    quotaCodec
	dyn      dynamic.Interface
	disco    discovery.DiscoveryInterface
	tokens   tokenSource
	log      *slog.Logger

	resources backend.ResourceFinder
	adoptions *prometheus.CounterVec
	identity  tokenUser
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.UsageLister = (*Backend)(nil)
)

// New returns a backend for an offering's settings, as DecodeSettings
// returns them (or built from DefaultSettings), and backend_components.
// It fills in no defaults and does not contact the cluster.
func New(s Settings, components map[string]config.BackendComponent, opts Options) (*Backend, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	codec, err := newQuotaCodec(components)
	if err != nil {
		return nil, err
	}
	log := backend.Logger(opts.Logger, Type, "api_url", s.APIURL)
	oauthClient := &http.Client{Timeout: defaultTimeout, Transport: oauthTransport(s, opts)}
	tokens := newTokenSource(s, oauthClient)
	cfg := &rest.Config{
		Host:            s.apiBase(),
		TLSClientConfig: rest.TLSClientConfig{Insecure: !s.VerifyCert},
	}
	kubeapi.SetDefaults(cfg) // user agent, timeout and rate limit as managedns
	if s.VerifyCert {
		cfg.CAData = opts.RootCAs
	}
	// Wrap composes outwards: the guard innermost, so the caller's wrapper
	// sees what it refused as a failed request; authTransport around the
	// caller's wrapper, so its metrics see the 401 and the retry as two
	// requests.
	kubeapi.GuardAnswers(cfg, "OpenShift")
	if opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &authTransport{next: rt, src: tokens, log: log} })
	dyn, disco, err := kubeapi.Clients(Type, cfg)
	if err != nil {
		return nil, err
	}
	return &Backend{settings: s, quota: codec, dyn: dyn, disco: disco, tokens: tokens, log: log,
		resources: opts.Resources, adoptions: backend.AdoptionsCounter(opts.Registerer)}, nil
}

// oauthTransport reaches the OAuth token endpoint with the settings' TLS
// verification.
func oauthTransport(s Settings, opts Options) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: !s.VerifyCert} //nolint:gosec // verify_cert: false is the operator's choice
	if s.VerifyCert && len(opts.RootCAs) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(opts.RootCAs)
		t.TLSClientConfig.RootCAs = pool
	}
	var rt http.RoundTripper = t
	if opts.WrapTransport != nil {
		rt = opts.WrapTransport(rt)
	}
	return rt
}

// Type implements backend.Backend.
func (b *Backend) Type() string { return Type }

// Settings returns the settings in force.
func (b *Backend) Settings() Settings { return b.settings }

// BackendID is the project's name (see Settings.ProjectName), validated,
// without a call to the cluster.
func (b *Backend) BackendID(r backend.Resource) (string, error) {
	return b.settings.ProjectName(r)
}
