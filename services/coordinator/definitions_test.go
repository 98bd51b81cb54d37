package coordinator

import (
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/contract"

	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

func TestRancherSagasRunTheirStepsInOrder(t *testing.T) {
	want := map[string][]string{
		contract.RancherProjectCreate:    {"object", "groups", "binding", "team", "settle"},
		contract.RancherProjectTerminate: {"binding", "object", "groups", "settle"},
	}
	acts := activities{}.all()
	for _, def := range contract.Definitions(time.Minute) {
		steps, ok := want[def.Name]
		if !ok {
			continue
		}
		delete(want, def.Name)
		if len(def.Steps) != len(steps) {
			t.Fatalf("%s: %d steps, want %v", def.Name, len(def.Steps), steps)
		}
		for i, st := range def.Steps {
			if st.Name != steps[i] {
				t.Errorf("%s step %d = %s, want %s", def.Name, i, st.Name, steps[i])
			}
			for _, a := range []string{st.Action, st.Compensation} {
				if _, ok := acts[a]; a != "" && !ok {
					t.Errorf("%s step %s: activity %s is not registered", def.Name, st.Name, a)
				}
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("definitions missing: %v", want)
	}
}

func TestProjectGroupsCleanupDeletesTheChildFirstAndTheParentOnlyWhenEmpty(t *testing.T) {
	req := contract.ProjectGroupsCleanup("off", []contract.GroupSpec{
		{Name: "c_cmtest"}, {Name: "project_alpha_workloads-manage", Parent: "c_cmtest"},
	})
	want := []*sitebusv1.GroupRef{
		{Name: "project_alpha_workloads-manage", ParentName: "c_cmtest"},
		{Name: "c_cmtest", IfNoSubgroups: true},
	}
	if len(req.Groups) != len(want) {
		t.Fatalf("groups %v", req.Groups)
	}
	for i, g := range req.Groups {
		if g.Name != want[i].Name || g.ParentName != want[i].ParentName || g.IfNoSubgroups != want[i].IfNoSubgroups {
			t.Errorf("group %d = %v, want %v", i, g, want[i])
		}
	}
}
