package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
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
// answer. The request is repeated while it goes unanswered: a cluster
// that is starting, or busy electing leaders, may leave it without an
// answer for longer than one request's timeout.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return ensure(ctx, cfg.Replicas, func(actx context.Context) (jetstream.Stream, error) {
		return js.CreateOrUpdateStream(actx, cfg)
	})
}

// EnsureKeyValue is EnsureStream for a key-value bucket.
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	_, err := ensure(ctx, cfg.Replicas, func(actx context.Context) (jetstream.Stream, error) {
		var err error
		if kv, err = js.CreateOrUpdateKeyValue(actx, cfg); err != nil {
			return nil, err
		}
		return js.Stream(actx, "KV_"+cfg.Bucket)
	})
	if err != nil {
		return nil, err
	}
	return boundedKV{kv}, nil
}

// OpenKeyValue opens an existing bucket (jetstream.ErrBucketNotFound if
// there is none), its requests bounded as EnsureKeyValue's are.
func OpenKeyValue(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := retryUnanswered(ctx, func(actx context.Context) (err error) {
		kv, err = js.KeyValue(actx, bucket)
		return err
	})
	if err != nil {
		return nil, err
	}
	return boundedKV{kv}, nil
}

// ensure runs create (repeated while unanswered) and waits for the stream
// it made to be writable. In a cluster, two processes that make the same
// stream at once, or a read that reaches a server before the stream's
// assignment does, can be told the stream does not exist just after it was
// made; then it is all done again, for at most the unanswered budget when
// ctx has no deadline. (The wait for a writable stream is not bounded by
// it: moving a stream onto new servers takes as long as it takes.)
func ensure(ctx context.Context, replicas int, create func(context.Context) (jetstream.Stream, error)) (jetstream.Stream, error) {
	_, bounded := ctx.Deadline()
	start := time.Now()
	delay := 50 * time.Millisecond
	for {
		var s jetstream.Stream
		err := retryUnanswered(ctx, func(actx context.Context) (err error) {
			s, err = create(actx)
			return err
		})
		if err == nil {
			err = waitWritable(ctx, s, replicas)
		}
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) || ctx.Err() != nil || (!bounded && time.Since(start) > unansweredBudget) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// waitWritable waits until the stream has a leader, its peers number the
// replica count and a quorum of them is current. A server that is not
// clustered reports no peers, and its streams are writable at once.
func waitWritable(ctx context.Context, s jetstream.Stream, replicas int) error {
	replicas = max(replicas, 1)
	for {
		var info *jetstream.StreamInfo
		err := retryUnanswered(ctx, func(actx context.Context) (err error) {
			info, err = s.Info(actx)
			return err
		})
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

// requestTimeout bounds one attempt of a JetStream request that can be
// repeated. A request in flight when its server dies, or sent while a
// stream or the cluster elects a leader, gets no answer at all, and the
// caller's deadline may be minutes away.
const requestTimeout = 5 * time.Second

// unansweredBudget bounds the attempts when the caller's ctx has no
// deadline: long enough to ride out a leader election.
const unansweredBudget = 30 * time.Second

// RetryUnanswered is retryUnanswered for packages that make their own
// JetStream requests (the saga coordinator's key-value writes): a request
// whose server restarts is never answered, and without a bound per attempt
// it would wait as long as the caller's ctx (a handler's is minutes).
func RetryUnanswered(ctx context.Context, f func(context.Context) error) error {
	return retryUnanswered(ctx, f)
}

// retryUnanswered calls f, each time with a ctx bounded by requestTimeout,
// until it succeeds, fails with an answer, or ctx ends. Only for requests
// that are idempotent (a publish with a message id, a read).
func retryUnanswered(ctx context.Context, f func(context.Context) error) error {
	// The budget for a ctx without a deadline counts from the first
	// attempt but is only made once that attempt went unanswered: nearly
	// every call succeeds at once (every event the bridge ingests makes
	// one), and the first attempt is bounded by requestTimeout anyway.
	start := time.Now()
	err := attemptUnanswered(ctx, f)
	if err == nil || !unanswered(err) || ctx.Err() != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(unansweredBudget))
		defer cancel()
	}
	delay := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
		err = attemptUnanswered(ctx, f)
		if err == nil || !unanswered(err) || ctx.Err() != nil {
			return err
		}
	}
}

// attemptUnanswered is one attempt of retryUnanswered, bounded by
// requestTimeout.
func attemptUnanswered(ctx context.Context, f func(context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return f(actx)
}

// unanswered reports an error that says nothing about the request's
// outcome: no server answered (yet).
func unanswered(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		// JSClusterNotAvailErr: "JetStream system temporarily unavailable"
		(errors.As(err, &apiErr) && apiErr.ErrorCode == 10008)
}

// watchKey starts a watch of key in kv. Making it is a JetStream request
// that may go unanswered like any other, but the watch lives as long as
// the ctx it is made with, so an attempt is not bounded by a timeout: it
// is abandoned (its ctx cancelled) after requestTimeout and made anew.
// stop ends the watch.
func watchKey(ctx context.Context, kv jetstream.KeyValue, key string) (w jetstream.KeyWatcher, stop func(), err error) {
	type made struct {
		w   jetstream.KeyWatcher
		err error
	}
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		actx, cancel := context.WithCancel(ctx)
		done := make(chan made, 1)
		go func() {
			w, err := kv.Watch(actx, key)
			done <- made{w, err}
		}()
		select {
		case m := <-done:
			if m.err == nil {
				return m.w, func() { _ = m.w.Stop(); cancel() }, nil
			}
			cancel()
			if !unanswered(m.err) || ctx.Err() != nil {
				return nil, nil, m.err
			}
		case <-time.After(requestTimeout):
			cancel()
			go func() {
				if m := <-done; m.w != nil {
					_ = m.w.Stop()
				}
			}()
		case <-ctx.Done():
			cancel()
			return nil, nil, ctx.Err()
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// boundedKV bounds every request to a key-value bucket. Without it a
// request in flight when its server dies (or sent while the bucket elects
// a leader) waits for the caller's deadline, which for a handler is
// minutes: a command handler stalled that way held its message, its
// ordering key and the saga waiting on it. Reads and plain puts are
// repeated while unanswered (the same request twice has the same effect);
// conditional writes and deletes get one bounded attempt, and an
// unanswered one returns a retryable error (see unanswered) for the
// caller to handle: repeating them blindly could report a write that
// succeeded as a conflict.
type boundedKV struct{ jetstream.KeyValue }

func (kv boundedKV) Get(ctx context.Context, key string) (e jetstream.KeyValueEntry, err error) {
	err = retryUnanswered(ctx, func(actx context.Context) error {
		e, err = kv.KeyValue.Get(actx, key)
		return err
	})
	return e, err
}

func (kv boundedKV) GetRevision(ctx context.Context, key string, revision uint64) (e jetstream.KeyValueEntry, err error) {
	err = retryUnanswered(ctx, func(actx context.Context) error {
		e, err = kv.KeyValue.GetRevision(actx, key, revision)
		return err
	})
	return e, err
}

func (kv boundedKV) Put(ctx context.Context, key string, value []byte) (rev uint64, err error) {
	err = retryUnanswered(ctx, func(actx context.Context) error {
		rev, err = kv.KeyValue.Put(actx, key, value)
		return err
	})
	return rev, err
}

func (kv boundedKV) PutString(ctx context.Context, key string, value string) (uint64, error) {
	return kv.Put(ctx, key, []byte(value))
}

func (kv boundedKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	actx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return kv.KeyValue.Create(actx, key, value, opts...)
}

func (kv boundedKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	actx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return kv.KeyValue.Update(actx, key, value, revision)
}

func (kv boundedKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	actx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return kv.KeyValue.Delete(actx, key, opts...)
}
