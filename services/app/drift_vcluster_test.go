package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/membership"
)

// clusterBindings is Rancher's imported virtual clusters by host
// namespace, as PlanSync sees them: the bindings to make and remove, or
// an error.
type clusterBindings map[string]struct {
	missing, stale []rancher.RoleBinding
	err            error
}

func (c clusterBindings) PlanSync(_ context.Context, _, ns string) (missing, stale []rancher.RoleBinding, err error) {
	p := c[ns]
	return p.missing, p.stale, p.err
}

// A role group's binding deleted by hand and a marked binding the source
// no longer wants are reported per resource; a resource whose create has
// not settled and a cluster that is not the resource's are left out; any
// other error fails the check.
func TestVClusterBindingsDriftReportsWhatTheMemberSyncWouldChange(t *testing.T) {
	owner := rancher.RoleBinding{RoleTemplateID: "cluster-owner", GroupPrincipalID: rancher.GroupPrincipalID("c_0a_cluster-owner")}
	stale := rancher.RoleBinding{ID: "c-m-1:crtb-x", RoleTemplateID: "cluster-member", GroupPrincipalID: rancher.GroupPrincipalID("c_0a_cluster-member")}
	resources := []waldur.Resource{{UUID: "r-1", BackendID: "vc-a"}, {UUID: "r-2"}, {UUID: "r-3", BackendID: "vc-foreign"}, {UUID: "r-4", BackendID: "vc-ok"}}
	planner := clusterBindings{
		"vc-a":       {missing: []rancher.RoleBinding{owner}, stale: []rancher.RoleBinding{stale}},
		"vc-foreign": {err: fault.Errorf(fault.NotManaged, "cluster vc-foreign is not r-3's")},
	}
	d := &VClusterBindingsDrift{ResourceSync: ResourceSync{Offering: "0123456789abcdef0123456789abcdef"}, Access: planner,
		Resources: func(context.Context) ([]waldur.Resource, error) { return resources, nil }}
	found, err := d.Find(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.DriftFinding{
		{Kind: contract.DriftBindings, Resource: "r-1", Object: "vc-a/cluster-owner/" + owner.GroupPrincipalID,
			Want: owner.GroupPrincipalID + " bound as cluster-owner", Have: "no binding"},
		{Kind: contract.DriftBindings, Resource: "r-1", Object: "vc-a/cluster-member/" + stale.GroupPrincipalID,
			Want: "no binding", Have: stale.GroupPrincipalID + " bound as cluster-member (c-m-1:crtb-x)"},
	}
	if len(found) != len(want) || found[0] != want[0] || found[1] != want[1] {
		t.Errorf("findings\n%+v\nwant\n%+v", found, want)
	}
	planner["vc-ok"] = struct {
		missing, stale []rancher.RoleBinding
		err            error
	}{err: errors.New("rancher is down")}
	if _, err := d.Find(t.Context()); err == nil {
		t.Error("a failing comparison was not reported")
	}
}

type hostNamespaces map[string]bool

func (h hostNamespaces) Exists(_ context.Context, id string) (bool, error) { return h[id], nil }

// Membership makes a virtual cluster's missing role groups only while its
// host namespace exists: the groups of a resource without one (no
// namespace yet, or gone) are left out of the comparison.
func TestVClusterMembersDriftLeavesOutResourcesWithoutAHostNamespace(t *testing.T) {
	plan := func(context.Context, string) ([]membership.GroupMembers, error) {
		var out []membership.GroupMembers
		for _, r := range []string{"r-1", "r-2", "r-3"} {
			out = append(out, membership.GroupMembers{Resource: r, Group: contract.GroupSpec{Name: "c_" + r + "_cluster-owner"}},
				membership.GroupMembers{Resource: r, Group: contract.GroupSpec{Name: "c_" + r + "_cluster-member"}})
		}
		return out, nil
	}
	resources := func(context.Context) ([]waldur.Resource, error) {
		return []waldur.Resource{{UUID: "r-1", BackendID: "vc-1"}, {UUID: "r-2", BackendID: "vc-gone"}, {UUID: "r-3"}}, nil
	}
	got, err := withHostNamespace(plan, resources, hostNamespaces{"vc-1": true})(t.Context(), "0123")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Resource != "r-1" || got[1].Resource != "r-1" {
		t.Errorf("kept %+v, want r-1's two groups", got)
	}
}

// limitRanges is the host cluster's LimitRanges by namespace, as
// LimitRangeDrift sees them, with the repairs made.
type limitRanges struct {
	have     map[string]string
	errs     map[string]error
	repaired []string
}

func (l *limitRanges) LimitRangeDrift(_ context.Context, ns, _ string) (string, error) {
	return l.have[ns], l.errs[ns]
}

func (l *limitRanges) RepairLimitRange(_ context.Context, ns, _ string) error {
	l.repaired = append(l.repaired, ns)
	return nil
}

// A LimitRange deleted by hand is reported and its repair names its
// namespace; a namespace that is gone or not the resource's is left out.
func TestLimitRangeDriftReportsAndRepairsPerHostNamespace(t *testing.T) {
	lr := &limitRanges{have: map[string]string{"vc-a": "missing"},
		errs: map[string]error{"vc-gone": backend.ErrNotFound, "vc-foreign": fault.Errorf(fault.NotManaged, "not r-3's")}}
	d := &LimitRangeDrift{Backend: lr, Resources: func(context.Context) ([]waldur.Resource, error) {
		return []waldur.Resource{{UUID: "r-1", BackendID: "vc-a"}, {UUID: "r-2", BackendID: "vc-gone"}, {UUID: "r-3", BackendID: "vc-foreign"},
			{UUID: "r-4", BackendID: "vc-ok"}, {UUID: "r-5"}}, nil
	}}
	found, err := d.Find(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Resource != "r-1" || !strings.HasPrefix(found[0].Object, "vc-a/limitrange/") {
		t.Fatalf("findings %+v, want vc-a's LimitRange only", found)
	}
	if err := d.Repair(t.Context(), found[0]); err != nil || len(lr.repaired) != 1 || lr.repaired[0] != "vc-a" {
		t.Errorf("repair: %v, repaired %v; want vc-a", err, lr.repaired)
	}
}
