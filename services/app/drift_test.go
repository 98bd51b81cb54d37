package app

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/okd"
	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/services/membership"
)

// bindingsGone is an OKD project whose bindings were all deleted by hand.
type bindingsGone struct{}

func (bindingsGone) PlanRoleBindings(_ context.Context, _ string, users map[string]string) ([]okd.BindingChange, error) {
	var out []okd.BindingChange
	for u, role := range users {
		out = append(out, okd.BindingChange{User: u, Action: okd.BindingCreate, Want: role})
	}
	return out, nil
}

// sync-resource applies a resource's whole team, so one drift pass asks
// for it once per resource however many of its users drifted; the next
// pass asks again.
func TestDriftRepairSyncsEachResourceOncePerPass(t *testing.T) {
	b := bustest.New(t, bus.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var syncs atomic.Int32
	sub, err := contract.Serve(ctx, b, contract.SyncResource, bus.ConsumerConfig{MaxDeliver: 2},
		func(context.Context, *sitebusv1.SyncResourceRequest) (*sitebusv1.SyncResourceResponse, error) {
			syncs.Add(1)
			return &sitebusv1.SyncResourceResponse{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop(context.Background())

	d := &BindingsDrift{ResourceSync: ResourceSync{Offering: "0123456789abcdef0123456789abcdef", Bus: b, kind: contract.DriftBindings}, Backend: bindingsGone{},
		Plan: func(context.Context, string) ([]membership.ResourceBindings, error) {
			return []membership.ResourceBindings{
				{Resource: "r-1", BackendID: "p-1", Users: map[string]string{"alice": "admin", "bob": "member", "carol": "member"}},
				{Resource: "r-2", BackendID: "p-2", Users: map[string]string{"dave": "admin"}},
			}, nil
		}}
	for pass := 1; pass <= 2; pass++ {
		found, err := d.Find(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 4 {
			t.Fatalf("pass %d: %d findings, want 4: %v", pass, len(found), found)
		}
		for _, f := range found {
			if err := d.Repair(ctx, f); err != nil {
				t.Fatalf("pass %d: repair %v: %v", pass, f, err)
			}
		}
		if got, want := syncs.Load(), int32(2*pass); got != want {
			t.Errorf("after pass %d: %d sync-resource calls, want %d (one per resource a pass)", pass, got, want)
		}
	}
}

// groupBindings is a Rancher with projects in the states a drift pass
// meets: bound, binding deleted by hand, gone, and not sitebus's.
type groupBindings map[string]error

func (g groupBindings) PlanGroupBinding(_ context.Context, projectID, _ string) (bool, error) {
	err, ok := g[projectID]
	return !ok, err
}

// Only a managed project whose child-group binding is gone is drift: a
// project that is gone or not sitebus's is left out, not an error.
func TestGroupBindingsDriftReportsOnlyMissingBindingsOnManagedProjects(t *testing.T) {
	child := contract.GroupSpec{Name: "project_genomics_member", Parent: "c_cm1"}
	d := &GroupBindingsDrift{ResourceSync: ResourceSync{Offering: "0123456789abcdef0123456789abcdef"},
		Backend: groupBindings{"c:p-bound": nil, "c:p-gone": backend.ErrNotFound, "c:p-foreign": fault.Errorf(fault.NotManaged, "not sitebus's")},
		Plan: func(context.Context, string) ([]membership.ProjectGroupBinding, error) {
			var out []membership.ProjectGroupBinding
			for _, id := range []string{"c:p-bound", "c:p-unbound", "c:p-gone", "c:p-foreign"} {
				out = append(out, membership.ProjectGroupBinding{Resource: "r-" + id, BackendID: id, Group: child})
			}
			return out, nil
		}}
	found, err := d.Find(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := contract.DriftFinding{Kind: contract.DriftBindings, Resource: "r-c:p-unbound", Object: "c:p-unbound/" + child.Name,
		Want: child.Name + " bound", Have: "no binding"}
	if len(found) != 1 || found[0] != want {
		t.Errorf("findings %+v, want only %+v", found, want)
	}
}
