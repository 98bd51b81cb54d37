package vcluster

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sitebus/sitebus/pkg/backend"
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

// The LimitRange Create makes: deleted or edited by hand it is reported
// and put back; one without sitebus's mark is neither reported nor
// touched; a namespace of another resource is refused.
func TestLimitRangeDriftAndRepair(t *testing.T) {
	ctx := context.Background()
	tests := map[string]struct {
		change   func(cs *fake.Clientset)
		drifted  bool
		repaired bool
	}{
		"as Create made it: no drift": {change: func(*fake.Clientset) {}},
		"deleted by hand: missing, made again": {change: func(cs *fake.Clientset) {
			_ = cs.CoreV1().LimitRanges("vc-demo").Delete(ctx, LimitRangeName, metav1.DeleteOptions{})
		}, drifted: true, repaired: true},
		"a default request edited by hand is written back": {change: func(cs *fake.Clientset) {
			lr, _ := cs.CoreV1().LimitRanges("vc-demo").Get(ctx, LimitRangeName, metav1.GetOptions{})
			lr.Spec.Limits[0].DefaultRequest[corev1.ResourceCPU] = resource.MustParse("2")
			_, _ = cs.CoreV1().LimitRanges("vc-demo").Update(ctx, lr, metav1.UpdateOptions{})
		}, drifted: true, repaired: true},
		"one without sitebus's mark is someone else's": {change: func(cs *fake.Clientset) {
			lr, _ := cs.CoreV1().LimitRanges("vc-demo").Get(ctx, LimitRangeName, metav1.GetOptions{})
			lr.Annotations = nil
			lr.Spec.Limits[0].DefaultRequest[corev1.ResourceCPU] = resource.MustParse("2")
			_, _ = cs.CoreV1().LimitRanges("vc-demo").Update(ctx, lr, metav1.UpdateOptions{})
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, cs := newTestBackend(t)
			if _, err := b.Create(ctx, res); err != nil {
				t.Fatal(err)
			}
			tc.change(cs)
			have, err := b.LimitRangeDrift(ctx, "vc-demo", res.UUID)
			if err != nil || (have != "") != tc.drifted {
				t.Fatalf("LimitRangeDrift = %q, %v; want drift %v", have, err, tc.drifted)
			}
			if !tc.repaired {
				return
			}
			if err := b.RepairLimitRange(ctx, "vc-demo", res.UUID); err != nil {
				t.Fatal(err)
			}
			if have, err := b.LimitRangeDrift(ctx, "vc-demo", res.UUID); err != nil || have != "" {
				t.Errorf("after the repair: %q, %v; want no drift", have, err)
			}
		})
	}
	b, _ := newTestBackend(t)
	if _, err := b.Create(ctx, res); err != nil {
		t.Fatal(err)
	}
	if _, err := b.LimitRangeDrift(ctx, "vc-demo", "another"); !errors.Is(err, backend.ErrNotManaged) {
		t.Errorf("another resource's namespace: %v, want ErrNotManaged", err)
	}
	if err := b.RepairLimitRange(ctx, "vc-demo", "another"); !errors.Is(err, backend.ErrNotManaged) {
		t.Errorf("repair in another resource's namespace: %v, want ErrNotManaged", err)
	}
}
