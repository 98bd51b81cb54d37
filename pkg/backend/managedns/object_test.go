package managedns

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// crWith is a managed CR at resourceVersion 7 with quota and annotations.
func crWith(quota map[string]string, ann map[string]string) *unstructured.Unstructured {
	cr := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "waldur-x", "namespace": "waldur-system", "resourceVersion": "7"},
		"spec":     map[string]any{"name": "waldur-x", "quota": stringsToAny(quota)},
	}}
	cr.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
	if ann != nil {
		cr.SetAnnotations(ann)
	}
	return cr
}

func asJSON(t *testing.T, p patch) string {
	t.Helper()
	if p == nil {
		return "null"
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var active = map[string]string{"cpu": "2", "memory": "4Gi", "storage": "10Gi", "gpu": "1"}

func TestReducePatch(t *testing.T) {
	tests := []struct {
		name   string
		cr     *unstructured.Unstructured
		status backend.Status
		quota  map[string]string
		want   string
	}{
		{
			name:   "the first pause saves the quota and zeroes it in one patch",
			cr:     crWith(active, nil),
			status: backend.StatusPaused, quota: pausedQuota,
			want: `{"metadata":{"annotations":{"sitebus.io/quota-before-pause":"{\"cpu\":\"2\",\"gpu\":\"1\",\"memory\":\"4Gi\",\"storage\":\"10Gi\"}","sitebus.io/status":"paused"},"resourceVersion":"7"},"spec":{"quota":{"cpu":"0","memory":"0Gi","storage":"0Gi"}}}`,
		},
		{
			name: "a pause after a downscale keeps the quota saved first",
			cr: crWith(map[string]string{"cpu": "1", "memory": "1Gi", "storage": "1Gi", "gpu": "1"},
				map[string]string{AnnotationSavedQuota: `{"cpu":"2"}`, AnnotationStatus: "downscaled"}),
			status: backend.StatusPaused, quota: pausedQuota,
			want: `{"metadata":{"annotations":{"sitebus.io/status":"paused"},"resourceVersion":"7"},"spec":{"quota":{"cpu":"0","memory":"0Gi","storage":"0Gi"}}}`,
		},
		{
			name: "a second pause changes nothing",
			cr: crWith(map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi", "gpu": "1"},
				map[string]string{AnnotationSavedQuota: `{"cpu":"2"}`, AnnotationStatus: "paused"}),
			status: backend.StatusPaused, quota: pausedQuota,
			want: "null",
		},
		{
			name:   "a CR without a quota saves an empty one",
			cr:     crWith(nil, nil),
			status: backend.StatusDownscaled, quota: downscaledQuota,
			want: `{"metadata":{"annotations":{"sitebus.io/quota-before-pause":"{}","sitebus.io/status":"downscaled"},"resourceVersion":"7"},"spec":{"quota":{"cpu":"1","memory":"1Gi","storage":"1Gi"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := reducePatch(tt.cr, tt.status, tt.quota)
			if err != nil {
				t.Fatal(err)
			}
			if got := asJSON(t, p); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRestorePatch(t *testing.T) {
	tests := []struct {
		name    string
		cr      *unstructured.Unstructured
		want    string
		wantErr bool
	}{
		{
			name: "the saved quota comes back, keys it lacks are removed",
			cr: crWith(map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi", "gpu": "1"},
				map[string]string{AnnotationSavedQuota: `{"cpu":"2","memory":"4Gi","storage":"10Gi"}`, AnnotationStatus: "paused"}),
			want: `{"metadata":{"annotations":{"sitebus.io/quota-before-pause":null,"sitebus.io/status":null},"resourceVersion":"7"},"spec":{"quota":{"cpu":"2","gpu":null,"memory":"4Gi","storage":"10Gi"}}}`,
		},
		{
			name: "without a saved quota restore does nothing",
			cr:   crWith(active, nil),
			want: "null",
		},
		{
			name:    "a saved quota that is not JSON is invalid",
			cr:      crWith(active, map[string]string{AnnotationSavedQuota: "cpu=2"}),
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := restorePatch(tt.cr)
			if tt.wantErr {
				if !fault.IsTerminal(err) {
					t.Fatalf("err = %v, want terminal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := asJSON(t, p); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestLimitsPatch(t *testing.T) {
	paused := map[string]string{AnnotationSavedQuota: `{"cpu":"2","memory":"4Gi"}`, AnnotationStatus: "paused"}
	tests := []struct {
		name  string
		cr    *unstructured.Unstructured
		quota map[string]string
		want  string
	}{
		{
			name:  "a different quota is patched",
			cr:    crWith(active, nil),
			quota: map[string]string{"cpu": "4", "memory": "4Gi"},
			want:  `{"metadata":{"resourceVersion":"7"},"spec":{"quota":{"cpu":"4","memory":"4Gi"}}}`,
		},
		{
			name:  "the same quota is not patched",
			cr:    crWith(active, nil),
			quota: map[string]string{"cpu": "2", "memory": "4Gi"},
			want:  "null",
		},
		{
			name:  "while paused the saved quota takes the limits, the live one stays",
			cr:    crWith(map[string]string{"cpu": "0", "memory": "0Gi"}, paused),
			quota: map[string]string{"cpu": "8"},
			want:  `{"metadata":{"annotations":{"sitebus.io/quota-before-pause":"{\"cpu\":\"8\",\"memory\":\"4Gi\"}"},"resourceVersion":"7"}}`,
		},
		{
			name:  "while paused the saved limits again change nothing",
			cr:    crWith(map[string]string{"cpu": "0", "memory": "0Gi"}, paused),
			quota: map[string]string{"cpu": "2"},
			want:  "null",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := limitsPatch(tt.cr, tt.quota)
			if err != nil {
				t.Fatal(err)
			}
			if got := asJSON(t, p); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestReadyStatus(t *testing.T) {
	tests := []struct {
		name  string
		conds []any
		ready any
		msg   any
	}{
		{"no status is unknown", nil, nil, nil},
		{"Ready True is ready", []any{map[string]any{"type": "Ready", "status": "True", "message": "ok"}}, true, "ok"},
		{"Ready False is not ready", []any{map[string]any{"type": "Ready", "status": "False", "message": "quota"}}, false, "quota"},
		{"Ready Unknown is unknown", []any{map[string]any{"type": "Ready", "status": "Unknown"}}, nil, nil},
		{"other conditions are ignored", []any{map[string]any{"type": "Synced", "status": "True"}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := crWith(nil, nil)
			if tt.conds != nil {
				cr.Object["status"] = map[string]any{"conditions": tt.conds}
			}
			got := readyStatus(cr)
			if got["ready"] != tt.ready || got["message"] != tt.msg {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestNewCRSpec(t *testing.T) {
	b := &Backend{settings: Settings{
		CRNamespace:          "waldur-system",
		NamespaceLabels:      map[string]string{"hpc.ut.ee/managed-by": "waldur"},
		NamespaceAnnotations: map[string]string{"hpc.ut.ee/contact": "hpc@ut.ee"},
	}}
	r := backend.Resource{
		UUID:         "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
		CustomerUUID: "AABBCCDDEEFF00112233445566778899",
	}
	cr := b.newCR("waldur-x", r, map[string]string{"cpu": "2"})
	got, _ := json.Marshal(cr.Object)
	want := `{"apiVersion":"provisioning.hpc.ut.ee/v1","kind":"ManagedNamespace",` +
		`"metadata":{"annotations":{"sitebus.io/resource-uuid":"0f1e2d3c4b5a69788796a5b4c3d2e1f0"},` +
		`"labels":{"app.kubernetes.io/managed-by":"sitebus"},"name":"waldur-x","namespace":"waldur-system"},` +
		`"spec":{"annotations":{"hpc.ut.ee/contact":"hpc@ut.ee"},"labels":{"hpc.ut.ee/managed-by":"waldur"},` +
		`"name":"waldur-x","owner":{"orgID":"aabbccdd-eeff-0011-2233-445566778899"},"quota":{"cpu":"2"}}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestOwnedByOther(t *testing.T) {
	cr := crWith(nil, map[string]string{AnnotationResourceUUID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"})
	if _, other := ownedByOther(cr, "0F1E2D3C4B5A69788796A5B4C3D2E1F0"); other {
		t.Error("the same UUID written differently is another resource")
	}
	if _, other := ownedByOther(cr, "11111111-4b5a-6978-8796-a5b4c3d2e1f0"); !other {
		t.Error("another UUID is not detected")
	}
}

func TestNewCRNamesTheAccessGroups(t *testing.T) {
	b := &Backend{settings: Settings{CRNamespace: "waldur-system"}}
	cr := b.newCR("waldur-lab", backend.Resource{AccessGroups: AccessGroups("lab")}, map[string]string{"cpu": "1"})
	spec, _ := json.Marshal(cr.Object["spec"])
	want := `{"adminGroups":["ns_lab_admin"],"name":"waldur-lab","quota":{"cpu":"1"},"roGroups":["ns_lab_readonly"],"rwGroups":["ns_lab_readwrite"]}`
	if string(spec) != want {
		t.Fatalf("spec %s\nwant %s", spec, want)
	}
	if d := GroupDescription("lab", "readonly"); d != "Namespace lab readonly access" {
		t.Errorf("description %q", d)
	}
}
