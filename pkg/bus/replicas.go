package bus

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// IsInsufficientReplicas reports whether err is JetStream refusing a stream
// or bucket because it cannot place its replicas: fewer servers (with
// JetStream, up and in the cluster) than the replica count, or a server
// that is not clustered at all. Retrying does not help until the cluster
// grows, a server comes back, or the count is lowered. (A server whose
// JetStream storage is full answers "insufficient resources" too.)
func IsInsufficientReplicas(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10005, // JSClusterNoPeersErrF: no suitable peers for placement
		10023, // JSInsufficientResourcesErr: insufficient resources
		10074: // JSStreamReplicasNotSupportedErr: replicas > 1 not supported in non-clustered mode
		return true
	}
	return false
}
