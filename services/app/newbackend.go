package app

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/managedns"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// BackendOptions are how a backend built by NewBackend logs and
// instruments its platform calls; both may be zero.
type BackendOptions struct {
	Logger *slog.Logger
	// WrapTransport wraps the transport to the platform; target is what
	// it reaches ("kubernetes", "rancher", "openshift"), for metrics.
	WrapTransport func(rt http.RoundTripper, target string) http.RoundTripper
	// Resources finds the offering's Waldur resources, so the backend
	// adopts the objects the Python agent made for them; nil (operator
	// tools) refuses every object without sitebus's mark.
	Resources backend.ResourceFinder
	// Registerer exports the backends' metrics (adoptions); may be nil.
	Registerer prometheus.Registerer
}

// NewBackend builds the offering's backend name (an entry-point name as
// order_processing_backend gives it) from the settings the plan parsed,
// without a call to the platform. run and the operator tools (diagnostics)
// both build backends with it, so they reach a platform the same way.
func (op *OfferingPlan) NewBackend(name string, opts BackendOptions) (backend.Backend, error) {
	o := op.Config
	wrap := func(target string) func(http.RoundTripper) http.RoundTripper {
		if opts.WrapTransport == nil {
			return nil
		}
		return func(rt http.RoundTripper) http.RoundTripper { return opts.WrapTransport(rt, target) }
	}
	var (
		b   backend.Backend
		err error
	)
	switch name {
	case managedns.Type:
		b, err = managedns.New(op.ManagedNS, o.BackendComponents, managedns.Options{Logger: opts.Logger, WrapTransport: wrap("kubernetes"),
			Resources: opts.Resources, Registerer: opts.Registerer})
	case rancher.Type:
		b, err = rancher.New(op.Rancher, o.BackendComponents, rancher.Options{Logger: opts.Logger, WrapTransport: wrap("rancher"),
			Resources: opts.Resources, Registerer: opts.Registerer})
	case okd.Type:
		b, err = okd.New(op.OKD, o.BackendComponents, okd.Options{Logger: opts.Logger, WrapTransport: wrap("openshift"),
			Resources: opts.Resources, Registerer: opts.Registerer})
	case vcluster.Type:
		b, err = vcluster.New(op.VCluster, vcluster.Options{Logger: opts.Logger, WrapTransport: wrap("kubernetes")})
	default:
		err = fmt.Errorf("backend %q is not supported (supported: %v)", name, supportedBackends)
	}
	if err != nil {
		return nil, fmt.Errorf("offering %q: %w", o.Name, err)
	}
	return b, nil
}

// ObjectBackend is the backend whose objects the offering's limits and
// flags are set on (the quota service's, and sitebus migrate's):
// order_processing_backend, else membership_sync_backend (the Python
// agent applies flags in membership sync). "" when neither names one, or
// when it is the cluster-provisioner's, which has no backend.Backend.
func (op *OfferingPlan) ObjectBackend() string {
	name := op.Config.OrderProcessingBackend
	if name == "" {
		name = op.Config.MembershipSyncBackend
	}
	if clusterBackend(name) {
		return ""
	}
	return name
}
