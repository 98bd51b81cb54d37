package keycloaksync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

// serve starts one consumer per command, recording each in s.subs (which
// Run stops, also after a failed start).
func (s *Service) serve(ctx context.Context) error {
	starts := []func() (*bus.Subscription, error){
		func() (*bus.Subscription, error) { return serveCmd(ctx, s, contract.EnsureGroups, s.ensureGroups) },
		func() (*bus.Subscription, error) { return serveCmd(ctx, s, contract.DeleteGroups, s.deleteGroups) },
		func() (*bus.Subscription, error) {
			return serveCmd(ctx, s, contract.SetGroupMembers, s.setGroupMembers)
		},
		func() (*bus.Subscription, error) { return serveCmd(ctx, s, contract.AddMember, s.addMember) },
		func() (*bus.Subscription, error) { return serveCmd(ctx, s, contract.RemoveMember, s.removeMember) },
		func() (*bus.Subscription, error) { return serveCmd(ctx, s, contract.ListMembers, s.listMembers) },
	}
	for _, start := range starts {
		sub, err := start()
		if err != nil {
			return err
		}
		s.subs.Add(sub)
	}
	return nil
}

// serveCmd serves one command, classifying Keycloak's errors for the
// consumer and counting outcomes.
func serveCmd[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}](ctx context.Context, s *Service, c contract.Command[PReq, PResp], h func(context.Context, PReq) (PResp, error)) (*bus.Subscription, error) {
	cmd := c.Name
	return contract.Serve(ctx, s.bus, c, bus.ConsumerConfig{MaxDeliver: s.cfg.MaxDeliver, Backoff: s.cfg.Backoff}, func(ctx context.Context, req PReq) (PResp, error) {
		resp, err := h(ctx, req)
		err = classify(err)
		outcome := "ok"
		switch {
		case bus.IsTerminal(err):
			outcome = "terminal"
			s.log.Warn("command refused", "command", cmd, "err", err)
		case err != nil:
			outcome = "retry"
			s.log.Warn("command failed; will retry", "command", cmd, "err", err)
		}
		s.metrics.commands.WithLabelValues(cmd, outcome).Inc()
		return resp, err
	})
}

// classify adds the one rule of keycloak-sync's own to the error
// vocabulary: a 404 left over after the handlers dealt with the expected
// ones (a parent group that does not exist) will not go away by asking
// again, so it is marked final. Every other error keeps its kind, and
// fault.Decide (run by the bus around this handler) decides as everywhere:
// Keycloak's refusals are final, an outage is waited out, never skipped.
func classify(err error) error {
	if errors.Is(err, keycloak.ErrNotFound) && !fault.IsTerminal(err) {
		return fault.Terminal(err)
	}
	return err
}

// realmOf is the realm an offering's commands go to.
func (s *Service) realmOf(offeringUUID string) (*realm, error) {
	hex := strings.ToLower(strings.ReplaceAll(offeringUUID, "-", ""))
	r := s.byOffering[hex]
	if r == nil {
		return nil, bus.Terminal(fmt.Errorf("offering %q has no Keycloak configured here (backend_settings.keycloak_enabled)", offeringUUID))
	}
	return r, nil
}

func invalidf(format string, args ...any) error {
	return bus.Terminal(fmt.Errorf("%w: %s", keycloak.ErrInvalid, fmt.Sprintf(format, args...)))
}

// Handle has l answer the commands the service serves, with the same
// error rule as on the bus: sitebus orders explain runs a saga's Keycloak
// steps this way, without the bus.
//
// Pending memberships are kept in NATS, which explain does not reach: the
// handlers see none, and what they would store is forgotten.
func (s *Service) Handle(l *contract.Local) {
	s.mu.Lock()
	if s.pending == nil {
		s.pending = noPending{}
	}
	s.mu.Unlock()
	handleLocal(l, contract.EnsureGroups, s.ensureGroups)
	handleLocal(l, contract.DeleteGroups, s.deleteGroups)
	handleLocal(l, contract.SetGroupMembers, s.setGroupMembers)
	handleLocal(l, contract.AddMember, s.addMember)
	handleLocal(l, contract.RemoveMember, s.removeMember)
	handleLocal(l, contract.ListMembers, s.listMembers)
}

func handleLocal[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}](l *contract.Local, c contract.Command[PReq, PResp], h func(context.Context, PReq) (PResp, error)) {
	contract.Handle(l, c, func(ctx context.Context, req PReq) (PResp, error) {
		resp, err := h(ctx, req)
		return resp, classify(err)
	})
}

// noPending is an empty pending-membership bucket that keeps nothing,
// for the handlers of [Service.Handle]. Only what the command handlers
// call is here; the embedded nil interface is never called.
type noPending struct{ jetstream.KeyValue }

func (noPending) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, jetstream.ErrKeyNotFound
}

func (noPending) Put(context.Context, string, []byte) (uint64, error) { return 0, nil }

func (noPending) Delete(context.Context, string, ...jetstream.KVDeleteOpt) error { return nil }

func (noPending) ListKeysFiltered(context.Context, ...string) (jetstream.KeyLister, error) {
	return noKeys{}, nil
}

type noKeys struct{}

func (noKeys) Keys() <-chan string {
	c := make(chan string)
	close(c)
	return c
}

func (noKeys) Stop() error { return nil }
