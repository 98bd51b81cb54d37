package managedns

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

const (
	customer = "0b4bd0f1b2d34a6f9a4f0a2c1d1e1f10"
	project  = "5c1e2d3f4a5b4c6d8e9f0a1b2c3d4e5f"
	resUUID  = "9f8e7d6c5b4a49382716059483726150"
)

var pythonResource = backend.Resource{UUID: resUUID, Slug: "alpha", BackendID: "waldur-alpha", CustomerUUID: customer, ProjectUUID: project}

// pythonCR is a ManagedNamespace as the Python plugin leaves it: no
// labels, no annotations, spec.owner with dashed UUIDs.
func pythonCR(name string, owner map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"name": name, "quota": map[string]any{"cpu": "2", "memory": "4Gi", "storage": "10Gi"}}
	if owner != nil {
		spec["owner"] = owner
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version, "kind": Kind,
		"metadata": map[string]any{"name": name, "namespace": "waldur-system"},
		"spec":     spec,
	}}
}

var pythonOwner = map[string]any{"orgID": dashedUUID(customer), "projectID": dashedUUID(project)}

func TestDecideAdoption(t *testing.T) {
	labelled := func(cr *unstructured.Unstructured, k, v string) *unstructured.Unstructured {
		cr.SetLabels(map[string]string{k: v})
		return cr
	}
	withSpec := func(cr *unstructured.Unstructured, k string, v any) *unstructured.Unstructured {
		cr.Object["spec"].(map[string]any)[k] = v
		return cr
	}
	annotated := func(cr *unstructured.Unstructured, k, v string) *unstructured.Unstructured {
		cr.SetAnnotations(map[string]string{k: v})
		return cr
	}
	other := "11111111-2222-3333-4444-555555555555"
	tests := []struct {
		name      string
		cr        *unstructured.Unstructured
		claimants []backend.Resource
		adopt     bool
		why       string // in the proof or the reason
	}{
		{"the Python agent's CR with the resource's customer and project is adopted",
			pythonCR("waldur-alpha", pythonOwner), []backend.Resource{pythonResource}, true, "spec.owner.projectID is its project"},
		{"owner UUIDs without dashes prove it too",
			pythonCR("waldur-alpha", map[string]any{"orgID": customer, "projectID": project}), []backend.Resource{pythonResource}, true, "spec.owner.orgID is its customer"},
		{"a CR without spec.owner is adopted on its name",
			pythonCR("waldur-alpha", nil), []backend.Resource{pythonResource}, true, "no spec.owner"},
		{"an owner with only orgID is checked on orgID",
			pythonCR("waldur-alpha", map[string]any{"orgID": dashedUUID(customer)}), []backend.Resource{pythonResource}, true, "orgID"},
		{"an annotation naming the same resource does not stop it",
			annotated(pythonCR("waldur-alpha", pythonOwner), AnnotationResourceUUID, dashedUUID(resUUID)), []backend.Resource{pythonResource}, true, resUUID},
		{"another customer in spec.owner is refused",
			pythonCR("waldur-alpha", map[string]any{"orgID": other, "projectID": dashedUUID(project)}), []backend.Resource{pythonResource}, false, "spec.owner.orgID"},
		{"another project in spec.owner is refused",
			pythonCR("waldur-alpha", map[string]any{"orgID": dashedUUID(customer), "projectID": other}), []backend.Resource{pythonResource}, false, "spec.owner.projectID"},
		{"an owner the resource cannot be compared with is refused",
			pythonCR("waldur-alpha", pythonOwner), []backend.Resource{{UUID: resUUID, Slug: "alpha"}}, false, "customer is \"\""},
		{"an owner that is not an object is refused",
			withSpec(pythonCR("waldur-alpha", nil), "owner", "acme"), []backend.Resource{pythonResource}, false, "not an object"},
		{"a CR no resource names is refused",
			pythonCR("waldur-alpha", pythonOwner), nil, false, "no Waldur resource of this offering names it"},
		{"a CR two resources name is refused",
			pythonCR("waldur-alpha", pythonOwner), []backend.Resource{pythonResource, {UUID: other}}, false, "2 Waldur resources"},
		{"another tool's mark is refused",
			labelled(pythonCR("waldur-alpha", pythonOwner), LabelManagedBy, "argocd"), []backend.Resource{pythonResource}, false, "managed-by=argocd"},
		{"an annotation naming another resource is refused",
			annotated(pythonCR("waldur-alpha", pythonOwner), AnnotationResourceUUID, other), []backend.Resource{pythonResource}, false, other},
		{"a spec.name other than the CR's is refused",
			withSpec(pythonCR("waldur-alpha", pythonOwner), "name", "waldur-beta"), []backend.Resource{pythonResource}, false, "spec.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideAdoption(tt.cr, tt.claimants)
			if d.Adopt != tt.adopt {
				t.Fatalf("adopt = %v (proof %q, reason %q), want %v", d.Adopt, d.Proof, d.Reason, tt.adopt)
			}
			if got := d.Proof + d.Reason; !strings.Contains(got, tt.why) {
				t.Errorf("proof/reason %q does not say %q", got, tt.why)
			}
			if d.Adopt && d.Resource.UUID != resUUID {
				t.Errorf("adopted for %q, want %s", d.Resource.UUID, resUUID)
			}
		})
	}
}

// finder is a Waldur offering's resources.
type finder struct {
	res   []backend.Resource
	err   error
	calls int
}

func (f *finder) ResourcesByBackendID(_ context.Context, id string) ([]backend.Resource, error) {
	f.calls++
	var out []backend.Resource
	for _, r := range f.res {
		if r.BackendID == id {
			out = append(out, r)
		}
	}
	return out, f.err
}

func (f *finder) Resources(context.Context) ([]backend.Resource, error) {
	f.calls++
	return f.res, f.err
}

func fakeBackend(t *testing.T, f backend.ResourceFinder, objs ...runtime.Object) (*Backend, *prometheus.CounterVec) {
	t.Helper()
	s := DefaultSettings()
	s.CRNamespace = "waldur-system"
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GVR: Kind + "List"}, objs...)
	adoptions := backend.AdoptionsCounter(nil)
	b := &Backend{settings: s, quota: quotaCodec{mapping: s.QuotaMapping}, crs: dyn.Resource(GVR).Namespace(s.CRNamespace),
		log: backend.Logger(nil, Type), fieldManager: DefaultFieldManager, resources: f, adoptions: adoptions}
	return b, adoptions
}

func TestChangesAdoptThePythonAgentsCR(t *testing.T) {
	ctx := context.Background()
	verbs := map[string]func(b *Backend, id string) error{
		"SetLimits": func(b *Backend, id string) error {
			_, err := b.SetLimits(ctx, id, map[string]float64{"cpu": 3})
			return err
		},
		"Pause":   func(b *Backend, id string) error { return b.Pause(ctx, id) },
		"Restore": func(b *Backend, id string) error { return b.Restore(ctx, id) },
		"SetUsers": func(b *Backend, id string) error {
			_, err := b.SetUsers(ctx, id, map[string][]string{backend.RoleAdmin: {"a@example.org"}})
			return err
		},
		"Delete": func(b *Backend, id string) error { return b.Delete(ctx, id) },
	}
	for verb, do := range verbs {
		t.Run(verb+" adopts a CR the Python agent made for the resource", func(t *testing.T) {
			b, adoptions := fakeBackend(t, &finder{res: []backend.Resource{pythonResource}}, pythonCR("waldur-alpha", pythonOwner))
			if err := do(b, "waldur-alpha"); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(adoptions.WithLabelValues(Type, backend.AdoptionAdopted)); got != 1 {
				t.Errorf("adopted count = %v, want 1", got)
			}
			if verb == "Delete" {
				return
			}
			cr, err := b.crs.Get(ctx, "waldur-alpha", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !isManaged(cr) || cr.GetAnnotations()[AnnotationResourceUUID] != resUUID {
				t.Errorf("labels %v, annotations %v: want sitebus's mark for %s", cr.GetLabels(), cr.GetAnnotations(), resUUID)
			}
		})
		t.Run(verb+" refuses another customer's CR and leaves it untouched", func(t *testing.T) {
			foreign := pythonCR("waldur-alpha", map[string]any{"orgID": "11111111-2222-3333-4444-555555555555"})
			b, adoptions := fakeBackend(t, &finder{res: []backend.Resource{pythonResource}}, foreign.DeepCopy())
			err := do(b, "waldur-alpha")
			if !errors.Is(err, fault.NotManaged) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), "spec.owner.orgID") {
				t.Fatalf("err = %v, want a terminal refusal naming spec.owner.orgID", err)
			}
			cr, gerr := b.crs.Get(ctx, "waldur-alpha", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if len(cr.GetLabels()) > 0 || len(cr.GetAnnotations()) > 0 || cr.Object["spec"].(map[string]any)["quota"].(map[string]any)["cpu"] != "2" {
				t.Errorf("foreign CR changed: %v", cr.Object)
			}
			if got := testutil.ToFloat64(adoptions.WithLabelValues(Type, backend.AdoptionRefused)); got != 1 {
				t.Errorf("refused count = %v, want 1", got)
			}
		})
	}
}

func TestAdoptionIsRefusedWithoutProof(t *testing.T) {
	ctx := context.Background()
	t.Run("create never adopts, even the resource's own Python CR", func(t *testing.T) {
		b, _ := fakeBackend(t, &finder{res: []backend.Resource{pythonResource}}, pythonCR("waldur-alpha", pythonOwner))
		_, err := b.Create(ctx, pythonResource)
		if !errors.Is(err, fault.NotManaged) {
			t.Fatalf("Create: err = %v, want NotManaged", err)
		}
	})
	t.Run("without a resource finder every unmarked CR is refused", func(t *testing.T) {
		b, _ := fakeBackend(t, nil, pythonCR("waldur-alpha", pythonOwner))
		if err := b.Pause(ctx, "waldur-alpha"); !errors.Is(err, fault.NotManaged) {
			t.Fatalf("Pause: err = %v, want NotManaged", err)
		}
	})
	t.Run("a resource that has no backend_id yet names the CR by its slug", func(t *testing.T) {
		r := pythonResource
		r.BackendID = ""
		f := &finder{res: []backend.Resource{r}}
		b, _ := fakeBackend(t, f, pythonCR("waldur-alpha", pythonOwner))
		if err := b.Pause(ctx, "waldur-alpha"); err != nil {
			t.Fatal(err)
		}
		if f.calls != 2 {
			t.Errorf("finder calls = %d, want 2 (by backend_id, then all)", f.calls)
		}
	})
	t.Run("a Waldur error is passed on, retryable, and nothing is marked", func(t *testing.T) {
		b, _ := fakeBackend(t, &finder{err: fault.Errorf(fault.Unavailable, "waldur down")}, pythonCR("waldur-alpha", pythonOwner))
		err := b.Pause(ctx, "waldur-alpha")
		if err == nil || fault.IsTerminal(err) {
			t.Fatalf("Pause: err = %v, want a retryable error", err)
		}
	})
	t.Run("a marked CR costs no Waldur call", func(t *testing.T) {
		cr := pythonCR("waldur-alpha", pythonOwner)
		cr.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
		f := &finder{}
		b, _ := fakeBackend(t, f, cr)
		if err := b.Pause(ctx, "waldur-alpha"); err != nil {
			t.Fatal(err)
		}
		if f.calls != 0 {
			t.Errorf("finder calls = %d, want 0", f.calls)
		}
	})
}

func TestPlanAdoptionsIsTheDryRunOfAdopt(t *testing.T) {
	ctx := context.Background()
	other := backend.Resource{UUID: "0a0a0a0a0a0a4a0a8a0a0a0a0a0a0a0a", Slug: "beta", BackendID: "waldur-beta", CustomerUUID: customer, ProjectUUID: project}
	missing := backend.Resource{UUID: "0b0b0b0b0b0b4b0b8b0b0b0b0b0b0b0b", Slug: "gamma", BackendID: "waldur-gamma", CustomerUUID: customer, ProjectUUID: project}
	foreign := pythonCR("waldur-beta", map[string]any{"orgID": "11111111-2222-3333-4444-555555555555"})
	f := &finder{res: []backend.Resource{pythonResource, other, missing}}
	b, adoptions := fakeBackend(t, f, pythonCR("waldur-alpha", pythonOwner), foreign)

	plan, err := backend.PlanAdoptions(ctx, b, b, f)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ object, action, says string }{
		{"waldur-alpha", backend.PlanAdopt, "spec.owner.orgID is its customer"},
		{"waldur-beta", backend.PlanRefuse, "spec.owner.orgID"},
		{"waldur-gamma", backend.PlanAbsent, ""},
	}
	if len(plan) != len(want) {
		t.Fatalf("plan = %+v, want %d entries", plan, len(want))
	}
	for i, w := range want {
		p := plan[i]
		if p.Object != w.object || p.Action != w.action || !strings.Contains(p.Proof+p.Reason, w.says) {
			t.Errorf("plan[%d] = %+v, want %s %s saying %q", i, p, w.object, w.action, w.says)
		}
	}
	if got := testutil.ToFloat64(adoptions.WithLabelValues(Type, backend.AdoptionAdopted)); got != 0 {
		t.Errorf("planning adopted %v objects, want none", got)
	}
	if cr, _ := b.crs.Get(ctx, "waldur-alpha", metav1.GetOptions{}); isManaged(cr) {
		t.Error("planning marked the CR")
	}

	// Adopt applies the plan the way a change would; a second plan has
	// nothing to adopt.
	if err := b.Adopt(ctx, "waldur-alpha"); err != nil {
		t.Fatal(err)
	}
	if err := b.Adopt(ctx, "waldur-beta"); !errors.Is(err, fault.NotManaged) {
		t.Fatalf("Adopt of the foreign CR: err = %v, want not managed", err)
	}
	again, err := backend.PlanAdoptions(ctx, b, b, f)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Action != backend.PlanManaged || again[1].Action != backend.PlanRefuse {
		t.Errorf("second plan = %+v, want alpha managed and beta still refused", again)
	}
}
