package backend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitebus/sitebus/pkg/telemetry"
)

// A site that switches from the Python agent has objects the Python
// plugins made, without sitebus's mark. A backend adopts such an object
// (marks it as sitebus's) on the first change asked for a resource that
// Waldur already has, and only with proof of ownership: a Waldur resource
// of the offering names the object, and the object's content says the
// Python agent made it for that resource (each backend knows its
// plugin's content). Create never adopts: a new resource whose name an
// unmarked object holds is refused, as any object sitebus did not make.

// ResourceFinder finds the Waldur resources of one offering, for the
// adoption of an object that lacks sitebus's mark. Both lists leave out
// terminated resources.
type ResourceFinder interface {
	// ResourcesByBackendID lists the resources whose backend_id is id.
	ResourcesByBackendID(ctx context.Context, id string) ([]Resource, error)
	// Resources lists every resource of the offering.
	Resources(ctx context.Context) ([]Resource, error)
}

// Claimants are the resources that name the object id: those whose
// backend_id is id, else those for which name (the backend's BackendID)
// computes id. The second list is only read when no backend_id matches,
// so the usual case (the Python agent recorded the object as backend_id)
// costs one filtered request.
func Claimants(ctx context.Context, f ResourceFinder, id string, name func(Resource) (string, error)) ([]Resource, error) {
	byID, err := f.ResourcesByBackendID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("find the Waldur resource of %s: %w", id, err)
	}
	if len(byID) > 0 {
		return byID, nil
	}
	all, err := f.Resources(ctx)
	if err != nil {
		return nil, fmt.Errorf("find the Waldur resource of %s: %w", id, err)
	}
	var out []Resource
	for _, r := range all {
		if n, err := name(r); err == nil && n == id {
			out = append(out, r)
		}
	}
	return out, nil
}

// Adoption is a backend's decision on an object without sitebus's mark.
type Adoption struct {
	// Adopt is true when the object is the Python agent's for Resource.
	Adopt bool
	// Resource is the Waldur resource the object was made for (when
	// Adopt).
	Resource Resource
	// Proof (when Adopt) or Reason (when not) says why, for the log and
	// the order's error.
	Proof, Reason string
}

// Refuse is a refusal for reason.
func Refuse(format string, args ...any) Adoption {
	return Adoption{Reason: fmt.Sprintf(format, args...)}
}

// OneClaimant is the part of every backend's decision that is about
// names: exactly one resource must name the object. ok is false (and the
// refusal set) otherwise.
func OneClaimant(claimants []Resource) (Resource, Adoption, bool) {
	switch len(claimants) {
	case 0:
		return Resource{}, Refuse("no Waldur resource of this offering names it"), false
	case 1:
		return claimants[0], Adoption{}, true
	}
	uuids := make([]string, len(claimants))
	for i, r := range claimants {
		uuids[i] = r.UUID
	}
	slices.Sort(uuids)
	return Resource{}, Refuse("%d Waldur resources name it (%s); refusing to guess which", len(claimants), strings.Join(uuids, ", ")), false
}

// Outcomes of an adoption, the outcome label of AdoptionsCounter.
const (
	AdoptionAdopted = "adopted"
	AdoptionRefused = "refused"
)

// AdoptionsCounter is sitebus_adoptions_total{backend,outcome}, registered
// on reg (nil: not exported). Every backend of a process shares it.
func AdoptionsCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	return telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitebus_adoptions_total",
		Help: "Objects without sitebus's mark met by a change, by backend and outcome (adopted: the Python agent's for a Waldur resource, now marked; refused: left untouched).",
	}, []string{"backend", "outcome"}))
}
