package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// EnsureStream creates the stream or updates it to cfg (the replica count
// included) and returns once it can take writes: when its replica count
// changed, the server moves it onto a new group of servers, and a write
// sent before that group has a leader and a quorum is lost without an
// answer.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return s, waitWritable(ctx, s, cfg.Replicas)
}

// EnsureKeyValue is EnsureStream for a key-value bucket.
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, err
	}
	return kv, waitWritable(ctx, s, cfg.Replicas)
}

// waitWritable waits until the stream has a leader, its peers number the
// replica count and a quorum of them is current. A server that is not
// clustered reports no peers, and its streams are writable at once.
func waitWritable(ctx context.Context, s jetstream.Stream, replicas int) error {
	replicas = max(replicas, 1)
	for {
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		c := info.Cluster
		if c == nil || (c.Leader == "" && len(c.Replicas) == 0 && replicas == 1) {
			return nil
		}
		current := 0
		for _, p := range c.Replicas {
			if p.Current {
				current++
			}
		}
		if c.Leader != "" && 1+len(c.Replicas) == replicas && current >= replicas/2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s not writable on %d servers yet (leader %q, %d of %d followers current): %w",
				info.Config.Name, replicas, c.Leader, current, len(c.Replicas), ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
