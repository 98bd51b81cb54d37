package contract

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus"
)

// Drift is the drift service: every drift period it compares what Waldur
// says each resource should be with what the platform has, repairs what
// sitebus manages, and publishes what it found for the status page. It
// takes no commands.
const Drift = "drift"

// StatusBucket is the key-value bucket the status page reads: the health
// snapshots (health.<offering>) and the drift reports (drift.<offering>).
const StatusBucket = "sitebus_status"

// EnsureStatusBucket creates StatusBucket, or applies its configuration
// to the existing one. Its two writers (the status page's health
// publisher and the drift service) both open it here: with a copy of the
// configuration each, a change to one would be undone by the other's
// next write, as EnsureKeyValue updates the bucket to what it is given.
func EnsureStatusBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return bus.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: StatusBucket, Description: "Status page: health snapshots and drift reports, by offering",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
	})
}

// DriftKey is the key of an offering's drift report (its UUID as hex) in
// StatusBucket.
func DriftKey(offeringHex string) string { return "drift." + offeringHex }

// Kinds of drift, the kind of a DriftFinding and of the repair metrics.
const (
	DriftLimits   = "limits"   // the quota differs from the resource's limits
	DriftFlags    = "flags"    // the quota status differs from paused/downscaled
	DriftMembers  = "members"  // an access group's members differ from the team
	DriftLabels   = "labels"   // a label or annotation sitebus sets is changed or gone
	DriftBindings = "bindings" // a role binding sitebus makes is changed or gone
)

// DriftFinding is one difference between Waldur and a platform object.
type DriftFinding struct {
	Kind string `json:"kind"`
	// Resource is the Waldur resource's UUID, Object the platform object
	// (namespace, project, group) the difference is on.
	Resource string `json:"resource"`
	Object   string `json:"object"`
	// Want is what Waldur says, Have what the platform has, both as an
	// operator reads them.
	Want string `json:"want"`
	Have string `json:"have"`
	// Repaired: the pass put Want back; RepairError says why it could not.
	Repaired    bool   `json:"repaired,omitempty"`
	RepairError string `json:"repair_error,omitempty"`
}

// DriftReport is one offering's drift as one pass found it.
type DriftReport struct {
	OfferingUUID string         `json:"offering_uuid"`
	Offering     string         `json:"offering"`
	Checked      time.Time      `json:"checked"`
	Publisher    string         `json:"publisher,omitempty"`
	Findings     []DriftFinding `json:"findings"`
	// Errors are the checks that could not compare (a platform or Waldur
	// that did not answer): their kind of drift is unknown this pass.
	Errors []string `json:"errors,omitempty"`
}
