package contract

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/fault"
)

// Local is a [Caller] that runs each command's handler in this process
// instead of publishing it: `sitebus orders explain` runs a saga's steps
// through it, with the handlers of services whose clients run dry, so
// that nothing reaches the bus. The request and the answer cross it
// encoded, as on the bus, so a handler never shares a message with its
// caller. Safe for concurrent use.
type Local struct {
	mu       sync.Mutex
	handlers map[string]func(ctx context.Context, req []byte) ([]byte, error)
	sent     []string
}

// Handle has l answer c with h (the handler a service serves c with).
func Handle[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}](l *Local, c Command[PReq, PResp], h func(context.Context, PReq) (PResp, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handlers == nil {
		l.handlers = map[string]func(context.Context, []byte) ([]byte, error){}
	}
	l.handlers[c.Service+"."+c.Name] = func(ctx context.Context, data []byte) ([]byte, error) {
		req := PReq(new(Req))
		if err := proto.Unmarshal(data, req); err != nil {
			return nil, fault.Terminal(fmt.Errorf("decode %s.%s request: %w", c.Service, c.Name, err))
		}
		resp, err := h(ctx, req)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(resp)
	}
}

// Call runs the handler of service's command (options, which key and
// order a command on the bus, do not apply in one process).
func (l *Local) Call(ctx context.Context, service, command string, req, resp proto.Message, _ ...bus.CallOption) error {
	name := service + "." + command
	l.mu.Lock()
	h := l.handlers[name]
	l.sent = append(l.sent, name)
	l.mu.Unlock()
	if h == nil {
		return fault.Terminal(fmt.Errorf("%s: no handler in this process", name))
	}
	data, err := proto.Marshal(req)
	if err != nil {
		return fault.Terminal(fmt.Errorf("encode %s request: %w", name, err))
	}
	out, err := h(ctx, data)
	if err != nil {
		return err
	}
	return proto.Unmarshal(out, resp)
}

// Sent are the commands called so far (service.command), oldest first.
func (l *Local) Sent() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...)
}
