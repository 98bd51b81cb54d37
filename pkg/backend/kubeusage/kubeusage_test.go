package kubeusage

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(ns, name string, spec, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec, "status": status,
	}}
}

func containers(reqs ...map[string]any) []any {
	var out []any
	for i, r := range reqs {
		out = append(out, map[string]any{"name": string(rune('a' + i)), "resources": map[string]any{"requests": r}})
	}
	return out
}

// Containers are summed, pod-level requests replace theirs resource by
// resource, finished pods and unwanted namespaces count nothing, and sums
// span the namespaces asked for.
func TestSums(t *testing.T) {
	s := New([]string{"cpu", "memory", GPU}, func(ns string) bool { return ns != "other" })
	pods := []*unstructured.Unstructured{
		obj("a", "web", map[string]any{"containers": containers(
			map[string]any{"cpu": "500m", "memory": "1Gi"}, map[string]any{"cpu": "250m", "memory": "512Mi", GPU: "1"})}, nil),
		// Pod-level cpu (2) wins over the containers' (8); memory is theirs.
		obj("a", "podlevel", map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "2"}},
			"containers": containers(map[string]any{"cpu": "8", "memory": "1Gi"})}, nil),
		obj("a", "done", map[string]any{"containers": containers(map[string]any{"cpu": "100"})}, map[string]any{"phase": "Succeeded"}),
		obj("b", "b", map[string]any{"containers": containers(map[string]any{"cpu": "1", "ephemeral-storage": "1Gi"})}, nil),
		obj("other", "x", map[string]any{"containers": containers(map[string]any{"cpu": "64"})}, nil),
	}
	for _, p := range pods {
		if err := s.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, pvc := range []*unstructured.Unstructured{
		obj("a", "d", map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "10Gi"}}}, nil),
		obj("b", "d", map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "512Mi"}}}, nil),
		obj("other", "d", map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1Ti"}}}, nil),
	} {
		if err := s.AddPVC(pvc); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		key   string
		ns    []string
		bytes bool
		want  float64
	}{
		{"cpu", []string{"a"}, false, 2.75},
		{"memory", []string{"a"}, true, 2.5},
		{GPU, []string{"a"}, false, 1},
		{Storage, []string{"a"}, true, 10},
		{"cpu", []string{"a", "b"}, false, 3.75},
		{Storage, []string{"a", "b"}, true, 10.5},
		{"cpu", []string{"other"}, false, 0},
		{GPU, []string{"b"}, false, 0},
		{"ephemeral-storage", []string{"b"}, true, 0},
		{"cpu", nil, false, 0},
	} {
		if got := Value(s.Get(c.key, c.ns...), c.bytes); got != c.want {
			t.Errorf("%s in %v = %v, want %v", c.key, c.ns, got, c.want)
		}
	}
}

func TestBadQuantityNamesThePod(t *testing.T) {
	s := New([]string{"cpu"}, nil)
	err := s.AddPod(obj("a", "bad", map[string]any{"containers": containers(map[string]any{"cpu": "lots"})}, nil))
	if err == nil || !strings.Contains(err.Error(), "a/bad") {
		t.Fatalf("err = %v, want one naming pod a/bad", err)
	}
}
