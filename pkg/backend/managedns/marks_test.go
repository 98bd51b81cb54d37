package managedns

import (
	"context"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
)

// A label removed or changed by hand on a sitebus CR is drift and is put
// back, other labels untouched; a CR without sitebus's mark has none.
func TestMarkDriftFindsAndRepairsLabels(t *testing.T) {
	ctx := context.Background()
	tests := map[string]struct {
		managed  bool
		labels   map[string]string
		want     []backend.MarkDifference
		repaired map[string]string
	}{
		"a removed label": {managed: true, labels: map[string]string{"extra": "x"},
			want:     []backend.MarkDifference{{Key: "spec.labels.team", Want: "hpc", Have: ""}},
			repaired: map[string]string{"extra": "x", "team": "hpc"}},
		"a changed label": {managed: true, labels: map[string]string{"team": "other"},
			want:     []backend.MarkDifference{{Key: "spec.labels.team", Want: "hpc", Have: "other"}},
			repaired: map[string]string{"team": "hpc"}},
		"labels as written":                    {managed: true, labels: map[string]string{"team": "hpc"}, repaired: map[string]string{"team": "hpc"}},
		"a CR sitebus did not make is ignored": {managed: false, labels: map[string]string{}, repaired: map[string]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": Group + "/" + Version, "kind": Kind,
				"metadata": map[string]any{"name": "waldur-alpha", "namespace": "waldur-system"},
				"spec":     map[string]any{"name": "waldur-alpha", "labels": stringsToAny(tc.labels)}}}
			if tc.managed {
				cr.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
			}
			b, _ := fakeBackend(t, nil, cr)
			b.settings.NamespaceLabels = map[string]string{"team": "hpc"}
			all, err := b.MarkDrift(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := all["waldur-alpha"]
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("drift %+v, want %+v", got, tc.want)
			}
			if !tc.managed {
				return // never repaired: the drift check lists only sitebus's objects
			}
			if changed, err := b.RepairMarks(ctx, "waldur-alpha"); err != nil || changed != (len(tc.want) > 0) {
				t.Fatalf("repair: changed %v, err %v", changed, err)
			}
			after, _ := b.crs.Get(ctx, "waldur-alpha", metav1.GetOptions{})
			labels, _, _ := unstructured.NestedStringMap(after.Object, "spec", "labels")
			if !reflect.DeepEqual(labels, tc.repaired) {
				t.Errorf("labels after repair %v, want %v", labels, tc.repaired)
			}
		})
	}
}
