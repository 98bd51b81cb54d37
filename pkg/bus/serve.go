package bus

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// ServeConfig says which commands of a service one handler serves.
type ServeConfig struct {
	// Service is the service name: its commands arrive on cmd.<Service>.>.
	Service string
	// Command is the one command this handler serves (cmd.<Service>.<Command>).
	// Each command has its own request type and so its own Serve.
	Command string
	// Consumer tunes the consumer; Stream and FilterSubjects are set by
	// Serve, Name defaults to <Service>-<Command>.
	Consumer ConsumerConfig
}

// CommandHandler runs one command. A [Terminal] error is the command's
// final answer; any other error is retried by the consumer with backoff,
// and only the outcome of the last attempt is stored.
type CommandHandler[PReq, PResp proto.Message] func(ctx context.Context, req PReq) (PResp, error)

// Serve handles cfg.Command of cfg.Service with h until the returned
// subscription is stopped, storing each outcome in the results bucket
// under the caller's key before the command is acked, so that a result is
// never lost between the two.
//
// A command whose final result is stored already (a duplicate published
// after the duplicate window, or redelivered after a crash between the
// write and the ack) is acked without running h again. A terminal error is
// stored and acked, not dead-lettered: the caller has its answer. After the
// consumer's MaxDeliver attempts with retryable errors the last error is
// stored as a retryable failure (a caller may re-issue the command).
func Serve[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}](ctx context.Context, b *Bus, cfg ServeConfig, h CommandHandler[PReq, PResp]) (*Subscription, error) {
	subject, err := CommandSubject(cfg.Service, cfg.Command)
	if err != nil {
		return nil, err
	}
	if err := b.ensureCommandStreamOnce(ctx, cfg.Service); err != nil {
		return nil, err
	}
	kv, err := b.EnsureResultsBucket(ctx)
	if err != nil {
		return nil, err
	}
	cc := cfg.Consumer
	if cc.Name == "" {
		cc.Name = cfg.Service + "-" + cfg.Command
	}
	cc.Stream = CommandStream(cfg.Service)
	cc.FilterSubjects = []string{subject}
	respType := string(PResp(new(Resp)).ProtoReflect().Descriptor().FullName())

	return Subscribe(ctx, b, cc, func(ctx context.Context, req PReq) error {
		d, _ := DeliveryFromContext(ctx)
		callKey := d.Header.Get(HeaderCallKey)
		if callKey == "" {
			// Published without Call: nobody waits for a result.
			_, err := h(ctx, req)
			return err
		}
		key := resultKey(callKey)
		prev, err := storedResult(ctx, kv, key)
		if err != nil {
			return fmt.Errorf("bus: read result %s: %w", key, err)
		}
		if prev != nil && final(prev) {
			b.log.Debug("command result stored already; not running it again", "subject", d.Subject, "key", callKey)
			return nil
		}
		resp, herr := h(ctx, req)
		r := &sitebusv1.CallResult{Service: cfg.Service, Command: cfg.Command, Attempts: uint32(d.NumDelivered)}
		switch {
		case herr == nil:
			r.ResponseType = respType
			if r.Response, err = proto.Marshal(resp); err != nil {
				r.ResponseType, r.Error, r.Terminal = "", fmt.Sprintf("encode %s: %v", respType, err), true
			}
		case IsTerminal(herr):
			r.Error, r.Terminal = herr.Error(), true
		case d.LastAttempt():
			r.Error = fmt.Sprintf("gave up after %d attempts: %s", d.NumDelivered, herr)
		default:
			return herr
		}
		data, err := proto.Marshal(r)
		if err == nil {
			// Repeated while unanswered (boundedKV): a put in flight when a
			// node dies never gets an answer.
			_, err = kv.Put(ctx, key, data)
		}
		if err != nil {
			// Not stored, not acked: the command runs again (handlers are
			// idempotent) and its result is stored then.
			// Only the store error is returned: a terminal herr must not
			// dead-letter a command whose answer was never stored.
			return fmt.Errorf("bus: store result %s: %w (outcome: %v)", key, err, herr)
		}
		return nil
	})
}
