package harness

import (
	"reflect"
	"testing"
)

func TestMergeIntoTheConfig(t *testing.T) {
	tests := map[string]struct {
		dst, patch, want map[string]any
	}{
		"a new key is added": {
			dst: map[string]any{"a": 1}, patch: map[string]any{"b": 2}, want: map[string]any{"a": 1, "b": 2}},
		"a scalar replaces": {
			dst: map[string]any{"a": 1}, patch: map[string]any{"a": false}, want: map[string]any{"a": false}},
		"maps merge key by key": {
			dst:   map[string]any{"s": map[string]any{"x": 1, "y": 2}},
			patch: map[string]any{"s": map[string]any{"y": 3, "z": 4}},
			want:  map[string]any{"s": map[string]any{"x": 1, "y": 3, "z": 4}}},
		"nil deletes the key": {
			dst: map[string]any{"a": 1, "b": 2}, patch: map[string]any{"a": nil}, want: map[string]any{"b": 2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			merge(tc.dst, tc.patch)
			if !reflect.DeepEqual(tc.dst, tc.want) {
				t.Errorf("got %v, want %v", tc.dst, tc.want)
			}
		})
	}
}

func TestMergeNeverSharesTheCallersMaps(t *testing.T) {
	patch := map[string]any{"s": map[string]any{"x": 1}}
	dst := map[string]any{}
	merge(dst, patch)
	merge(dst, map[string]any{"s": map[string]any{"y": 2}})
	if inner := patch["s"].(map[string]any); len(inner) != 1 {
		t.Errorf("a later merge changed the caller's map: %v", inner)
	}
}
