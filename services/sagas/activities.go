package sagas

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/failpoint"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
)

// Commands of the services the steps call.
const (
	svcKeycloak   = "keycloak-sync"
	svcOrder      = "order"
	svcMembership = "membership"

	CmdEnsureGroups = "ensure-groups"
	CmdDeleteGroups = "delete-groups"
	CmdCreateObject = "create-object"
	CmdDeleteObject = "delete-object"
	CmdSettleOrder  = "settle-order"
	CmdSyncResource = "sync-resource"
)

// activities turn saga steps into commands.
type activities struct{ bus *bus.Bus }

func (a activities) all() map[string]saga.Activity {
	return map[string]saga.Activity{
		actEnsureGroups:        a.ensureGroups,
		actDeleteCreatedGroups: a.deleteCreatedGroups,
		actDeleteGroups:        a.deleteGroups,
		actCreateObject:        a.createObject,
		actDeleteCreatedObject: a.deleteCreatedObject,
		actDeleteObject:        a.deleteObject,
		actSyncTeam:            a.syncTeam,
		actSettle:              a.settle,
	}
}

// call sends one command keyed by saga, step and phase: a resumed step
// gets the answer of the command it sent before the crash.
func (a activities) call(ctx context.Context, in saga.ActivityInput, service, command string, req, resp proto.Message) (json.RawMessage, error) {
	phase := "do"
	if in.Compensating {
		phase = "undo"
	}
	key := fmt.Sprintf("saga:%s:%s:%s", in.SagaID, in.Step, phase)
	// Crash tests stop the coordinator here, between steps' commands.
	if err := failpoint.Inject(ctx, "saga/"+in.Step+"/"+phase); err != nil {
		return nil, err
	}
	// The command runs when its serving process handles nothing else about
	// the same resource (or, to settle, the same order).
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	ordering := events.ResourceKey(v.ResourceUUID)
	if command == CmdSettleOrder {
		ordering = events.OrderKey(v.OrderUUID)
	}
	if err := a.bus.Call(ctx, service, command, req, resp, bus.WithKey(key), bus.CallOrderingKey(ordering)); err != nil {
		return nil, err
	}
	out, err := protojson.Marshal(resp)
	return out, err
}

func input(in saga.ActivityInput) (NamespaceInput, error) {
	var v NamespaceInput
	if err := in.DecodeInput(&v); err != nil {
		return v, bus.Terminal(fmt.Errorf("saga %s: input: %w", in.SagaID, err))
	}
	return v, nil
}

// output decodes an earlier step's answer; ok is false when that step
// left none.
func output(in saga.ActivityInput, step string, m proto.Message) (bool, error) {
	raw, ok := in.Outputs[step]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	if err := protojson.Unmarshal(raw, m); err != nil {
		return false, bus.Terminal(fmt.Errorf("saga %s: output of %s: %w", in.SagaID, step, err))
	}
	return true, nil
}

func (a activities) ensureGroups(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	req := &sitebusv1.EnsureGroupsRequest{OfferingUuid: v.OfferingUUID}
	for _, g := range v.Groups {
		req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: g.Name, Description: g.Description})
	}
	return a.call(ctx, in, svcKeycloak, CmdEnsureGroups, req, &sitebusv1.EnsureGroupsResponse{})
}

// deleteCreatedGroups undoes ensureGroups: only the groups it created go;
// groups that were there before the saga stay.
func (a activities) deleteCreatedGroups(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	var ensured sitebusv1.EnsureGroupsResponse
	if ok, err := output(in, "groups", &ensured); err != nil || !ok {
		return nil, err
	}
	req := &sitebusv1.DeleteGroupsRequest{OfferingUuid: v.OfferingUUID}
	for _, g := range ensured.Groups {
		if g.Created {
			req.Groups = append(req.Groups, &sitebusv1.GroupRef{Id: g.Id, Name: g.Name})
		}
	}
	if len(req.Groups) == 0 {
		return nil, nil
	}
	return a.call(ctx, in, svcKeycloak, CmdDeleteGroups, req, &sitebusv1.DeleteGroupsResponse{})
}

func (a activities) deleteGroups(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	req := &sitebusv1.DeleteGroupsRequest{OfferingUuid: v.OfferingUUID}
	for _, g := range v.Groups {
		req.Groups = append(req.Groups, &sitebusv1.GroupRef{Name: g.Name})
	}
	return a.call(ctx, in, svcKeycloak, CmdDeleteGroups, req, &sitebusv1.DeleteGroupsResponse{})
}

func (a activities) createObject(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	var req sitebusv1.CreateObjectRequest
	if err := protojson.Unmarshal(v.Object, &req); err != nil {
		return nil, bus.Terminal(fmt.Errorf("saga %s: create request: %w", in.SagaID, err))
	}
	return a.call(ctx, in, svcOrder, CmdCreateObject, &req, &sitebusv1.CreateObjectResponse{})
}

// deleteCreatedObject undoes createObject unless the object was there
// before the saga.
func (a activities) deleteCreatedObject(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	var created sitebusv1.CreateObjectResponse
	if ok, err := output(in, "object", &created); err != nil || !ok || created.Existed {
		return nil, err
	}
	return a.call(ctx, in, svcOrder, CmdDeleteObject, &sitebusv1.DeleteObjectRequest{OfferingUuid: v.OfferingUUID, BackendId: created.BackendId}, &sitebusv1.DeleteObjectResponse{})
}

func (a activities) deleteObject(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	if v.BackendID == "" {
		return nil, nil
	}
	return a.call(ctx, in, svcOrder, CmdDeleteObject, &sitebusv1.DeleteObjectRequest{OfferingUuid: v.OfferingUUID, BackendId: v.BackendID}, &sitebusv1.DeleteObjectResponse{})
}

func (a activities) syncTeam(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	return a.call(ctx, in, svcMembership, CmdSyncResource, &sitebusv1.SyncResourceRequest{OfferingUuid: v.OfferingUUID, ResourceUuid: v.ResourceUUID}, &sitebusv1.SyncResourceResponse{})
}

func (a activities) settle(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	req := &sitebusv1.SettleOrderRequest{OfferingUuid: v.OfferingUUID, OrderUuid: v.OrderUUID, ResourceUuid: v.ResourceUUID}
	if in.Definition == NamespaceCreate {
		// What was created goes to Waldur with the done order.
		var created sitebusv1.CreateObjectResponse
		if ok, err := output(in, "object", &created); err != nil {
			return nil, err
		} else if ok {
			req.BackendId, req.Limits, req.Metadata = created.BackendId, created.Limits, created.Metadata
		}
	}
	return a.call(ctx, in, svcOrder, CmdSettleOrder, req, &sitebusv1.SettleOrderResponse{})
}
