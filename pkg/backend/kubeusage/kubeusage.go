// Package kubeusage sums what tenants have allocated in Kubernetes
// namespaces, as the usage is defined for every Kubernetes
// backend: the container requests of the pods (cpu, memory, GPUs) and the
// storage requests of the PVCs. It does no I/O: each backend lists pods
// and PVCs its own way (client-go, Rancher's cluster proxy) and feeds the
// objects here, so the definition is written once.
package kubeusage

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PodFieldSelector leaves out finished pods (Succeeded, Failed): they hold
// nothing, and ResourceQuota does not count them either. Filtering in the
// API server sends fewer bytes than filtering here.
const PodFieldSelector = "status.phase!=Succeeded,status.phase!=Failed"

// Storage is the key PVC storage requests are summed under. It is not a
// pod resource name, so it never mixes with pod requests.
const Storage = "pvc:storage"

// GPU is the extended resource the Rancher plugin's README counts as GPUs.
const GPU = "nvidia.com/gpu"

// Sums are the sums of one or more namespaces: namespace → key → sum, where
// a key is a pod resource name (cpu, memory, nvidia.com/gpu) or Storage.
type Sums struct {
	resources map[string]bool
	wanted    func(namespace string) bool
	by        map[string]map[string]*resource.Quantity
}

// New sums the pod resources named (e.g. cpu, memory, nvidia.com/gpu) and
// PVC storage, for the namespaces wanted accepts (all when nil).
func New(resources []string, wanted func(namespace string) bool) *Sums {
	s := &Sums{resources: map[string]bool{}, wanted: wanted, by: map[string]map[string]*resource.Quantity{}}
	for _, r := range resources {
		s.resources[r] = true
	}
	return s
}

func (s *Sums) add(ns, key string, q resource.Quantity) {
	if s.by[ns] == nil {
		s.by[ns] = map[string]*resource.Quantity{}
	}
	if sum := s.by[ns][key]; sum != nil {
		sum.Add(q)
	} else {
		s.by[ns][key] = &q
	}
}

// AddPod adds a pod's requests. Callers list with PodFieldSelector; a pod
// that is finished anyway (a server ignoring the selector) is skipped.
func (s *Sums) AddPod(pod *unstructured.Unstructured) error {
	if s.wanted != nil && !s.wanted(pod.GetNamespace()) {
		return nil
	}
	if phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
		return nil
	}
	req, err := s.podRequests(pod)
	if err != nil {
		return err
	}
	for name, q := range req {
		s.add(pod.GetNamespace(), name, q)
	}
	return nil
}

// AddPVC adds a PVC's storage request.
func (s *Sums) AddPVC(pvc *unstructured.Unstructured) error {
	if s.wanted != nil && !s.wanted(pvc.GetNamespace()) {
		return nil
	}
	v, found, _ := unstructured.NestedString(pvc.Object, "spec", "resources", "requests", "storage")
	if !found {
		return nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("PVC %s/%s: storage request %q: %w", pvc.GetNamespace(), pvc.GetName(), v, err)
	}
	s.add(pvc.GetNamespace(), Storage, q)
	return nil
}

// Get is the sum of key over namespaces, nil when none has any.
func (s *Sums) Get(key string, namespaces ...string) *resource.Quantity {
	var out *resource.Quantity
	for _, ns := range namespaces {
		q := s.by[ns][key]
		if q == nil {
			continue
		}
		if out == nil {
			c := q.DeepCopy()
			out = &c
		} else {
			out.Add(*q)
		}
	}
	return out
}

// podRequests are a pod's requests by resource name: pod-level resources
// (spec.resources) where the pod sets them, as the scheduler counts them,
// else the sum over its containers.
func (s *Sums) podRequests(pod *unstructured.Unstructured) (map[string]resource.Quantity, error) {
	out := map[string]resource.Quantity{}
	parse := func(req map[string]any, where string, only map[string]bool) error {
		for name := range s.resources {
			v, ok := req[name].(string)
			if !ok || (only != nil && !only[name]) {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("pod %s/%s: %s request %s %q: %w", pod.GetNamespace(), pod.GetName(), where, name, v, err)
			}
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
		return nil
	}
	podLevel, _, _ := unstructured.NestedMap(pod.Object, "spec", "resources", "requests")
	if err := parse(podLevel, "pod", nil); err != nil {
		return nil, err
	}
	// Resources the pod level does not set come from the containers.
	rest := map[string]bool{}
	for name := range s.resources {
		if _, set := podLevel[name]; !set {
			rest[name] = true
		}
	}
	containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		req, _, _ := unstructured.NestedMap(cm, "resources", "requests")
		name, _ := cm["name"].(string)
		if err := parse(req, "container "+name, rest); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Value is a sum in Waldur units at a unit_factor of 1: bytes (memory,
// storage) as GiB, anything else as is (cores, devices); 0 for nil.
func Value(q *resource.Quantity, bytes bool) float64 {
	if q == nil {
		return 0
	}
	v := q.AsApproximateFloat64()
	if bytes {
		v /= 1 << 30
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
