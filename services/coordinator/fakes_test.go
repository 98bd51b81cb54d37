package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// sent is one command a step sent.
type sent struct {
	service, command string
	key, ordering    string
	req              proto.Message
}

func (s sent) String() string { return s.service + " " + s.command }

// services are the services the saga steps command (keycloak-sync, order,
// membership), served on an embedded NATS by fakes that answer as those
// services do and record what they were sent.
type services struct {
	mu   sync.Mutex
	sent []sent
	// fail makes a command fail for good (a terminal answer), e.g. the
	// platform refusing the object; flaky fails it retryably, once.
	fail  map[string]bool
	flaky map[string]bool
	// existing groups are there before the saga; existed: the object
	// was; stillBound: projects bound to the child group besides this one;
	// bindingExisted: the binding was there before the saga.
	existing       map[string]bool
	existed        bool
	stillBound     int32
	bindingExisted bool
}

func newServices() *services {
	return &services{fail: map[string]bool{}, flaky: map[string]bool{}, existing: map[string]bool{}}
}

func (s *services) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.sent {
		out = append(out, c.String())
	}
	return out
}

func (s *services) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = nil
}

// serve answers one command with fn, recording it; fail and flaky make
// it fail instead.
func serve[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}](t *testing.T, ctx context.Context, b *bus.Bus, s *services, service, command string, fn func(PReq) PResp) *bus.Subscription {
	t.Helper()
	sub, err := bus.Serve(ctx, b, bus.ServeConfig{Service: service, Command: command,
		Consumer: bus.ConsumerConfig{MaxDeliver: 2, Backoff: bus.ExponentialBackoff(5*time.Millisecond, 20*time.Millisecond)}},
		func(ctx context.Context, req PReq) (PResp, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, _ := bus.DeliveryFromContext(ctx)
			s.sent = append(s.sent, sent{service: service, command: command, key: d.Header.Get(bus.HeaderCallKey),
				ordering: d.Header.Get(bus.HeaderOrderingKey), req: req})
			if s.flaky[command] {
				s.flaky[command] = false
				return nil, errors.New(command + ": 503 Service Unavailable")
			}
			if s.fail[command] {
				return nil, bus.Terminal(fmt.Errorf("%s refused", command))
			}
			return fn(req), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// start serves every command of the sagas on b until the test ends.
func (s *services) start(t *testing.T, b *bus.Bus) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	subs := []*bus.Subscription{
		serve(t, ctx, b, s, contract.KeycloakSync, contract.CmdEnsureGroups, func(req *sitebusv1.EnsureGroupsRequest) *sitebusv1.EnsureGroupsResponse {
			resp := &sitebusv1.EnsureGroupsResponse{}
			for _, g := range req.Groups {
				resp.Groups = append(resp.Groups, &sitebusv1.EnsuredGroup{Id: "id-" + g.Name, Name: g.Name, Created: !s.existing[g.Name], Managed: true})
			}
			return resp
		}),
		serve(t, ctx, b, s, contract.KeycloakSync, contract.CmdDeleteGroups, func(req *sitebusv1.DeleteGroupsRequest) *sitebusv1.DeleteGroupsResponse {
			resp := &sitebusv1.DeleteGroupsResponse{}
			for _, g := range req.Groups {
				resp.DeletedIds = append(resp.DeletedIds, "id-"+g.Name)
			}
			return resp
		}),
		serve(t, ctx, b, s, contract.Order, contract.CmdCreateObject, func(req *sitebusv1.CreateObjectRequest) *sitebusv1.CreateObjectResponse {
			return &sitebusv1.CreateObjectResponse{BackendId: "obj-" + req.GetResource().GetSlug(), Existed: s.existed, Limits: map[string]float64{"cpu": 2}}
		}),
		serve(t, ctx, b, s, contract.Order, contract.CmdDeleteObject, func(*sitebusv1.DeleteObjectRequest) *sitebusv1.DeleteObjectResponse {
			return &sitebusv1.DeleteObjectResponse{Deleted: true}
		}),
		serve(t, ctx, b, s, contract.Order, contract.CmdSettleOrder, func(*sitebusv1.SettleOrderRequest) *sitebusv1.SettleOrderResponse {
			return &sitebusv1.SettleOrderResponse{OrderState: "done"}
		}),
		serve(t, ctx, b, s, contract.Order, contract.CmdBindGroup, func(*sitebusv1.BindGroupRequest) *sitebusv1.BindGroupResponse {
			return &sitebusv1.BindGroupResponse{Created: !s.bindingExisted}
		}),
		serve(t, ctx, b, s, contract.Order, contract.CmdUnbindGroup, func(*sitebusv1.UnbindGroupRequest) *sitebusv1.UnbindGroupResponse {
			return &sitebusv1.UnbindGroupResponse{StillBound: s.stillBound}
		}),
		serve(t, ctx, b, s, contract.Membership, contract.CmdSyncResource, func(*sitebusv1.SyncResourceRequest) *sitebusv1.SyncResourceResponse {
			return &sitebusv1.SyncResourceResponse{Added: 1}
		}),
		serve(t, ctx, b, s, contract.Membership, contract.CmdSyncCreated, func(*sitebusv1.SyncResourceRequest) *sitebusv1.SyncResourceResponse {
			return &sitebusv1.SyncResourceResponse{Added: 1}
		}),
	}
	t.Cleanup(func() {
		cancel()
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		for _, sub := range subs {
			sub.Stop(stop)
		}
	})
}

// newBus is an embedded NATS with the fake services on it.
func newBus(t *testing.T) (*bus.Bus, *services) {
	t.Helper()
	b := bustest.New(t, bus.Config{})
	s := newServices()
	s.start(t, b)
	return b, s
}
