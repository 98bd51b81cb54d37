package managedns

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// newCR builds a ManagedNamespace with the Python plugin's spec, marked as
// sitebus's.
func (b *Backend) newCR(name string, r backend.Resource, quota map[string]string) *unstructured.Unstructured {
	spec := map[string]any{"name": name, "quota": stringsToAny(quota)}
	for role, field := range groupFields {
		if g := r.AccessGroups[role]; g != "" {
			spec[field] = []any{g}
		}
	}
	if len(b.settings.NamespaceLabels) > 0 {
		spec["labels"] = stringsToAny(b.settings.NamespaceLabels)
	}
	if len(b.settings.NamespaceAnnotations) > 0 {
		spec["annotations"] = stringsToAny(b.settings.NamespaceAnnotations)
	}
	owner := map[string]any{}
	if r.CustomerUUID != "" {
		owner["orgID"] = dashedUUID(r.CustomerUUID)
	}
	if r.ProjectUUID != "" {
		owner["projectID"] = dashedUUID(r.ProjectUUID)
	}
	if len(owner) > 0 {
		spec["owner"] = owner
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       Kind,
		"metadata":   map[string]any{"name": name, "namespace": b.settings.CRNamespace},
		"spec":       spec,
	}}
	cr.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
	if r.UUID != "" {
		cr.SetAnnotations(map[string]string{AnnotationResourceUUID: r.UUID})
	}
	return cr
}

func isManaged(cr *unstructured.Unstructured) bool {
	return cr.GetLabels()[LabelManagedBy] == ManagedByValue
}

// ownedByOther reports whether cr records a Waldur resource other than
// uuid: its slug was reused, and the namespace is not this resource's.
func ownedByOther(cr *unstructured.Unstructured, uuid string) (string, bool) {
	recorded := cr.GetAnnotations()[AnnotationResourceUUID]
	if recorded == "" || uuid == "" {
		return "", false
	}
	return recorded, normalizeUUID(recorded) != normalizeUUID(uuid)
}

// specQuota reads spec.quota; values that are not strings (a person's
// edit) are printed as Python would send them back.
func specQuota(cr *unstructured.Unstructured) map[string]string {
	raw, _, _ := unstructured.NestedMap(cr.Object, "spec", "quota")
	q := make(map[string]string, len(raw))
	for k, v := range raw {
		if v != nil {
			q[k] = fmt.Sprint(v)
		}
	}
	return q
}

func statusOf(cr *unstructured.Unstructured) backend.Status {
	return backend.ParseStatus(cr.GetAnnotations()[AnnotationStatus])
}

// savedQuota reads the quota Pause or Downscale saved; ok is false when
// none is (the CR is active).
func savedQuota(cr *unstructured.Unstructured) (quota map[string]string, ok bool, err error) {
	raw, ok := cr.GetAnnotations()[AnnotationSavedQuota]
	if !ok {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &quota); err != nil {
		return nil, true, fault.Errorf(fault.Invalid, "ManagedNamespace %s/%s: annotation %s is not a JSON quota: %v",
			cr.GetNamespace(), cr.GetName(), AnnotationSavedQuota, err)
	}
	if quota == nil {
		quota = map[string]string{}
	}
	return quota, true, nil
}

// A patch is a JSON merge patch. Each one carries the resourceVersion it
// was computed from, so a concurrent change makes it fail with a conflict
// (and be recomputed) instead of being overwritten.
type patch map[string]any

func newPatch(cr *unstructured.Unstructured) patch {
	return patch{"metadata": map[string]any{"resourceVersion": cr.GetResourceVersion()}}
}

func (p patch) annotations(a map[string]any) patch {
	if len(a) > 0 {
		p["metadata"].(map[string]any)["annotations"] = a
	}
	return p
}

func (p patch) quota(q map[string]any) patch {
	if len(q) > 0 {
		p["spec"] = map[string]any{"quota": q}
	}
	return p
}

// limitsPatch applies quota. While the quota is reduced it goes into the
// saved quota instead, for Restore to bring; the live quota stays reduced.
// The patch is nil when nothing would change.
func limitsPatch(cr *unstructured.Unstructured, quota map[string]string) (patch, error) {
	saved, reduced, err := savedQuota(cr)
	if err != nil {
		return nil, err
	}
	if reduced {
		merged := maps.Clone(saved)
		maps.Copy(merged, quota)
		if maps.Equal(merged, saved) {
			return nil, nil
		}
		return newPatch(cr).annotations(map[string]any{AnnotationSavedQuota: quotaJSON(merged)}), nil
	}
	if diff := changedKeys(specQuota(cr), quota); len(diff) == 0 {
		return nil, nil
	}
	// Python patches the whole new quota; merge semantics keep other keys.
	return newPatch(cr).quota(stringsToAny(quota)), nil
}

// reducePatch sets a paused or downscaled quota. The quota before the
// first reduction is saved in the same patch, so that no crash can leave
// a reduced quota that Restore does not know how to undo. A second
// reduction keeps what the first saved.
func reducePatch(cr *unstructured.Unstructured, status backend.Status, quota map[string]string) (patch, error) {
	_, reduced, err := savedQuota(cr)
	if err != nil {
		return nil, err
	}
	ann := map[string]any{}
	if !reduced {
		ann[AnnotationSavedQuota] = quotaJSON(specQuota(cr))
	}
	if statusOf(cr) != status {
		ann[AnnotationStatus] = string(status)
	}
	diff := changedKeys(specQuota(cr), quota)
	if len(ann) == 0 && len(diff) == 0 {
		return nil, nil
	}
	return newPatch(cr).annotations(ann).quota(stringsToAny(quota)), nil
}

// restorePatch puts the saved quota back, removing fields the saved quota
// did not have (a merge patch removes a key set to null), and drops both
// annotations. It is nil when nothing was saved.
func restorePatch(cr *unstructured.Unstructured) (patch, error) {
	saved, reduced, err := savedQuota(cr)
	if err != nil || !reduced {
		return nil, err
	}
	q := stringsToAny(saved)
	for k := range specQuota(cr) {
		if _, ok := saved[k]; !ok {
			q[k] = nil
		}
	}
	ann := map[string]any{AnnotationSavedQuota: nil, AnnotationStatus: nil}
	return newPatch(cr).annotations(ann).quota(q), nil
}

// changedKeys lists the keys of want whose value differs in have.
func changedKeys(have, want map[string]string) []string {
	var diff []string
	for _, k := range sortedKeys(want) {
		if v, ok := have[k]; !ok || v != want[k] {
			diff = append(diff, k)
		}
	}
	return diff
}

// quotaJSON encodes a quota with sorted keys (encoding/json sorts them),
// so equal quotas give equal annotations.
func quotaJSON(q map[string]string) string {
	if q == nil {
		q = map[string]string{}
	}
	b, _ := json.Marshal(q)
	return string(b)
}

func stringsToAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// readyStatus reads the Ready condition as the Python plugin reports it:
// "True" is true, "False" false, anything else (or none) null.
func readyStatus(cr *unstructured.Unstructured) map[string]any {
	out := map[string]any{"ready": nil, "message": nil}
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		switch m["status"] {
		case "True":
			out["ready"] = true
		case "False":
			out["ready"] = false
		}
		if msg, ok := m["message"].(string); ok {
			out["message"] = msg
		}
	}
	return out
}

// dashedUUID writes a UUID as Python's str(uuid.UUID) does (lower-case,
// dashed); anything that is not a UUID is kept as it is.
func dashedUUID(s string) string {
	h := normalizeUUID(s)
	if len(h) != 32 {
		return s
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func normalizeUUID(s string) string {
	h := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return strings.TrimSpace(s)
		}
	}
	return h
}
