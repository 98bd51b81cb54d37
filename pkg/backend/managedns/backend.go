package managedns

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/config"
)

// Type is the backend_type this package serves.
const Type = "k8s-ut-namespace"

// The ManagedNamespace custom resource.
const (
	Group    = "provisioning.hpc.ut.ee"
	Version  = "v1"
	Kind     = "ManagedNamespace"
	Resource = "managednamespaces"
)

// GVR addresses ManagedNamespaces with the dynamic client.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// Marks sitebus puts on its CRs.
const (
	// LabelManagedBy=ManagedByValue marks a CR as sitebus's; CRs without
	// it are never changed.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "sitebus"
	// AnnotationResourceUUID records the Waldur resource the CR is for.
	AnnotationResourceUUID = "sitebus.io/resource-uuid"
	// AnnotationSavedQuota holds spec.quota (JSON) from before the first
	// Pause or Downscale, for Restore.
	AnnotationSavedQuota = "sitebus.io/quota-before-pause"
	// AnnotationStatus is "paused" or "downscaled" while the quota is
	// reduced.
	AnnotationStatus = "sitebus.io/status"
)

// DefaultFieldManager names sitebus in managedFields.
const DefaultFieldManager = "sitebus"

// Options are the dependencies of a Backend.
type Options struct {
	// RESTConfig reaches the cluster; nil means Settings.KubeconfigPath,
	// or the in-cluster configuration when that is empty.
	RESTConfig *rest.Config
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// FieldManager defaults to DefaultFieldManager.
	FieldManager string
	// WrapTransport, when set, wraps the HTTP transport to the API server
	// (tracing, request metrics).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Resources finds the offering's Waldur resources, to adopt the CRs
	// the Python agent made for them; nil refuses every CR without
	// sitebus's mark.
	Resources backend.ResourceFinder
	// Registerer exports sitebus_adoptions_total; nil does not.
	Registerer prometheus.Registerer
}

// Backend manages ManagedNamespace CRs in one CR namespace.
type Backend struct {
	settings     Settings
	quota        quotaCodec
	crs          dynamic.ResourceInterface
	dyn          dynamic.Interface // pods and PVCs, for usage
	disco        discovery.DiscoveryInterface
	log          *slog.Logger
	fieldManager string
	resources    backend.ResourceFinder
	adoptions    *prometheus.CounterVec
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.UsageLister = (*Backend)(nil)
)

// New returns a backend for an offering's settings, as ParseSettings
// returns them (or built from DefaultSettings), and backend_components.
// It fills in no defaults: an empty value there is one the file set.
// It does not contact the cluster.
func New(s Settings, components map[string]config.BackendComponent, opts Options) (*Backend, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cfg, err := restConfig(s, opts.RESTConfig)
	if err == nil && opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	if err != nil {
		return nil, err
	}
	dyn, disco, err := kubeapi.Clients(Type, cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{
		settings:     s,
		quota:        quotaCodec{mapping: s.QuotaMapping, components: components},
		crs:          dyn.Resource(GVR).Namespace(s.CRNamespace),
		dyn:          dyn,
		disco:        disco,
		log:          backend.Logger(opts.Logger, Type, "cr_namespace", s.CRNamespace),
		fieldManager: opts.FieldManager,
		resources:    opts.Resources,
		adoptions:    backend.AdoptionsCounter(opts.Registerer),
	}
	if b.fieldManager == "" {
		b.fieldManager = DefaultFieldManager
	}
	return b, nil
}

func restConfig(s Settings, given *rest.Config) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case given != nil:
		cfg = rest.CopyConfig(given)
	case s.KubeconfigPath != "":
		if cfg, err = clientcmd.BuildConfigFromFlags("", s.KubeconfigPath); err != nil {
			return nil, fmt.Errorf("k8s-ut-namespace: kubeconfig_path %s: %w", s.KubeconfigPath, err)
		}
	default:
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("k8s-ut-namespace: no kubeconfig_path and not in a cluster: %w", err)
		}
	}
	kubeapi.SetDefaults(cfg)
	kubeapi.GuardAnswers(cfg, "Kubernetes")
	return cfg, nil
}

// Type implements backend.Backend.
func (b *Backend) Type() string { return Type }

// Settings returns the settings in force (defaults filled in).
func (b *Backend) Settings() Settings { return b.settings }

// BackendID is namespace_prefix + slug, validated as a namespace name
// that no order may have (see reservedNamespace).
func (b *Backend) BackendID(r backend.Resource) (string, error) {
	name, err := namespaceName(b.settings.NamespacePrefix, r)
	if err != nil {
		return "", err
	}
	if err := reservedNamespace(name, b.settings.CRNamespace); err != nil {
		return "", err
	}
	return name, nil
}
