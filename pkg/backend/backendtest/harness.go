// Package backendtest is the conformance suite every platform backend
// passes: the idempotence, ownership and status-operation guarantees that
// the order and membership services rely on, checked against the real
// platform (or a real API server), never a mock.
package backendtest

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Harness is what a backend's test provides to Run.
type Harness struct {
	// New returns a backend over a fresh, empty space of its own (a CR
	// namespace, a cluster project...), so that List sees only what the
	// subtest made. It is called once per subtest; cleanup is the
	// harness's (t.Cleanup).
	New func(t *testing.T) Target
	// Resource returns a resource named slug with limits cpu:2 ram:4
	// storage:10. Nil means DefaultResource.
	Resource func(slug string) backend.Resource
	// InvalidSlugs are slugs the backend must refuse; nil means
	// DefaultInvalidSlugs.
	InvalidSlugs []string
	// PlatformIDs says Create returns the platform's own id for the
	// object (a Rancher project id, c-xxx:p-yyy), not the name BackendID
	// computes, and that every method accepts either as backend id. The
	// suite then checks that Create's id is stable across repeats and
	// names the same object as BackendID's, instead of that they are
	// equal.
	PlatformIDs bool
}

// Target is one backend under test and its space.
type Target struct {
	Backend backend.Backend
	// Foreign puts into the backend's space an object with id backendID
	// that sitebus does not manage, as a person or another tool would,
	// and returns a check that the object is still as it was.
	Foreign func(t *testing.T, backendID string) (untouched func(t *testing.T))
}

// BaseLimits are the limits of Resource; NewLimits are the ones the suite
// changes them to.
var (
	BaseLimits = map[string]float64{"cpu": 2, "ram": 4, "storage": 10}
	NewLimits  = map[string]float64{"cpu": 4, "ram": 8, "storage": 20}
)

// DefaultInvalidSlugs cannot name an object on any platform sitebus
// drives: empty, upper case and punctuation, and far too long.
var DefaultInvalidSlugs = []string{
	"",
	"Not-A-Slug",
	"under_score",
	"dot.ted",
	"trailing-",
	"a-slug-that-is-much-too-long-for-any-platform-name-there-is-by-far-really",
}

// DefaultResource is a resource with BaseLimits and random UUIDs.
func DefaultResource(slug string) backend.Resource {
	limits := make(map[string]float64, len(BaseLimits))
	for k, v := range BaseLimits {
		limits[k] = v
	}
	return backend.Resource{
		UUID:         newUUID(),
		Name:         "Resource " + slug,
		Slug:         slug,
		ProjectUUID:  newUUID(),
		ProjectSlug:  "project",
		ProjectName:  "Project",
		CustomerUUID: newUUID(),
		CustomerSlug: "customer",
		CustomerName: "Customer",
		Limits:       limits,
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
