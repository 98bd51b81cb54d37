package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// ResultsBucket is the key-value bucket holding command results by
// idempotency key. Part of the on-disk contract, like the stream names.
const ResultsBucket = "sitebus_results"

// ResultsTTL is how long a command result is kept: long enough for a saga
// coordinator to be restarted and resume, short enough to stay small.
const ResultsTTL = 24 * time.Hour

// HeaderCallKey carries the caller's idempotency key, under which the
// serving side stores the result (Nats-Msg-Id may differ on a re-issue).
const HeaderCallKey = "Sitebus-Call-Key"

// callState is what Call and Serve set up once per Bus.
type callState struct {
	mu      sync.Mutex
	results jetstream.KeyValue
	// streamsMu is held while a command stream is ensured, so a Call and
	// a Serve starting at once update the stream once: nats-server
	// v2.15.2 races (its race detector's report) when a stream's config
	// is updated while a consumer is created on it.
	streamsMu sync.Mutex
	streams   map[string]bool
}

// EnsureResultsBucket creates or updates the command results bucket.
func (b *Bus) EnsureResultsBucket(ctx context.Context) (jetstream.KeyValue, error) {
	b.calls.mu.Lock()
	defer b.calls.mu.Unlock()
	if b.calls.results != nil {
		return b.calls.results, nil
	}
	kv, err := EnsureKeyValue(ctx, b.js, jetstream.KeyValueConfig{
		Bucket:      ResultsBucket,
		Description: "Results of commands sent with bus.Call, by idempotency key",
		History:     1,
		TTL:         ResultsTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    b.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: ensure bucket %s: %w", ResultsBucket, err)
	}
	b.calls.results = kv
	return kv, nil
}

// ensureCommandStreamOnce is EnsureCommandStream at most once per service
// and Bus: a caller can send before the service has started, and a
// service's Serve calls (one per command) do not update it again while
// each other's consumers are being created.
func (b *Bus) ensureCommandStreamOnce(ctx context.Context, service string) error {
	b.calls.streamsMu.Lock()
	defer b.calls.streamsMu.Unlock()
	if b.calls.streams[service] {
		return nil
	}
	if err := b.EnsureCommandStream(ctx, service); err != nil {
		return err
	}
	if b.calls.streams == nil {
		b.calls.streams = map[string]bool{}
	}
	b.calls.streams[service] = true
	return nil
}

var kvKeyRe = regexp.MustCompile(`^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`)

// resultKey maps an idempotency key to a bucket key. Keys the bucket
// accepts are used as they are (readable in `nats kv`); others are hashed.
func resultKey(key string) string {
	if kvKeyRe.MatchString(key) && len(key) <= 256 {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256." + hex.EncodeToString(sum[:])
}

// final reports whether a stored result settles the call: success or a
// terminal error. A retryable failure (the service gave up after its
// attempts) is not final: the command is issued again.
func final(r *sitebusv1.CallResult) bool { return r.GetError() == "" || r.GetTerminal() }

func readResult(e jetstream.KeyValueEntry) (*sitebusv1.CallResult, error) {
	var r sitebusv1.CallResult
	if err := proto.Unmarshal(e.Value(), &r); err != nil {
		return nil, fmt.Errorf("bus: result %s: %w", e.Key(), err)
	}
	return &r, nil
}

// storedResult reads the result under key; nil when there is none.
func storedResult(ctx context.Context, kv jetstream.KeyValue, key string) (*sitebusv1.CallResult, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return readResult(e)
}

// RemoteError is a command that failed in the service that ran it. A
// terminal one reaches the caller wrapped in Terminal.
type RemoteError struct {
	Service, Command string
	Msg              string
	Attempts         uint32
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Service, e.Command, e.Msg)
}

// decodeResult turns a stored result into resp or an error.
func decodeResult(r *sitebusv1.CallResult, resp proto.Message) error {
	if r.GetError() != "" {
		err := error(&RemoteError{Service: r.GetService(), Command: r.GetCommand(), Msg: r.GetError(), Attempts: r.GetAttempts()})
		if r.GetTerminal() {
			return Terminal(err)
		}
		return err
	}
	if resp == nil {
		return nil
	}
	if want := string(resp.ProtoReflect().Descriptor().FullName()); r.GetResponseType() != "" && r.GetResponseType() != want {
		return Terminal(fmt.Errorf("bus: %s %s answered %s, caller expects %s", r.GetService(), r.GetCommand(), r.GetResponseType(), want))
	}
	if err := proto.Unmarshal(r.GetResponse(), resp); err != nil {
		return Terminal(fmt.Errorf("bus: decode %s: %w", r.GetResponseType(), err))
	}
	return nil
}
