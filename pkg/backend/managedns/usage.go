package managedns

import (
	"context"
	"fmt"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Usage is what the tenant has allocated in the namespace the CR names
// (spec.name): the sum of the container requests of its pods (cpu,
// memory, nvidia.com/gpu) and of its PVCs' storage requests. The Python
// plugin stopped reporting usage in 1.0.1 (it read ResourceQuota status,
// which its service account could not see); reading pods and PVCs needs
// only list access to them.
//
// Pods that have finished (Succeeded, Failed) hold nothing and are not
// counted, as ResourceQuota does not count them. A pod with pod-level
// resources (spec.resources) is counted by those, as the scheduler does.
func (b *Backend) Usage(ctx context.Context, backendID string) (map[string]float64, error) {
	cr, err := b.get(ctx, "get", backendID)
	if err != nil {
		return nil, err
	}
	ns := namespaceOf(cr)
	all, err := b.usageOf(ctx, map[string]string{backendID: ns}, ns)
	if err != nil {
		return nil, err
	}
	return all[backendID], nil
}

// UsageAll reads the usage of many CRs with three lists whatever their
// number: the CRs (for the namespaces they name), the pods and the PVCs of
// the whole cluster, summed per namespace. IDs without a CR are left out.
func (b *Backend) UsageAll(ctx context.Context, backendIDs []string) (map[string]map[string]float64, error) {
	want := make(map[string]bool, len(backendIDs))
	for _, id := range backendIDs {
		want[id] = true
	}
	namespaces := map[string]string{}
	opts := metav1.ListOptions{Limit: listPage}
	for {
		page, err := b.crs.List(ctx, opts)
		if err != nil {
			return nil, wrapAPI("list", "in "+b.settings.CRNamespace, err)
		}
		for i := range page.Items {
			if cr := &page.Items[i]; want[cr.GetName()] {
				namespaces[cr.GetName()] = namespaceOf(cr)
			}
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if len(namespaces) == 0 {
		return map[string]map[string]float64{}, nil
	}
	return b.usageOf(ctx, namespaces, "")
}

// namespaceOf is the namespace a CR asks the operator for: spec.name, or
// the CR's own name when that is missing (CRs sitebus writes have both).
func namespaceOf(cr *unstructured.Unstructured) string {
	if n, _, _ := unstructured.NestedString(cr.Object, "spec", "name"); n != "" {
		return n
	}
	return cr.GetName()
}

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pvcsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
)

// Quantities measured, by the quota field a component maps to.
const (
	gpuResource = "nvidia.com/gpu"
	fieldCPU    = "cpu"
	fieldMemory = "memory"
	fieldGPU    = "gpu"
	fieldStore  = "storage"
)

// usageOf sums pods and PVCs per namespace (in scope only, or the whole
// cluster when scope is empty) and maps the sums to components for each
// backend ID of namespaces (backend ID → namespace).
func (b *Backend) usageOf(ctx context.Context, namespaces map[string]string, scope string) (map[string]map[string]float64, error) {
	wanted := map[string]bool{}
	for _, ns := range namespaces {
		wanted[ns] = true
	}
	sums := map[string]map[string]*resource.Quantity{} // namespace → field → sum
	add := func(ns, field string, q resource.Quantity) {
		if sums[ns] == nil {
			sums[ns] = map[string]*resource.Quantity{}
		}
		if s := sums[ns][field]; s != nil {
			s.Add(q)
		} else {
			sums[ns][field] = &q
		}
	}
	// Finished pods are filtered by the API server, not here: fewer bytes.
	podOpts := metav1.ListOptions{Limit: listPage, FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"}
	err := b.eachObject(ctx, podsGVR, scope, podOpts, func(pod *unstructured.Unstructured) error {
		if !wanted[pod.GetNamespace()] {
			return nil
		}
		req, err := podRequests(pod)
		if err != nil {
			return err
		}
		for field, q := range req {
			add(pod.GetNamespace(), field, q)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = b.eachObject(ctx, pvcsGVR, scope, metav1.ListOptions{Limit: listPage}, func(pvc *unstructured.Unstructured) error {
		if !wanted[pvc.GetNamespace()] {
			return nil
		}
		s, found, _ := unstructured.NestedString(pvc.Object, "spec", "resources", "requests", "storage")
		if !found {
			return nil
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return fmt.Errorf("PVC %s/%s: storage request %q: %w", pvc.GetNamespace(), pvc.GetName(), s, err)
		}
		add(pvc.GetNamespace(), fieldStore, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]float64, len(namespaces))
	for id, ns := range namespaces {
		out[id] = b.components(sums[ns])
	}
	return out, nil
}

// eachObject lists objects of gvr page by page (in namespace, or in all
// namespaces when it is empty) and calls fn on each.
func (b *Backend) eachObject(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions, fn func(*unstructured.Unstructured) error) error {
	for {
		page, err := b.dyn.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			where := "in all namespaces"
			if namespace != "" {
				where = "in " + namespace
			}
			return fmt.Errorf("k8s-ut-namespace: list %s %s: %w", gvr.Resource, where, err)
		}
		for i := range page.Items {
			if err := fn(&page.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// podRequests are a pod's requests by quota field: pod-level resources
// where the pod sets them, else the sum over its containers.
func podRequests(pod *unstructured.Unstructured) (map[string]resource.Quantity, error) {
	fields := map[string]string{"cpu": fieldCPU, "memory": fieldMemory, gpuResource: fieldGPU}
	out := map[string]resource.Quantity{}
	parse := func(req map[string]any, where string, only map[string]bool) error {
		for name, field := range fields {
			v, ok := req[name].(string)
			if !ok || (only != nil && !only[name]) {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("pod %s/%s: %s request %s %q: %w", pod.GetNamespace(), pod.GetName(), where, name, v, err)
			}
			sum := out[field]
			sum.Add(q)
			out[field] = sum
		}
		return nil
	}
	podLevel, _, _ := unstructured.NestedMap(pod.Object, "spec", "resources", "requests")
	if err := parse(podLevel, "pod", nil); err != nil {
		return nil, err
	}
	// Resources the pod level does not set come from the containers.
	rest := map[string]bool{}
	for name := range fields {
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

// components maps a namespace's sums to components as limits map to quota
// fields (component_quota_mapping): each component whose type maps to a
// measured field gets that field's sum, 0 when nothing requests it. Memory
// and storage are in GiB, cpu in cores, gpu in devices.
func (b *Backend) components(sums map[string]*resource.Quantity) map[string]float64 {
	type target struct{ key, field string }
	var targets []target
	if len(b.quota.components) == 0 {
		// No components configured: report by type, as fromQuota does.
		for _, t := range sortedKeys(b.quota.mapping) {
			targets = append(targets, target{t, b.quota.mapping[t]})
		}
	}
	for _, k := range sortedKeys(b.quota.components) {
		targets = append(targets, target{k, b.quota.mapping[b.quota.componentType(k)]})
	}
	out := map[string]float64{}
	for _, tg := range targets {
		if !slices.Contains([]string{fieldCPU, fieldMemory, fieldGPU, fieldStore}, tg.field) {
			continue // mapped to a field nothing here measures
		}
		var v float64
		if q := sums[tg.field]; q != nil {
			v = q.AsApproximateFloat64()
		}
		if tg.field == fieldMemory || tg.field == fieldStore {
			v /= 1 << 30
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		out[tg.key] = v
	}
	return out
}
