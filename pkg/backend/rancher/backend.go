package rancher

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Type is the backend_type this package serves.
const Type = "rancher"

// Annotations on Rancher projects and namespaces.
const (
	// AnnotationManaged="true" marks a project (and namespace) as made by
	// the agent, Python or sitebus; a project without it is never changed.
	AnnotationManaged = "waldur/managed"
	// AnnotationOrganization and AnnotationProjectSlug are the customer's
	// and the Waldur project's slugs, as Python writes them.
	AnnotationOrganization = "waldur/organization"
	AnnotationProjectSlug  = "waldur/project_slug"
	// AnnotationStatus is "paused" or "downscaled" while the quota is
	// reduced; AnnotationSavedLimits holds the limits (JSON, Waldur units,
	// by component) from before the first Pause or Downscale, for Restore.
	AnnotationStatus      = "sitebus.io/status"
	AnnotationSavedLimits = "sitebus.io/limits-before-pause"
)

// Options are the dependencies of a Backend.
type Options struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// WrapTransport, when set, wraps the HTTP transport to Rancher
	// (tracing, request metrics).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Resources finds the offering's Waldur resources, to adopt the
	// projects the Python agent made for them with proof; nil takes them
	// as they are.
	Resources backend.ResourceFinder
	// Registerer exports sitebus_adoptions_total; nil does not.
	Registerer prometheus.Registerer
}

// Backend manages the Rancher projects of one offering in one cluster.
type Backend struct {
	settings Settings
	quota    quotaCodec
	api      *client
	log      *slog.Logger

	resources backend.ResourceFinder
	adoptions *prometheus.CounterVec
}

var _ backend.Backend = (*Backend)(nil)

// New returns a backend for an offering's settings, as DecodeSettings
// returns them (or built from DefaultSettings), and backend_components.
// It fills in no defaults and does not contact Rancher.
func New(s Settings, components map[string]config.BackendComponent, opts Options) (*Backend, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	codec, err := newQuotaCodec(components)
	if err != nil {
		return nil, err
	}
	log := backend.Logger(opts.Logger, Type, "cluster", s.ClusterID)
	return &Backend{settings: s, quota: codec, api: newClient(s, opts.WrapTransport, log), log: log,
		resources: opts.Resources, adoptions: backend.AdoptionsCounter(opts.Registerer)}, nil
}

// Type implements backend.Backend.
func (b *Backend) Type() string { return Type }

// Settings returns the settings in force.
func (b *Backend) Settings() Settings { return b.settings }

// BackendID is the name the resource's project (and namespace) gets,
// validated, without a call to Rancher; it also refuses a resource
// without customer or project slug, as Python's create does.
//
// The id Waldur keeps is the Rancher project id (c-xxx:p-yyy) that Create
// returns, as with the Python agent; a project's name is not unique in
// Rancher (rancher/rancher#54084), its id is. Every method taking a
// backend id accepts both: the project id Waldur holds, and the name
// BackendID gives, which is what a caller has before Create answered (a
// saga resumed after a crash, the conformance suite). A name is resolved
// by listing the cluster's projects.
func (b *Backend) BackendID(r backend.Resource) (string, error) {
	name, err := ProjectName(b.settings.ProjectPrefix, r)
	if err != nil {
		return "", err
	}
	if err := checkSlugs(r); err != nil {
		return "", err
	}
	return name, nil
}

// projectIDRe is a Rancher project id: <cluster>:<project>.
var projectIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*:[A-Za-z0-9][A-Za-z0-9._-]*$`)

// isProjectID tells a project id from a name (which has no ':').
func isProjectID(id string) bool { return projectIDRe.MatchString(id) }

// checkID refuses a backend id that is neither a project id of this
// cluster nor a project name.
func (b *Backend) checkID(id string) error {
	if isProjectID(id) {
		if cluster, _, _ := strings.Cut(id, ":"); cluster != b.settings.ClusterID {
			return fault.Errorf(fault.NotManaged, "Rancher project %s is not in cluster %s; refusing to touch it", id, b.settings.ClusterID)
		}
		return nil
	}
	if kubeapi.ValidateName("Rancher project name", id) != nil {
		return fault.Errorf(fault.Invalid, "%q is neither a Rancher project id (c-xxx:p-yyy) nor a project name", id)
	}
	return nil
}

func isManaged(p project) bool { return p.Annotations[AnnotationManaged] == "true" }

func (b *Backend) notManaged(p project) error {
	return fault.Errorf(fault.NotManaged, "Rancher project %s (%s) exists and is not managed by sitebus (no %s: \"true\" annotation); "+
		"refusing to touch it", p.Name, p.ID, AnnotationManaged)
}

func statusOf(p project) backend.Status {
	return backend.ParseStatus(p.Annotations[AnnotationStatus])
}
