// Package backend defines what a platform backend (ManagedNamespace,
// Rancher, OKD) does for sitebus. Its errors are package fault's kinds, so
// that the services decide retries by fault.IsTerminal. Every backend
// passes the same conformance suite (package backendtest).
package backend

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sitebus/sitebus/pkg/fault"
)

// Resource is what a backend needs to know about a Waldur resource to
// create and name its platform object.
type Resource struct {
	UUID      string
	Name      string
	Slug      string
	BackendID string

	ProjectUUID, ProjectSlug, ProjectName    string
	CustomerUUID, CustomerSlug, CustomerName string

	// Limits in Waldur units, keyed by component (cpu, ram, storage, ...).
	Limits map[string]float64

	// AccessGroups names the identity-provider groups that grant access to
	// the object, by access role (admin, readwrite, readonly); backends that
	// reference groups in the object (ManagedNamespace) write them there.
	AccessGroups map[string]string
}

// Access roles of a platform object, as the k8s-ut-namespace plugin names them.
const (
	RoleAdmin     = "admin"
	RoleReadWrite = "readwrite"
	RoleReadOnly  = "readonly"
)

// Roles are the access roles in order of privilege.
var Roles = []string{RoleAdmin, RoleReadWrite, RoleReadOnly}

// UserSyncer is implemented by backends that also list users in the object
// itself (ManagedNamespace's adminUsers/rwUsers/roUsers with
// sync_users_to_cr).
type UserSyncer interface {
	// SetUsers writes the users of each access role; changed is false when
	// the object listed them already.
	SetUsers(ctx context.Context, backendID string, users map[string][]string) (changed bool, err error)
}

// Created is the outcome of Create.
type Created struct {
	// BackendID is the platform object's id (namespace name, project id).
	BackendID string
	// Limits as applied, in Waldur units.
	Limits map[string]float64
	// Metadata to report to Waldur (set_backend_metadata).
	Metadata map[string]any
	// Existed is true when the object was there already (an idempotent
	// repeat): nothing was changed.
	Existed bool
}

// Object is one platform object a backend manages.
type Object struct {
	BackendID string
	// Status is Active, Paused or Downscaled.
	Status Status
	// Limits are the limits in force, in Waldur units, when the listing
	// carries them (nil: ask Limits): the drift pass compares 1,000
	// objects with one listing instead of 1,000 reads.
	Limits map[string]float64
}

// Status is the quota status of an object.
type Status string

// Statuses, as Waldur's resource flags name them.
const (
	StatusActive     Status = "active"
	StatusPaused     Status = "paused"
	StatusDownscaled Status = "downscaled"
)

// ParseStatus reads a status as a backend wrote it on its object: paused
// or downscaled, and active for anything else (no mark, or one that is
// not a status).
func ParseStatus(s string) Status {
	switch st := Status(s); st {
	case StatusPaused, StatusDownscaled:
		return st
	}
	return StatusActive
}

// Backend drives one platform. Every method is idempotent: calling it again
// after a crash or a duplicate event is safe. Methods that change an object
// refuse (ErrNotManaged) one sitebus did not create, unless the backend
// adopts it as the Python agent's for a Waldur resource (see
// ResourceFinder); Create never adopts.
type Backend interface {
	// Type is the backend_type of the configuration (k8s-ut-namespace, ...).
	Type() string
	// BackendID computes and validates the id a resource gets, without any
	// call to the platform. A name that cannot be valid is ErrInvalid.
	BackendID(r Resource) (string, error)
	// Create makes the object, or returns the existing one it manages
	// (Existed set) without changing it.
	Create(ctx context.Context, r Resource) (Created, error)
	// Exists reports whether the object is there (managed or not).
	Exists(ctx context.Context, backendID string) (bool, error)
	// Delete removes the object; an absent object is not an error.
	Delete(ctx context.Context, backendID string) error
	// SetLimits applies limits (Waldur units); changed is false when the
	// object had them already. While paused or downscaled, the limits are
	// remembered for Restore and the reduced quota stays.
	SetLimits(ctx context.Context, backendID string, limits map[string]float64) (changed bool, err error)
	// Limits reads the limits in force, in Waldur units.
	Limits(ctx context.Context, backendID string) (map[string]float64, error)
	// Pause sets a zero quota, Downscale a minimal one; both remember the
	// limits before, which Restore puts back.
	Pause(ctx context.Context, backendID string) error
	Downscale(ctx context.Context, backendID string) error
	Restore(ctx context.Context, backendID string) error
	// Usage reads current usage in Waldur units (empty when the platform
	// cannot tell).
	Usage(ctx context.Context, backendID string) (map[string]float64, error)
	// Metadata is what to post to Waldur's set_backend_metadata.
	Metadata(ctx context.Context, backendID string) (map[string]any, error)
	// List returns the objects this backend manages, and only those.
	List(ctx context.Context) ([]Object, error)
	// Ping checks that the platform answers.
	Ping(ctx context.Context) error
	// Diagnostics describes the backend's view of the platform for operators.
	Diagnostics(ctx context.Context) (map[string]any, error)
}

// Errors a backend wraps are package fault's kinds, under the names the
// backends and services have always used: ErrInvalid and ErrNotManaged are
// terminal (fault.IsTerminal); ErrNotFound is returned where an object must
// exist. Build one with a message of its own with fault.Errorf.
const (
	ErrInvalid    = fault.Invalid
	ErrNotManaged = fault.NotManaged
	ErrNotFound   = fault.NotFound
)

// UsageLister is implemented by backends that read the usage of many
// objects at once: the usage reporter asks for every resource of an
// offering in one call, and a backend answers with a few list calls to the
// platform instead of one per object (1,000 resources must not cost
// thousands of API calls every period).
type UsageLister interface {
	// UsageAll returns the current usage of each object, keyed by backend
	// ID and then by component (the offering's component keys), in the
	// units the limits use (cores, GiB, counts: Waldur units at a
	// unit_factor of 1). Objects that do not exist are left out.
	UsageAll(ctx context.Context, backendIDs []string) (map[string]map[string]float64, error)
}

// Found is Exists's answer from the error of reading the object: nil is
// there, ErrNotFound is absent, and any other error is passed on.
func Found(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// Logger is a backend's logger: l, or slog.Default() when nil, naming the
// backend type and then args (the object the backend serves) on every
// record.
func Logger(l *slog.Logger, backendType string, args ...any) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return l.With(append([]any{"backend", backendType}, args...)...)
}

// MarkDifference is one label or annotation a backend writes on its
// objects whose value on the object differs from the backend's: Key names
// where it is (spec.labels.team), Have is "" when it is gone.
type MarkDifference struct {
	Key, Want, Have string
}

// MarkDrifter is implemented by backends that write labels and
// annotations of their own onto an object (ManagedNamespace's
// namespace_labels and namespace_annotations), for the drift pass.
type MarkDrifter interface {
	// MarkDrift compares every object the backend manages (those List
	// returns; one without sitebus's mark is never compared, so never
	// touched), changing nothing, with one listing; objects without
	// differences are left out.
	MarkDrift(ctx context.Context) (map[string][]MarkDifference, error)
	// RepairMarks writes the differing ones back, leaving other labels
	// and annotations alone; changed is false when none differed.
	RepairMarks(ctx context.Context, backendID string) (changed bool, err error)
}
