package app

import (
	"context"
	"slices"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/orderflow"
)

// ResourceLister is what adoption asks Waldur (a *waldur.Client).
type ResourceLister interface {
	ListProviderResources(ctx context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error)
}

// liveStates are the states of a resource that may still own a platform
// object: every one but Terminated (a terminating resource's object is
// still its own, for the terminate order to delete).
var liveStates = []string{waldur.ResourceStateCreating, waldur.ResourceStateOK, waldur.ResourceStateErred,
	waldur.ResourceStateUpdating, waldur.ResourceStateTerminating}

// waldurResources is one offering's resources in Waldur, for the backends
// to adopt the objects the Python agent made for them
// (backend.ResourceFinder).
type waldurResources struct {
	w        ResourceLister
	offering string // Waldur's offering UUID
}

var _ backend.ResourceFinder = waldurResources{}

// ResourcesByBackendID asks Waldur for the resources with that backend_id;
// the answer is checked here too, so a server that ignored the filter
// cannot make another resource a claimant.
func (f waldurResources) ResourcesByBackendID(ctx context.Context, id string) ([]backend.Resource, error) {
	res, err := f.w.ListProviderResources(ctx, waldur.ResourceFilter{OfferingUUID: f.offering, BackendID: id, States: liveStates})
	if err != nil {
		return nil, err
	}
	res = slices.DeleteFunc(res, func(r waldur.Resource) bool { return r.BackendID != id })
	return toBackend(res), nil
}

// Resources lists every live resource of the offering.
func (f waldurResources) Resources(ctx context.Context) ([]backend.Resource, error) {
	res, err := f.w.ListProviderResources(ctx, waldur.ResourceFilter{OfferingUUID: f.offering, States: liveStates})
	if err != nil {
		return nil, err
	}
	return toBackend(res), nil
}

func toBackend(res []waldur.Resource) []backend.Resource {
	out := make([]backend.Resource, len(res))
	for i := range res {
		out[i] = orderflow.BackendResource(&res[i])
	}
	return out
}

// WaldurResources is the offering's live resources in Waldur (w), the
// ResourceFinder the backends of run adopt with; sitebus migrate builds
// its backends with it, so its plan is made from the same resources.
func WaldurResources(w ResourceLister, offeringUUID string) backend.ResourceFinder {
	return waldurResources{w: w, offering: offeringUUID}
}
