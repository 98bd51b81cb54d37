package orderflow

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// binderBackend is a fakeBackend that binds groups (Rancher's
// projectRoleTemplateBindings).
type binderBackend struct {
	*fakeBackend
	bound map[string][]string // group → objects
}

func (b *binderBackend) BindGroup(_ context.Context, id, group string) (bool, error) {
	for _, o := range b.bound[group] {
		if o == id {
			return false, nil
		}
	}
	b.bound[group] = append(b.bound[group], id)
	return true, nil
}

func (b *binderBackend) UnbindGroup(_ context.Context, id, group string) error {
	var left []string
	for _, o := range b.bound[group] {
		if o != id {
			left = append(left, o)
		}
	}
	b.bound[group] = left
	return nil
}

func (b *binderBackend) GroupBindings(_ context.Context, group string) ([]string, error) {
	return b.bound[group], nil
}

func testService(t *testing.T, w Client, b interface{ Type() string }) *Service {
	t.Helper()
	o := Offering{Waldur: w}
	switch b := b.(type) {
	case *fakeBackend:
		o.Backend = b
	case *binderBackend:
		o.Backend = b
	}
	return &Service{Flow: testFlow(t, w, &backendHandler{o: o}, nil), backends: map[string]Offering{offeringHex: o}}
}

// TestSagaStepsTheOrderServiceServes: the commands a saga's steps send,
// answered over fakes of the platform and Waldur.
func TestSagaStepsTheOrderServiceServes(t *testing.T) {
	ctx := context.Background()
	ref := &sitebusv1.ResourceRef{ResourceUuid: resUUID, Slug: "alpha", Name: "Alpha"}

	t.Run("create-object makes the object and says what it made", func(t *testing.T) {
		b := newFakeBackend()
		s := testService(t, newFakeWaldur(nil, nil), b)
		resp, err := s.createObject(ctx, &sitebusv1.CreateObjectRequest{OfferingUuid: offeringHex, Resource: ref, Limits: map[string]float64{"cpu": 2},
			AccessGroups: map[string]string{"admin": "g"}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.BackendId != "ns-alpha" || resp.Existed || resp.Limits["cpu"] != 2 || resp.GetMetadata().AsMap()["namespace"] != "ns-alpha" {
			t.Errorf("response %v", resp)
		}
		if len(b.created) != 1 || b.created[0].AccessGroups["admin"] != "g" {
			t.Errorf("created %v, want the access groups passed on", b.created)
		}
	})
	t.Run("create-object of an invalid name is its final answer", func(t *testing.T) {
		s := testService(t, newFakeWaldur(nil, nil), newFakeBackend())
		_, err := s.createObject(ctx, &sitebusv1.CreateObjectRequest{OfferingUuid: offeringHex, Resource: &sitebusv1.ResourceRef{Slug: "Bad Name"}})
		if !fault.IsTerminal(err) {
			t.Errorf("createObject = %v, want a terminal error", err)
		}
	})
	t.Run("a platform away is retried", func(t *testing.T) {
		b := newFakeBackend()
		b.fail["Delete"] = fault.Errorf(fault.Unavailable, "503")
		s := testService(t, newFakeWaldur(nil, nil), b)
		if _, err := s.deleteObject(ctx, &sitebusv1.DeleteObjectRequest{OfferingUuid: offeringHex, BackendId: "ns-alpha"}); err == nil || fault.IsTerminal(err) {
			t.Errorf("deleteObject = %v, want a retryable error", err)
		}
	})
	t.Run("delete-object removes the object", func(t *testing.T) {
		b := newFakeBackend()
		b.objects["ns-alpha"] = nil
		s := testService(t, newFakeWaldur(nil, nil), b)
		if _, err := s.deleteObject(ctx, &sitebusv1.DeleteObjectRequest{OfferingUuid: offeringHex, BackendId: "ns-alpha"}); err != nil || b.exists("ns-alpha") {
			t.Errorf("deleteObject = %v; object still there: %v", err, b.exists("ns-alpha"))
		}
	})
	t.Run("a command for an offering not here is its final answer", func(t *testing.T) {
		s := testService(t, newFakeWaldur(nil, nil), newFakeBackend())
		if _, err := s.deleteObject(ctx, &sitebusv1.DeleteObjectRequest{OfferingUuid: "ffff"}); !fault.IsTerminal(err) {
			t.Errorf("deleteObject = %v, want a terminal error", err)
		}
	})
	t.Run("bind-group on a backend that binds no groups is its final answer", func(t *testing.T) {
		s := testService(t, newFakeWaldur(nil, nil), newFakeBackend())
		if _, err := s.bindGroup(ctx, &sitebusv1.BindGroupRequest{OfferingUuid: offeringHex, BackendId: "p-1", Group: "g"}); !fault.IsTerminal(err) {
			t.Errorf("bindGroup = %v, want a terminal error", err)
		}
	})
	t.Run("unbind-group says how many projects still use the group", func(t *testing.T) {
		b := &binderBackend{fakeBackend: newFakeBackend(), bound: map[string][]string{}}
		s := testService(t, newFakeWaldur(nil, nil), b)
		for _, p := range []string{"p-1", "p-2"} {
			if resp, err := s.bindGroup(ctx, &sitebusv1.BindGroupRequest{OfferingUuid: offeringHex, BackendId: p, Group: "g"}); err != nil || !resp.Created {
				t.Fatalf("bindGroup %s = %v, %v", p, resp, err)
			}
		}
		resp, err := s.unbindGroup(ctx, &sitebusv1.UnbindGroupRequest{OfferingUuid: offeringHex, BackendId: "p-1", Group: "g"})
		if err != nil || resp.StillBound != 1 {
			t.Errorf("unbindGroup = %v, %v; want 1 still bound", resp, err)
		}
	})
	t.Run("settle-order tells Waldur what the saga made, then marks the order done", func(t *testing.T) {
		w := newFakeWaldur(order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), resource("alpha"))
		s := testService(t, w, newFakeBackend())
		md, _ := structpb.NewStruct(map[string]any{"namespace": "ns-alpha"})
		resp, err := s.settleOrder(ctx, &sitebusv1.SettleOrderRequest{OfferingUuid: offeringHex, OrderUuid: orderUUID, ResourceUuid: resUUID,
			BackendId: "ns-alpha", Limits: map[string]float64{"cpu": 1.4}, Metadata: md})
		if err != nil || resp.OrderState != waldur.OrderStateDone {
			t.Fatalf("settleOrder = %v, %v", resp, err)
		}
		if w.state(orderUUID) != waldur.OrderStateDone || w.resources[resUUID].BackendID != "ns-alpha" || w.limitsSet["cpu"] != 1 || w.metadata["namespace"] != "ns-alpha" {
			t.Errorf("order %s, backend id %q, limits %v, metadata %v", w.state(orderUUID), w.resources[resUUID].BackendID, w.limitsSet, w.metadata)
		}
	})
	t.Run("settle-order with Waldur away is retried", func(t *testing.T) {
		w := newFakeWaldur(order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), resource("alpha"))
		w.fail["SetBackendID"] = errors.New("connection refused")
		s := testService(t, w, newFakeBackend())
		_, err := s.settleOrder(ctx, &sitebusv1.SettleOrderRequest{OfferingUuid: offeringHex, OrderUuid: orderUUID, ResourceUuid: resUUID, BackendId: "ns-alpha"})
		if err == nil || fault.IsTerminal(err) || w.state(orderUUID) != waldur.OrderStateExecuting {
			t.Errorf("settleOrder = %v, order %s; want a retryable error and the order still executing", err, w.state(orderUUID))
		}
	})
}
