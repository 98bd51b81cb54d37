// Package contract declares what sitebus's services ask of each other: each
// service's name and its commands, with their request and response types,
// in one file per service. A service that serves a command and one that
// calls it both import this package, never each other, so the services
// stay separate packages (and separate processes in the distributed
// topology) that agree on the wire through one declaration.
//
// The saga definitions live here too (coordinator.go): the service that
// starts a saga, the coordinator that runs it and the services its steps
// call all need the same names and input.
package contract

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
)

// Command is one command of a service: its subject is
// cmd.<Service>.<Name>, its request a Req and its answer a Resp (both
// protobuf messages, pointers to the generated types).
type Command[Req, Resp proto.Message] struct {
	Service string
	Name    string
}

// Caller sends a command and waits for its answer: a *bus.Bus, or a
// [Local] that runs the command's handler in this process (sitebus orders
// explain, which must publish nothing).
type Caller interface {
	Call(ctx context.Context, service, command string, req, resp proto.Message, opts ...bus.CallOption) error
}

var _ Caller = (*bus.Bus)(nil)

// Call sends req and waits for the answer (see [bus.Bus.Call] for keys,
// ordering and what a failure means).
func (c Command[Req, Resp]) Call(ctx context.Context, b Caller, req Req, opts ...bus.CallOption) (Resp, error) {
	var zero Resp
	// A typed nil of a generated message still knows its type.
	resp, _ := zero.ProtoReflect().Type().New().Interface().(Resp)
	if err := b.Call(ctx, c.Service, c.Name, req, resp, opts...); err != nil {
		return zero, err
	}
	return resp, nil
}

// Serve answers command c with h until the subscription is stopped (see
// [bus.Serve]); consumer tunes the consumer (MaxDeliver, Backoff, ...).
// It is a function, not a method of Command, because Go methods cannot
// name the element types bus.Serve needs.
func Serve[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}](ctx context.Context, b *bus.Bus, c Command[PReq, PResp], consumer bus.ConsumerConfig, h func(context.Context, PReq) (PResp, error)) (*bus.Subscription, error) {
	return bus.Serve(ctx, b, bus.ServeConfig{Service: c.Service, Command: c.Name, Consumer: consumer}, bus.CommandHandler[PReq, PResp](h))
}
