package orderflow

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sitebus/sitebus/pkg/contract"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// TestSagaInputsFromOneDescription: one function builds the four sagas'
// inputs from the offering kind's description.
func TestSagaInputsFromOneDescription(t *testing.T) {
	orderHex := "0b6f1a7e3c2d4e5f8a9b1c2d3e4f5a6b"
	tests := map[string]struct {
		offering    Offering
		typ         string
		orderLimits map[string]float64
		backendID   string
		wantDef     string
		wantGroups  []string
		wantBind    string
		wantAccess  map[string]string
		wantLimits  map[string]float64
		wantObject  bool
	}{
		"namespace create: groups by role, named in the create request": {
			offering: Offering{Groups: roleGroups}, typ: waldur.OrderTypeCreate, wantDef: contract.NamespaceCreate,
			wantGroups: []string{"ns-alpha-admin", "ns-alpha-viewer"}, wantAccess: map[string]string{"admin": "ns-alpha-admin", "viewer": "ns-alpha-viewer"},
			wantLimits: map[string]float64{"cpu": 1}, wantObject: true,
		},
		"namespace create: the order's limits win over the resource's": {
			offering: Offering{Groups: roleGroups}, typ: waldur.OrderTypeCreate, orderLimits: map[string]float64{"cpu": 4},
			wantDef: contract.NamespaceCreate, wantGroups: []string{"ns-alpha-admin", "ns-alpha-viewer"},
			wantAccess: map[string]string{"admin": "ns-alpha-admin", "viewer": "ns-alpha-viewer"}, wantLimits: map[string]float64{"cpu": 4}, wantObject: true,
		},
		"namespace terminate: the object and its groups": {
			offering: Offering{Groups: roleGroups}, typ: waldur.OrderTypeTerminate, backendID: "ns-alpha",
			wantDef: contract.NamespaceTerminate, wantGroups: []string{"ns-alpha-admin", "ns-alpha-viewer"},
		},
		"rancher project create: the project's groups, the child bound": {
			offering: Offering{ProjectGroups: projectGroups}, typ: waldur.OrderTypeCreate, wantDef: contract.RancherProjectCreate,
			wantGroups: []string{"c-cluster", "c-cluster-proj"}, wantBind: "c-cluster-proj", wantLimits: map[string]float64{"cpu": 1}, wantObject: true,
		},
		"rancher project terminate: the child unbound": {
			offering: Offering{ProjectGroups: projectGroups}, typ: waldur.OrderTypeTerminate, backendID: "p-1",
			wantDef: contract.RancherProjectTerminate, wantGroups: []string{"c-cluster", "c-cluster-proj"}, wantBind: "c-cluster-proj",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := resource("alpha")
			res.BackendID = tc.backendID
			w := newFakeWaldur(nil, res)
			o := tc.offering
			o.Waldur, o.Backend = w, newFakeBackend()
			h := &backendHandler{o: o, kind: kindOf(o)}
			ord := &Order{Order: order(tc.typ, waldur.OrderStateExecuting), OfferingUUID: offeringHex, Log: slog.New(slog.DiscardHandler)}
			ord.Limits = tc.orderLimits
			var sg *Saga
			var err error
			if tc.typ == waldur.OrderTypeTerminate {
				sg, err = h.Terminate(context.Background(), ord)
			} else {
				sg, err = h.Create(context.Background(), ord)
			}
			if err != nil {
				t.Fatal(err)
			}
			if sg == nil || sg.Definition != tc.wantDef {
				t.Fatalf("saga %+v, want %s", sg, tc.wantDef)
			}
			in := sg.Input.(contract.NamespaceInput)
			if in.OfferingUUID != offeringHex || in.OrderUUID != orderHex || in.ResourceUUID != resUUID || in.BackendID != tc.backendID {
				t.Errorf("input names offering %s, order %s, resource %s, backend %q", in.OfferingUUID, in.OrderUUID, in.ResourceUUID, in.BackendID)
			}
			var groups []string
			for _, g := range in.Groups {
				groups = append(groups, g.Name)
			}
			if !slices.Equal(groups, tc.wantGroups) || in.Bind != tc.wantBind {
				t.Errorf("groups %v bind %q, want %v bind %q", groups, in.Bind, tc.wantGroups, tc.wantBind)
			}
			if (len(in.Object) > 0) != tc.wantObject {
				t.Fatalf("create request present: %v, want %v", len(in.Object) > 0, tc.wantObject)
			}
			if !tc.wantObject {
				return
			}
			var req sitebusv1.CreateObjectRequest
			if err := protojson.Unmarshal(in.Object, &req); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(req.AccessGroups, tc.wantAccess) || !maps.Equal(req.Limits, tc.wantLimits) || req.GetResource().GetSlug() != "alpha" {
				t.Errorf("create request access %v limits %v slug %q, want %v %v alpha", req.AccessGroups, req.Limits, req.GetResource().GetSlug(), tc.wantAccess, tc.wantLimits)
			}
		})
	}
}

// TestDirectCreateTellsWaldurWhatWasMade: backend id, limits (rounded to
// set_limits' integers) and metadata; the team synced once, keyed by order.
func TestDirectCreateTellsWaldurWhatWasMade(t *testing.T) {
	res := resource("alpha")
	w := newFakeWaldur(nil, res)
	sy := &fakeSync{}
	o := Offering{Waldur: w, Backend: newFakeBackend(), SyncTeam: true}
	h := &backendHandler{o: o, sync: sy.sync}
	ord := &Order{Order: order(waldur.OrderTypeCreate, waldur.OrderStateExecuting), OfferingUUID: offeringHex, Log: slog.New(slog.DiscardHandler)}
	ord.Limits = map[string]float64{"cpu": 2.6}
	if sg, err := h.Create(context.Background(), ord); err != nil || sg != nil {
		t.Fatalf("Create = %v, %v; want done directly", sg, err)
	}
	if w.resources[resUUID].BackendID != "ns-alpha" || !maps.Equal(w.limitsSet, map[string]int64{"cpu": 3}) || w.metadata["namespace"] != "ns-alpha" {
		t.Errorf("Waldur has backend id %q, limits %v, metadata %v", w.resources[resUUID].BackendID, w.limitsSet, w.metadata)
	}
	if len(sy.calls) != 1 || sy.calls[0].ResourceUuid != resUUID || sy.keys[0] != "created:"+orderUUID {
		t.Errorf("team syncs %v keys %v, want one for the resource keyed by the order", sy.calls, sy.keys)
	}
}
