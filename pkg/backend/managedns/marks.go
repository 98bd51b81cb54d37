package managedns

import (
	"context"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
)

var _ backend.MarkDrifter = (*Backend)(nil)

// MarkDrift compares spec.labels and spec.annotations of each sitebus CR
// with the offering's namespace_labels and namespace_annotations, which
// Create writes (the k8s-ut-namespace plugin's); labels a CR has beyond
// those are someone else's and not drift.
func (b *Backend) MarkDrift(ctx context.Context) (map[string][]backend.MarkDifference, error) {
	out := map[string][]backend.MarkDifference{}
	err := b.eachManaged(ctx, func(cr *unstructured.Unstructured) {
		if d := b.markDiff(cr); len(d) > 0 {
			out[cr.GetName()] = d
		}
	})
	return out, err
}

// RepairMarks merges the offering's labels and annotations back into the
// CR's spec.
func (b *Backend) RepairMarks(ctx context.Context, backendID string) (bool, error) {
	changed := false
	err := b.update(ctx, backendID, func(cr *unstructured.Unstructured) (patch, error) {
		if len(b.markDiff(cr)) == 0 {
			return nil, nil
		}
		changed = true
		spec := map[string]any{}
		if len(b.settings.NamespaceLabels) > 0 {
			spec["labels"] = stringsToAny(b.settings.NamespaceLabels)
		}
		if len(b.settings.NamespaceAnnotations) > 0 {
			spec["annotations"] = stringsToAny(b.settings.NamespaceAnnotations)
		}
		p := newPatch(cr)
		p["spec"] = spec
		return p, nil
	})
	if changed && err == nil {
		b.log.Info("put back ManagedNamespace labels and annotations", "name", backendID)
	}
	return changed, err
}

func (b *Backend) markDiff(cr *unstructured.Unstructured) []backend.MarkDifference {
	var out []backend.MarkDifference
	for _, field := range []struct {
		name string
		want map[string]string
	}{{"labels", b.settings.NamespaceLabels}, {"annotations", b.settings.NamespaceAnnotations}} {
		have, _, _ := unstructured.NestedStringMap(cr.Object, "spec", field.name)
		for _, k := range slices.Sorted(maps.Keys(field.want)) {
			if have[k] != field.want[k] {
				out = append(out, backend.MarkDifference{Key: "spec." + field.name + "." + k, Want: field.want[k], Have: have[k]})
			}
		}
	}
	return out
}
