package contract_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

func TestLocalRunsTheHandlerOfACommandInProcess(t *testing.T) {
	l := &contract.Local{}
	var seen *sitebusv1.CreateObjectRequest
	contract.Handle(l, contract.CreateObject, func(_ context.Context, req *sitebusv1.CreateObjectRequest) (*sitebusv1.CreateObjectResponse, error) {
		seen = req
		req.OrderUuid = "changed by the handler"
		return &sitebusv1.CreateObjectResponse{BackendId: "ns-" + req.GetResource().GetName()}, nil
	})
	refused := errors.New("refused")
	contract.Handle(l, contract.DeleteObject, func(context.Context, *sitebusv1.DeleteObjectRequest) (*sitebusv1.DeleteObjectResponse, error) {
		return nil, fault.Terminal(refused)
	})

	req := &sitebusv1.CreateObjectRequest{OrderUuid: "o1", Resource: &sitebusv1.ResourceRef{Name: "lab"}}
	resp, err := contract.CreateObject.Call(context.Background(), l, req)
	if err != nil || resp.BackendId != "ns-lab" {
		t.Fatalf("create-object: %v, %v", resp, err)
	}
	if req.OrderUuid != "o1" || seen == req {
		t.Errorf("the handler shared the caller's request (%q): on the bus it gets a copy", req.OrderUuid)
	}

	_, err = contract.DeleteObject.Call(context.Background(), l, &sitebusv1.DeleteObjectRequest{})
	if !errors.Is(err, refused) || !fault.IsTerminal(err) {
		t.Errorf("a handler's terminal error came back as %v", err)
	}
	_, err = contract.SettleOrder.Call(context.Background(), l, &sitebusv1.SettleOrderRequest{})
	if !fault.IsTerminal(err) {
		t.Errorf("a command without a handler: %v, want a terminal error", err)
	}
	want := []string{"order.create-object", "order.delete-object", "order.settle-order"}
	if got := l.Sent(); !slices.Equal(got, want) {
		t.Errorf("Sent() = %v, want %v", got, want)
	}
}
