package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/failpoint"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
)

// activities turn saga steps into commands, sent through bus: the
// message bus, or a contract.Local in sitebus orders explain.
type activities struct{ bus contract.Caller }

// Activities are the activities of sitebus's saga definitions, by name,
// each sending its step's command through c. The coordinator sends them
// on the bus; `sitebus orders explain` runs them in order through a
// contract.Local whose handlers run dry, to list what each step would do.
func Activities(c contract.Caller) map[string]saga.Activity { return activities{bus: c}.all() }

func (a activities) all() map[string]saga.Activity {
	return map[string]saga.Activity{
		contract.ActEnsureGroups:        a.ensureGroups,
		contract.ActDeleteCreatedGroups: a.deleteCreatedGroups,
		contract.ActDeleteGroups:        a.deleteGroups,
		contract.ActCreateObject:        a.createObject,
		contract.ActDeleteCreatedObject: a.deleteCreatedObject,
		contract.ActDeleteObject:        a.deleteObject,
		contract.ActSyncTeam:            a.syncTeam,
		contract.ActSettle:              a.settle,
		contract.ActBindGroup:           a.bindGroup,
		contract.ActUnbindCreated:       a.unbindCreated,
		contract.ActUnbindGroup:         a.unbindGroup,
		contract.ActDeleteProjectGroups: a.deleteProjectGroups,
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
	if command == contract.CmdSettleOrder {
		ordering = events.OrderKey(v.OrderUUID)
	}
	if err := a.bus.Call(ctx, service, command, req, resp, bus.WithKey(key), bus.CallOrderingKey(ordering)); err != nil {
		return nil, err
	}
	out, err := protojson.Marshal(resp)
	return out, err
}

func input(in saga.ActivityInput) (contract.NamespaceInput, error) {
	var v contract.NamespaceInput
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
		req.Groups = append(req.Groups, &sitebusv1.GroupSpec{Name: g.Name, Description: g.Description, ParentName: g.Parent})
	}
	return a.call(ctx, in, contract.KeycloakSync, contract.CmdEnsureGroups, req, &sitebusv1.EnsureGroupsResponse{})
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
	// Children before parents, and a group that meanwhile got a subgroup
	// (another project's, under a cluster group this saga made) stays.
	for _, g := range slices.Backward(ensured.Groups) {
		if g.Created {
			req.Groups = append(req.Groups, &sitebusv1.GroupRef{Id: g.Id, Name: g.Name, IfNoSubgroups: true})
		}
	}
	if len(req.Groups) == 0 {
		return nil, nil
	}
	return a.call(ctx, in, contract.KeycloakSync, contract.CmdDeleteGroups, req, &sitebusv1.DeleteGroupsResponse{})
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
	return a.call(ctx, in, contract.KeycloakSync, contract.CmdDeleteGroups, req, &sitebusv1.DeleteGroupsResponse{})
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
	return a.call(ctx, in, contract.Order, contract.CmdCreateObject, &req, &sitebusv1.CreateObjectResponse{})
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
	return a.call(ctx, in, contract.Order, contract.CmdDeleteObject, &sitebusv1.DeleteObjectRequest{OfferingUuid: v.OfferingUUID, BackendId: created.BackendId}, &sitebusv1.DeleteObjectResponse{})
}

func (a activities) deleteObject(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	if v.BackendID == "" {
		return nil, nil
	}
	return a.call(ctx, in, contract.Order, contract.CmdDeleteObject, &sitebusv1.DeleteObjectRequest{OfferingUuid: v.OfferingUUID, BackendId: v.BackendID}, &sitebusv1.DeleteObjectResponse{})
}

func (a activities) syncTeam(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	cmd := contract.CmdSyncResource
	if in.Definition == contract.RancherProjectCreate {
		cmd = contract.CmdSyncCreated
	}
	return a.call(ctx, in, contract.Membership, cmd, &sitebusv1.SyncResourceRequest{OfferingUuid: v.OfferingUUID, ResourceUuid: v.ResourceUUID}, &sitebusv1.SyncResourceResponse{})
}

func (a activities) settle(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	req := &sitebusv1.SettleOrderRequest{OfferingUuid: v.OfferingUUID, OrderUuid: v.OrderUUID, ResourceUuid: v.ResourceUUID}
	if in.Definition == contract.NamespaceCreate || in.Definition == contract.RancherProjectCreate {
		// What was created goes to Waldur with the done order.
		var created sitebusv1.CreateObjectResponse
		if ok, err := output(in, "object", &created); err != nil {
			return nil, err
		} else if ok {
			req.BackendId, req.Limits, req.Metadata = created.BackendId, created.Limits, created.Metadata
		}
	}
	return a.call(ctx, in, contract.Order, contract.CmdSettleOrder, req, &sitebusv1.SettleOrderResponse{})
}

// bindGroup binds the child group to the project the object step made.
func (a activities) bindGroup(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	var created sitebusv1.CreateObjectResponse
	if ok, err := output(in, "object", &created); err != nil {
		return nil, err
	} else if !ok || created.BackendId == "" {
		return nil, bus.Terminal(fmt.Errorf("saga %s: no project to bind %s to", in.SagaID, v.Bind))
	}
	return a.call(ctx, in, contract.Order, contract.CmdBindGroup, &sitebusv1.BindGroupRequest{OfferingUuid: v.OfferingUUID, BackendId: created.BackendId, Group: v.Bind}, &sitebusv1.BindGroupResponse{})
}

// unbindCreated undoes bindGroup only when it made the binding.
func (a activities) unbindCreated(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	var bound sitebusv1.BindGroupResponse
	if ok, err := output(in, "binding", &bound); err != nil || !ok || !bound.Created {
		return nil, err
	}
	var created sitebusv1.CreateObjectResponse
	if _, err := output(in, "object", &created); err != nil {
		return nil, err
	}
	return a.call(ctx, in, contract.Order, contract.CmdUnbindGroup, &sitebusv1.UnbindGroupRequest{OfferingUuid: v.OfferingUUID, BackendId: created.BackendId, Group: v.Bind}, &sitebusv1.UnbindGroupResponse{})
}

// unbindGroup removes the child group's binding from the project being
// terminated; its answer says whether other projects still use the group.
func (a activities) unbindGroup(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	if v.BackendID == "" {
		return nil, nil
	}
	return a.call(ctx, in, contract.Order, contract.CmdUnbindGroup, &sitebusv1.UnbindGroupRequest{OfferingUuid: v.OfferingUUID, BackendId: v.BackendID, Group: v.Bind}, &sitebusv1.UnbindGroupResponse{})
}

// deleteProjectGroups deletes the child group when no project is bound to
// it any more, and the parent when no subgroup is left under it. Without
// an unbind answer (the resource never got a project) nothing is known to
// be unused, so nothing goes.
func (a activities) deleteProjectGroups(ctx context.Context, in saga.ActivityInput) (json.RawMessage, error) {
	v, err := input(in)
	if err != nil {
		return nil, err
	}
	var unbound sitebusv1.UnbindGroupResponse
	if ok, err := output(in, "binding", &unbound); err != nil || !ok || unbound.StillBound > 0 {
		return nil, err
	}
	return a.call(ctx, in, contract.KeycloakSync, contract.CmdDeleteGroups, contract.ProjectGroupsCleanup(v.OfferingUUID, v.Groups), &sitebusv1.DeleteGroupsResponse{})
}
