package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"google.golang.org/protobuf/proto"
)

// DefaultCallTimeout bounds a Call whose ctx has no deadline.
const DefaultCallTimeout = 5 * time.Minute

type callOptions struct {
	key         string
	orderingKey string
}

// CallOption adjusts one Call.
type CallOption func(*callOptions)

// WithKey sets the call's idempotency key: it is the command's Nats-Msg-Id
// and the key of its result. Calls with the same key run the command once
// (within the results' TTL) and all get its outcome, so a saga step derives
// the key from the saga and the step. Without it a random key is used and
// the call is not idempotent across restarts.
func WithKey(key string) CallOption { return func(o *callOptions) { o.key = key } }

// CallOrderingKey names what the command is about (e.g.
// "resource:<uuid>"): the serving process runs it only when no other
// message with that key is being handled, events and commands alike.
func CallOrderingKey(key string) CallOption { return func(o *callOptions) { o.orderingKey = key } }

// CommandSubject is the subject of one command of a service.
func CommandSubject(service, command string) (string, error) {
	if !ValidToken(service) || !ValidToken(command) {
		return "", fmt.Errorf("bus: cannot build a command subject from service %q and command %q", service, command)
	}
	return "cmd." + service + "." + command, nil
}

// Call sends req as command to service and waits for the result, decoding
// it into resp (nil: the response is not wanted).
//
// The result is looked up first: a call whose result is stored already (it
// ran before the caller crashed, or another caller sent the same key)
// returns it without running the command again. Otherwise the command is
// published, deduplicated on the key within the command stream's duplicate
// window, and the result is awaited until ctx ends (DefaultCallTimeout
// without a deadline). A command the service failed with a terminal error
// returns a [Terminal] [*RemoteError]; one it gave up on after its attempts
// returns a plain *RemoteError, and calling again with the same key sends
// it anew. A timeout returns ctx's error: the command may still run, and
// calling again with the same key picks up its result.
func (b *Bus) Call(ctx context.Context, service, command string, req, resp proto.Message, opts ...CallOption) error {
	o := callOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == "" {
		o.key = nuid.Next()
	}
	subject, err := CommandSubject(service, command)
	if err != nil {
		return Terminal(err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	kv, err := b.EnsureResultsBucket(ctx)
	if err != nil {
		return err
	}
	key := resultKey(o.key)

	// The watch only wakes the wait below early. Its initial values come
	// over an ordered consumer on one server of the bucket's group, which
	// may go quiet for minutes when that server is lost; so the stored
	// result is read directly, and the wait reads the key now and then too.
	w, stopWatch, err := watchKey(ctx, kv, key)
	if err != nil {
		return fmt.Errorf("bus: watch result %s: %w", key, err)
	}
	defer stopWatch()
	var stale uint64
	prev, err := kv.Get(ctx, key) // bounded: see boundedKV
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		prev, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("bus: call %s key %s: read result: %w", subject, o.key, err)
	}
	if prev != nil && prev.Operation() == jetstream.KeyValuePut {
		r, err := readResult(prev)
		if err != nil {
			return Terminal(err)
		}
		if final(r) {
			return decodeResult(r, resp)
		}
		stale = prev.Revision()
	}

	if err := b.ensureCommandStreamOnce(ctx, service); err != nil {
		return err
	}
	data, err := proto.Marshal(req)
	if err != nil {
		return Terminal(fmt.Errorf("bus: encode %T: %w", req, err))
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(HeaderContentType, ContentTypeProtobuf)
	msg.Header.Set(HeaderMessageType, string(req.ProtoReflect().Descriptor().FullName()))
	msg.Header.Set(HeaderCallKey, o.key)
	if o.orderingKey != "" {
		msg.Header.Set(HeaderOrderingKey, o.orderingKey)
	}
	msgID := o.key
	if stale > 0 {
		// Re-issue a command the service gave up on: a new message id, the
		// same for every caller that saw the same failed result.
		msgID += "#" + strconv.FormatUint(stale, 10)
	}
	if _, err := b.PublishMsg(ctx, msg, WithMsgID(msgID)); err != nil {
		return err
	}

	// A result newer than the one read above answers this call, whether
	// the watch or a read finds it first.
	poll := time.NewTicker(resultPollInterval)
	defer poll.Stop()
	for {
		var e jetstream.KeyValueEntry
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("bus: call %s key %s: result watch ended", subject, o.key)
			}
			e = u
		case <-poll.C:
			gctx, cancel := context.WithTimeout(ctx, requestTimeout)
			got, err := kv.Get(gctx, key)
			cancel()
			if err == nil {
				e = got
			}
		case <-ctx.Done():
			return fmt.Errorf("bus: call %s key %s: no result: %w", subject, o.key, context.Cause(ctx))
		}
		if e == nil || e.Operation() != jetstream.KeyValuePut || e.Revision() <= stale {
			continue
		}
		r, err := readResult(e)
		if err != nil {
			return Terminal(err)
		}
		return decodeResult(r, resp)
	}
}

// resultPollInterval is how often Call reads the result key besides
// watching it.
const resultPollInterval = 2 * time.Second
