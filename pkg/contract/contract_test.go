package contract_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// TestACommandIsCalledAndServedWithItsTypes: the declared command carries
// its request and answer over the bus, and a final refusal stays final.
func TestACommandIsCalledAndServedWithItsTypes(t *testing.T) {
	b := bustest.New(t, bus.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sub, err := contract.Serve(ctx, b, contract.EnsureGroups, bus.ConsumerConfig{MaxDeliver: 2},
		func(_ context.Context, req *sitebusv1.EnsureGroupsRequest) (*sitebusv1.EnsureGroupsResponse, error) {
			if len(req.Groups) == 0 {
				return nil, fault.Errorf(fault.Invalid, "ensure-groups: no group")
			}
			resp := &sitebusv1.EnsureGroupsResponse{}
			for _, g := range req.Groups {
				resp.Groups = append(resp.Groups, &sitebusv1.EnsuredGroup{Name: g.Name, Created: true})
			}
			return resp, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop(context.Background())

	resp, err := contract.EnsureGroups.Call(ctx, b, &sitebusv1.EnsureGroupsRequest{Groups: []*sitebusv1.GroupSpec{{Name: "g"}}}, bus.WithKey("one"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].Name != "g" || !resp.Groups[0].Created {
		t.Errorf("answer %v", resp)
	}
	_, err = contract.EnsureGroups.Call(ctx, b, &sitebusv1.EnsureGroupsRequest{}, bus.WithKey("two"))
	var remote *bus.RemoteError
	if !fault.IsTerminal(err) || !errors.As(err, &remote) {
		t.Errorf("a refused command = %v, want a terminal remote error", err)
	}
}
