package contract

import "time"

// StompSession is the state of one of the STOMP bridge's subscriptions, as
// the bridge's process publishes it into StatusBucket for the status page
// (which any process may serve, so it reads the record, not the bridge).
type StompSession struct {
	// OfferingUUID is the offering's UUID without dashes.
	OfferingUUID string    `json:"offering_uuid"`
	ObjectType   string    `json:"object_type"`
	Connected    bool      `json:"connected"`
	LastFrame    time.Time `json:"last_frame,omitzero"`
}
