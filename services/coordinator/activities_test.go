package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/saga"
)

const (
	offeringHex = "5e1f0a2b3c4d4e5f8a9b0c1d2e3f4a5b"
	orderHex    = "0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d"
	resourceHex = "9f8e7d6c5b4a49388271605f4e3d2c1b"
)

var (
	nsGroups      = []contract.GroupSpec{{Role: "admin", Name: "ns_alpha_admin"}, {Role: "readwrite", Name: "ns_alpha_readwrite"}}
	rancherGroups = []contract.GroupSpec{{Name: "c_cm1"}, {Name: "project_physics_member", Parent: "c_cm1"}}
)

func createRequest(t *testing.T) *sitebusv1.CreateObjectRequest {
	t.Helper()
	return &sitebusv1.CreateObjectRequest{OfferingUuid: offeringHex, OrderUuid: orderHex,
		Resource: &sitebusv1.ResourceRef{ResourceUuid: resourceHex, Slug: "alpha"}}
}

func rawInput(t *testing.T, v contract.NamespaceInput) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func rawOutput(t *testing.T, m proto.Message) json.RawMessage {
	t.Helper()
	raw, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestActivities calls each activity as the coordinator does and checks
// the one command it sends (or that it sends none), its idempotency key
// (saga, step, phase) and what the command is ordered by.
func TestActivities(t *testing.T) {
	createIn, err := contract.NewCreateInput(createRequest(t), nsGroups)
	if err != nil {
		t.Fatal(err)
	}
	rancherIn, _ := contract.NewCreateInput(createRequest(t), rancherGroups)
	rancherIn.Bind = "project_physics_member"
	terminateIn := contract.NamespaceInput{OfferingUUID: offeringHex, OrderUUID: orderHex, ResourceUUID: resourceHex, Groups: rancherGroups,
		BackendID: "p-physics", Bind: "project_physics_member"}
	created := rawOutput(t, &sitebusv1.CreateObjectResponse{BackendId: "obj-alpha", Limits: map[string]float64{"cpu": 2}})
	existed := rawOutput(t, &sitebusv1.CreateObjectResponse{BackendId: "obj-alpha", Existed: true})
	ensured := rawOutput(t, &sitebusv1.EnsureGroupsResponse{Groups: []*sitebusv1.EnsuredGroup{
		{Id: "g1", Name: "c_cm1", Created: false}, {Id: "g2", Name: "project_physics_member", Created: true}}})
	noneCreated := rawOutput(t, &sitebusv1.EnsureGroupsResponse{Groups: []*sitebusv1.EnsuredGroup{{Id: "g1", Name: "c_cm1"}}})
	bound := rawOutput(t, &sitebusv1.BindGroupResponse{Created: true})
	tests := map[string]struct {
		activity   string
		definition string
		step       string
		undo       bool
		input      contract.NamespaceInput
		outputs    map[string]json.RawMessage
		// want is the command sent ("" for none) and its request.
		want         string
		wantReq      proto.Message
		wantOrdering string
		wantTerminal bool
	}{
		"ensure-groups sends every group with its parent": {
			activity: contract.ActEnsureGroups, definition: contract.RancherProjectCreate, step: "groups", input: rancherIn,
			want: "keycloak-sync ensure-groups",
			wantReq: &sitebusv1.EnsureGroupsRequest{OfferingUuid: offeringHex, Groups: []*sitebusv1.GroupSpec{
				{Name: "c_cm1"}, {Name: "project_physics_member", ParentName: "c_cm1"}}},
		},
		"delete-created-groups deletes only the groups the saga created, children first": {
			activity: contract.ActDeleteCreatedGroups, definition: contract.RancherProjectCreate, step: "groups", undo: true, input: rancherIn,
			outputs: map[string]json.RawMessage{"groups": ensured},
			want:    "keycloak-sync delete-groups",
			wantReq: &sitebusv1.DeleteGroupsRequest{OfferingUuid: offeringHex, Groups: []*sitebusv1.GroupRef{
				{Id: "g2", Name: "project_physics_member", IfNoSubgroups: true}}},
		},
		"delete-created-groups deletes nothing when every group was there before": {
			activity: contract.ActDeleteCreatedGroups, definition: contract.NamespaceCreate, step: "groups", undo: true, input: createIn,
			outputs: map[string]json.RawMessage{"groups": noneCreated},
		},
		"delete-created-groups deletes nothing when ensure-groups left no answer": {
			activity: contract.ActDeleteCreatedGroups, definition: contract.NamespaceCreate, step: "groups", undo: true, input: createIn,
		},
		"delete-groups deletes the namespace's groups by name": {
			activity: contract.ActDeleteGroups, definition: contract.NamespaceTerminate, step: "groups", input: contract.NamespaceInput{OfferingUUID: offeringHex, ResourceUUID: resourceHex, Groups: nsGroups},
			want: "keycloak-sync delete-groups",
			wantReq: &sitebusv1.DeleteGroupsRequest{OfferingUuid: offeringHex, Groups: []*sitebusv1.GroupRef{
				{Name: "ns_alpha_admin"}, {Name: "ns_alpha_readwrite"}}},
		},
		"create-object sends the order's create request": {
			activity: contract.ActCreateObject, definition: contract.NamespaceCreate, step: "object", input: createIn,
			want: "order create-object", wantReq: createRequest(t),
		},
		"delete-created-object deletes the object the saga made": {
			activity: contract.ActDeleteCreatedObject, definition: contract.NamespaceCreate, step: "object", undo: true, input: createIn,
			outputs: map[string]json.RawMessage{"object": created},
			want:    "order delete-object", wantReq: &sitebusv1.DeleteObjectRequest{OfferingUuid: offeringHex, BackendId: "obj-alpha"},
		},
		"delete-created-object keeps an object that was there before": {
			activity: contract.ActDeleteCreatedObject, definition: contract.NamespaceCreate, step: "object", undo: true, input: createIn,
			outputs: map[string]json.RawMessage{"object": existed},
		},
		"delete-object deletes the resource's object": {
			activity: contract.ActDeleteObject, definition: contract.NamespaceTerminate, step: "object", input: terminateIn,
			want: "order delete-object", wantReq: &sitebusv1.DeleteObjectRequest{OfferingUuid: offeringHex, BackendId: "p-physics"},
		},
		"delete-object of a resource that never got an object does nothing": {
			activity: contract.ActDeleteObject, definition: contract.NamespaceTerminate, step: "object", input: contract.NamespaceInput{OfferingUUID: offeringHex, ResourceUUID: resourceHex},
		},
		"sync-resource puts the team in after a namespace create": {
			activity: contract.ActSyncTeam, definition: contract.NamespaceCreate, step: "team", input: createIn,
			want: "membership sync-resource", wantReq: &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resourceHex},
		},
		"sync-resource of a Rancher create tells membership the project and binding are made": {
			activity: contract.ActSyncTeam, definition: contract.RancherProjectCreate, step: "team", input: rancherIn,
			want: "membership sync-created-resource", wantReq: &sitebusv1.SyncResourceRequest{OfferingUuid: offeringHex, ResourceUuid: resourceHex},
		},
		"settle of a create reports what was created": {
			activity: contract.ActSettle, definition: contract.NamespaceCreate, step: "settle", input: createIn,
			outputs: map[string]json.RawMessage{"object": created},
			want:    "order settle-order", wantOrdering: events.OrderKey(orderHex),
			wantReq: &sitebusv1.SettleOrderRequest{OfferingUuid: offeringHex, OrderUuid: orderHex, ResourceUuid: resourceHex,
				BackendId: "obj-alpha", Limits: map[string]float64{"cpu": 2}},
		},
		"settle of a terminate reports the order only": {
			activity: contract.ActSettle, definition: contract.RancherProjectTerminate, step: "settle", input: terminateIn,
			outputs: map[string]json.RawMessage{"object": created},
			want:    "order settle-order", wantOrdering: events.OrderKey(orderHex),
			wantReq: &sitebusv1.SettleOrderRequest{OfferingUuid: offeringHex, OrderUuid: orderHex, ResourceUuid: resourceHex},
		},
		"bind-group binds the child group to the project the saga made": {
			activity: contract.ActBindGroup, definition: contract.RancherProjectCreate, step: "binding", input: rancherIn,
			outputs: map[string]json.RawMessage{"object": created},
			want:    "order bind-group", wantReq: &sitebusv1.BindGroupRequest{OfferingUuid: offeringHex, BackendId: "obj-alpha", Group: "project_physics_member"},
		},
		"bind-group without a project is final": {
			activity: contract.ActBindGroup, definition: contract.RancherProjectCreate, step: "binding", input: rancherIn,
			wantTerminal: true,
		},
		"unbind-created-group removes a binding the saga made": {
			activity: contract.ActUnbindCreated, definition: contract.RancherProjectCreate, step: "binding", undo: true, input: rancherIn,
			outputs: map[string]json.RawMessage{"object": created, "binding": bound},
			want:    "order unbind-group", wantReq: &sitebusv1.UnbindGroupRequest{OfferingUuid: offeringHex, BackendId: "obj-alpha", Group: "project_physics_member"},
		},
		"unbind-created-group keeps a binding that was there before": {
			activity: contract.ActUnbindCreated, definition: contract.RancherProjectCreate, step: "binding", undo: true, input: rancherIn,
			outputs: map[string]json.RawMessage{"object": created, "binding": rawOutput(t, &sitebusv1.BindGroupResponse{})},
		},
		"unbind-group removes the binding of the project being terminated": {
			activity: contract.ActUnbindGroup, definition: contract.RancherProjectTerminate, step: "binding", input: terminateIn,
			want: "order unbind-group", wantReq: &sitebusv1.UnbindGroupRequest{OfferingUuid: offeringHex, BackendId: "p-physics", Group: "project_physics_member"},
		},
		"unbind-group of a resource that never got a project does nothing": {
			activity: contract.ActUnbindGroup, definition: contract.RancherProjectTerminate, step: "binding",
			input: contract.NamespaceInput{OfferingUUID: offeringHex, ResourceUUID: resourceHex, Bind: "project_physics_member"},
		},
		"delete-project-groups deletes the child, then the parent if empty, when no project is bound": {
			activity: contract.ActDeleteProjectGroups, definition: contract.RancherProjectTerminate, step: "groups", input: terminateIn,
			outputs: map[string]json.RawMessage{"binding": rawOutput(t, &sitebusv1.UnbindGroupResponse{})},
			want:    "keycloak-sync delete-groups", wantReq: contract.ProjectGroupsCleanup(offeringHex, rancherGroups),
		},
		"delete-project-groups keeps the groups while another project is bound": {
			activity: contract.ActDeleteProjectGroups, definition: contract.RancherProjectTerminate, step: "groups", input: terminateIn,
			outputs: map[string]json.RawMessage{"binding": rawOutput(t, &sitebusv1.UnbindGroupResponse{StillBound: 1})},
		},
		"delete-project-groups keeps the groups when nothing was unbound": {
			activity: contract.ActDeleteProjectGroups, definition: contract.RancherProjectTerminate, step: "groups", input: terminateIn,
		},
		"an earlier step's answer that cannot be read is final": {
			activity: contract.ActDeleteCreatedObject, definition: contract.NamespaceCreate, step: "object", undo: true, input: createIn,
			outputs:      map[string]json.RawMessage{"object": json.RawMessage(`{"backendId": 7}`)},
			wantTerminal: true,
		},
	}
	b, svc := newBus(t)
	acts := activities{bus: b}.all()
	n := 0
	for name, tc := range tests {
		n++
		id := fmt.Sprintf("order-%d", n)
		t.Run(name, func(t *testing.T) {
			svc.reset()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := acts[tc.activity](ctx, saga.ActivityInput{SagaID: id, Definition: tc.definition, Step: tc.step,
				Compensating: tc.undo, Attempt: 1, Input: rawInput(t, tc.input), Outputs: tc.outputs})
			if tc.wantTerminal {
				if !fault.IsTerminal(err) {
					t.Errorf("err = %v, want a terminal error", err)
				}
				if got := svc.commands(); len(got) != 0 {
					t.Errorf("sent %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			svc.mu.Lock()
			sentCmds := slices.Clone(svc.sent)
			svc.mu.Unlock()
			if tc.want == "" {
				if len(sentCmds) != 0 {
					t.Errorf("sent %v, want nothing", sentCmds)
				}
				return
			}
			if len(sentCmds) != 1 || sentCmds[0].String() != tc.want {
				t.Fatalf("sent %v, want one %s", sentCmds, tc.want)
			}
			got := sentCmds[0]
			if !proto.Equal(got.req, tc.wantReq) {
				t.Errorf("request\n%v\nwant\n%v", got.req, tc.wantReq)
			}
			phase := "do"
			if tc.undo {
				phase = "undo"
			}
			if want := "saga:" + id + ":" + tc.step + ":" + phase; got.key != want {
				t.Errorf("key %q, want %q", got.key, want)
			}
			wantOrdering := tc.wantOrdering
			if wantOrdering == "" {
				wantOrdering = events.ResourceKey(resourceHex)
			}
			if got.ordering != wantOrdering {
				t.Errorf("ordered by %q, want %q", got.ordering, wantOrdering)
			}
		})
	}
}

func TestActivityWithAnUnreadableInputIsFinal(t *testing.T) {
	acts := activities{}.all()
	for name, act := range acts {
		_, err := act(t.Context(), saga.ActivityInput{SagaID: "order-x", Step: "s", Input: json.RawMessage(`{"groups": 1}`)})
		if !fault.IsTerminal(err) {
			t.Errorf("%s: err = %v, want a terminal error", name, err)
		}
	}
}

// A step's command answered before the coordinator crashed gets the same
// answer when the resumed step sends it again: the key is the saga's,
// step's and phase's, so the command does not run twice.
func TestAResumedStepGetsTheAnswerOfItsCommand(t *testing.T) {
	b, svc := newBus(t)
	acts := activities{bus: b}.all()
	in, _ := contract.NewCreateInput(createRequest(t), nsGroups)
	ai := saga.ActivityInput{SagaID: contract.SagaID(orderHex), Definition: contract.NamespaceCreate, Step: "object", Attempt: 1, Input: rawInput(t, in)}
	first, err := acts[contract.ActCreateObject](t.Context(), ai)
	if err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	svc.existed = true // a second run would find the object there
	svc.mu.Unlock()
	ai.Attempt = 2
	again, err := acts[contract.ActCreateObject](t.Context(), ai)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(again) || len(svc.commands()) != 1 {
		t.Errorf("resumed step: %s after %s, %d commands run", again, first, len(svc.commands()))
	}
}
