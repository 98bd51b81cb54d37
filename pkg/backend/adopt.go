package backend

import (
	"context"
	"errors"
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

// What the first change for a resource would do with its object
// (PlannedAdoption.Action).
const (
	// PlanManaged: the object carries sitebus's mark; nothing to adopt.
	PlanManaged = "managed"
	// PlanAbsent: there is no object of the resource's id.
	PlanAbsent = "absent"
	// PlanAdopt: the object is the Python agent's for the resource and
	// would be marked as sitebus's.
	PlanAdopt = "adopt"
	// PlanRefuse: the object lacks sitebus's mark and no proof makes it
	// the resource's; every change errs until a person decides.
	PlanRefuse = "refuse"
)

// PlannedAdoption is the decision a change makes on one object, made
// without changing it (the dry run of adoption: sitebus migrate).
type PlannedAdoption struct {
	// Object is the object's id as the backend names it (namespace,
	// project name and id).
	Object string
	// BackendID is the id the resource led to, what Adopt takes.
	BackendID string
	// Resource is the Waldur resource whose id led to the object.
	Resource Resource
	// Action is PlanManaged, PlanAbsent, PlanAdopt or PlanRefuse.
	Action string
	// Proof (PlanAdopt) or Reason (PlanRefuse), as the log and the
	// order's error say them.
	Proof, Reason string
}

// Adopter is implemented by the backends that adopt the Python agent's
// objects. PlanAdoption reads the object of backendID and decides as a
// change would (the same decideAdoption) without marking it; Adopt marks
// it through the very path a change takes first (an adopted object is
// marked, a refused one errs ErrNotManaged).
type Adopter interface {
	PlanAdoption(ctx context.Context, backendID string) (PlannedAdoption, error)
	Adopt(ctx context.Context, backendID string) error
}

// Planned is the outcome of deciding d on object: adopt or refuse.
func Planned(object string, d Adoption) PlannedAdoption {
	if d.Adopt {
		return PlannedAdoption{Object: object, Resource: d.Resource, Action: PlanAdopt, Proof: d.Proof}
	}
	return PlannedAdoption{Object: object, Action: PlanRefuse, Reason: d.Reason}
}

// PlanObject is a Kubernetes-object backend's PlanAdoption once it has
// read the object of backendID (err is that read's error): absent,
// already sitebus's (managed), refused when there are no Waldur resources
// to prove ownership with (canProve false), or what decide says.
func PlanObject(backendID string, err error, managed func() bool, canProve bool, decide func() (Adoption, error)) (PlannedAdoption, error) {
	switch {
	case errors.Is(err, ErrNotFound):
		return PlannedAdoption{Object: backendID, Action: PlanAbsent}, nil
	case err != nil:
		return PlannedAdoption{}, err
	case managed():
		return PlannedAdoption{Object: backendID, Action: PlanManaged}, nil
	case !canProve:
		return PlannedAdoption{Object: backendID, Action: PlanRefuse, Reason: "no Waldur resources to prove ownership with"}, nil
	}
	d, err := decide()
	if err != nil {
		return PlannedAdoption{}, err
	}
	return Planned(backendID, d), nil
}

// PlanAdoptions is the adoption plan of one offering: for each live Waldur
// resource of the offering (f), the object of its backend_id (else of the
// id the backend computes for it) and what the first change for it would
// do. An object several resources lead to is listed once. The plan is
// sorted by object.
func PlanAdoptions(ctx context.Context, b Backend, a Adopter, f ResourceFinder) ([]PlannedAdoption, error) {
	resources, err := f.Resources(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the offering's Waldur resources: %w", err)
	}
	seen := map[string]bool{}
	var out []PlannedAdoption
	for _, r := range resources {
		id := r.BackendID
		if id == "" {
			if id, err = b.BackendID(r); err != nil {
				continue // a name that cannot be valid has no object
			}
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		p, err := a.PlanAdoption(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("resource %s (%s): %w", r.UUID, id, err)
		}
		if p.Object == "" {
			p.Object = id
		}
		p.BackendID = id
		if p.Resource.UUID == "" {
			p.Resource = r
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y PlannedAdoption) int { return strings.Compare(x.Object, y.Object) })
	return out, nil
}
