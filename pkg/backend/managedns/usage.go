package managedns

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/pkg/backend/kubeusage"
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

// Quantities measured, by the quota field a component maps to, and the
// pod resource each sums.
const (
	fieldCPU    = "cpu"
	fieldMemory = "memory"
	fieldGPU    = "gpu"
	fieldStore  = "storage"
)

var measured = map[string]string{fieldCPU: "cpu", fieldMemory: "memory", fieldGPU: kubeusage.GPU, fieldStore: kubeusage.Storage}

// usageOf sums pods and PVCs per namespace (in scope only, or the whole
// cluster when scope is empty) and maps the sums to components for each
// backend ID of namespaces (backend ID → namespace).
func (b *Backend) usageOf(ctx context.Context, namespaces map[string]string, scope string) (map[string]map[string]float64, error) {
	wanted := map[string]bool{}
	for _, ns := range namespaces {
		wanted[ns] = true
	}
	sums := kubeusage.New([]string{"cpu", "memory", kubeusage.GPU}, func(ns string) bool { return wanted[ns] })
	podOpts := metav1.ListOptions{Limit: listPage, FieldSelector: kubeusage.PodFieldSelector}
	if err := b.eachObject(ctx, podsGVR, scope, podOpts, sums.AddPod); err != nil {
		return nil, err
	}
	if err := b.eachObject(ctx, pvcsGVR, scope, metav1.ListOptions{Limit: listPage}, sums.AddPVC); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]float64, len(namespaces))
	for id, ns := range namespaces {
		out[id] = b.components(sums, ns)
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

// components maps a namespace's sums to components as limits map to quota
// fields (component_quota_mapping): each component whose type maps to a
// measured field gets that field's sum, 0 when nothing requests it. Memory
// and storage are in GiB, cpu in cores, gpu in devices.
func (b *Backend) components(sums *kubeusage.Sums, ns string) map[string]float64 {
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
		key, ok := measured[tg.field]
		if !ok {
			continue // mapped to a field nothing here measures
		}
		out[tg.key] = kubeusage.Value(sums.Get(key, ns), tg.field == fieldMemory || tg.field == fieldStore)
	}
	return out
}
