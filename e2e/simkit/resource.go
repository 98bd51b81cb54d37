package simkit

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Refuse is e when the condition holds, else nil: one check of a request.
// cmp.Or(Refuse(…), Refuse(…), …) answers the first that fails, in the
// order the simulated service checks; cmp.Or evaluates every argument, so
// each check must be safe whatever the ones before it found.
func Refuse[E any](cond bool, e *E) *E {
	if cond {
		return e
	}
	return nil
}

// Set copies *from to *to when a request carried it (from not nil): a
// create's or update's optional field.
func Set[T any](to, from *T) {
	if from != nil {
		*to = *from
	}
}

// Nullable is a request field that may be absent (Set false), null (Set,
// V zero: e.g. "port_id": null clears an association) or a value; a value
// of the wrong type is taken as null.
type Nullable[T any] struct {
	V   T
	Set bool
}

// UnmarshalJSON marks n as present.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	_ = json.Unmarshal(b, &n.V)
	return nil
}

// CallSummary counts the logged calls by method and path template, ids
// replaced by {id} (e.g. "GET /compute/v2.1/servers/{id}"): what a run
// asked of each service, for a report next to the client's own call
// counts.
func (fs *Faults) CallSummary() map[string]int {
	out := map[string]int{}
	for _, c := range fs.Calls() {
		out[c.Method+" "+PathTemplate(c.Path)]++
	}
	return out
}

// PathTemplate replaces the ids in path (UUIDs, and 32 hex digits as
// Keystone makes them) with {id}.
func PathTemplate(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if anID.MatchString(p) {
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}

var anID = regexp.MustCompile(`^([0-9a-f]{32}|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12})$`)
