package vcluster

import (
	"context"
	"slices"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
)

func subjects(bs []rancher.RoleBinding) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.RoleTemplateID+" "+b.Subject())
	}
	slices.Sort(out)
	return out
}

// PlanSync lists what Sync would make and remove, changing nothing: a
// role group's binding deleted by hand is missing, a marked binding the
// source no longer wants is stale, and bindings without sitebus's marks
// for the resource (the creator's, by hand, another resource's) are never
// stale.
func TestPlanSyncListsWhatSyncWouldChange(t *testing.T) {
	owner, member := "c_"+resUUID+"_cluster-owner", "c_"+resUUID+"_cluster-member"
	group := func(g string) rancher.RoleBinding {
		return rancher.RoleBinding{GroupPrincipalID: rancher.GroupPrincipalID(g)}
	}
	tests := map[string]struct {
		raw            map[string]any
		cluster        []rancher.RoleBinding
		missing, stale []string
	}{
		"as Sync left it: nothing": {
			raw: importSettings(),
			cluster: []rancher.RoleBinding{creator, foreign, otherResource,
				marked("c-m-1:crtb-o", "cluster-owner", group(owner)), marked("c-m-1:crtb-m", "cluster-member", group(member))},
		},
		"a role group's binding deleted by hand is missing": {
			raw:     importSettings(),
			cluster: []rancher.RoleBinding{creator, foreign, marked("c-m-1:crtb-o", "cluster-owner", group(owner))},
			missing: []string{"cluster-member keycloakoidc_group://" + member},
		},
		"a marked binding of a role no longer mapped is stale; foreign ones are not": {
			raw: with(importSettings(), "role_mapping", map[string]any{"PROJECT.MEMBER": ""}),
			cluster: []rancher.RoleBinding{creator, foreign, otherResource,
				marked("c-m-1:crtb-o", "cluster-owner", group(owner)), marked("c-m-1:crtb-m", "cluster-member", group(member))},
			stale: []string{"cluster-member keycloakoidc_group://" + member},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeSettings(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeRancher{cluster: slices.Clone(tc.cluster)}
			missing, stale, err := (&Access{Settings: s, Rancher: f}).PlanSync(context.Background(), resUUID, "vc-demo")
			if err != nil {
				t.Fatal(err)
			}
			if got := subjects(missing); !slices.Equal(got, tc.missing) {
				t.Errorf("missing %v, want %v", got, tc.missing)
			}
			if got := subjects(stale); !slices.Equal(got, tc.stale) {
				t.Errorf("stale %v, want %v", got, tc.stale)
			}
			if got, want := subjects(f.cluster), subjects(tc.cluster); !slices.Equal(got, want) || f.next != 0 {
				t.Errorf("the dry run changed the bindings: %v, want %v", got, want)
			}
		})
	}
	f := &fakeRancher{missing: true}
	s, _ := DecodeSettings(importSettings())
	if missing, stale, err := (&Access{Settings: s, Rancher: f}).PlanSync(context.Background(), resUUID, "vc-demo"); err != nil || missing != nil || stale != nil {
		t.Errorf("not imported: %v %v %v, want nothing", missing, stale, err)
	}
}
