package okd

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

const (
	agentUser = "system:serviceaccount:waldur:site-agent"
	resUUID   = "9f8e7d6c5b4a49382716059483726150"
)

// pythonResource's object is the Python agent's production project name:
// allocation_prefix + slug, recorded as backend_id.
var pythonResource = backend.Resource{UUID: resUUID, Slug: "alpha", BackendID: "alloc-alpha", ProjectSlug: "genomics", CustomerSlug: "acme"}

// pythonProject is a project's namespace as OpenShift leaves it after the
// Python agent's ProjectRequest: the default template's annotations, the
// requester, no labels.
func pythonProject(name, requester string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(name)
	a := map[string]string{AnnotationDescription: "Alpha", AnnotationDisplayName: "Alpha"}
	if requester != "" {
		a[AnnotationRequester] = requester
	}
	ns.SetAnnotations(a)
	return ns
}

func with(ns *unstructured.Unstructured, labels, annotations map[string]string) *unstructured.Unstructured {
	if labels != nil {
		ns.SetLabels(labels)
	}
	a := ns.GetAnnotations()
	maps.Copy(a, annotations)
	ns.SetAnnotations(a)
	return ns
}

func TestDecideAdoption(t *testing.T) {
	s := DefaultSettings()
	other := "11111111222233334444555555555555"
	one := []backend.Resource{pythonResource}
	tests := []struct {
		name      string
		ns        *unstructured.Unstructured
		claimants []backend.Resource
		user      string
		adopt     bool
		why       string
	}{
		{"the project the configured token requested for the resource is adopted",
			pythonProject("alloc-alpha", agentUser), one, agentUser, true, "requester is the configured token's user"},
		{"a waldur/parent of the resource's Waldur project does not stop it",
			with(pythonProject("alloc-alpha", agentUser), nil, map[string]string{AnnotationParent: "waldur-proj-genomics"}), one, agentUser, true, agentUser},
		{"another requester is refused",
			pythonProject("alloc-alpha", "alice"), one, agentUser, false, "requester is alice"},
		{"a project without a requester is refused",
			pythonProject("alloc-alpha", ""), one, agentUser, false, "no openshift.io/requester"},
		{"an unknown token user proves nothing",
			pythonProject("alloc-alpha", agentUser), one, "", false, "unknown"},
		{"a project no resource names is refused",
			pythonProject("alloc-alpha", agentUser), nil, agentUser, false, "no Waldur resource"},
		{"a project two resources name is refused",
			pythonProject("alloc-alpha", agentUser), []backend.Resource{pythonResource, {UUID: other}}, agentUser, false, "2 Waldur resources"},
		{"another tool's mark is refused",
			with(pythonProject("alloc-alpha", agentUser), map[string]string{LabelManagedBy: "argocd"}, nil), one, agentUser, false, "managed-by=argocd"},
		{"sitebus's annotation for another resource is refused",
			with(pythonProject("alloc-alpha", agentUser), nil, map[string]string{AnnotationResourceUUID: other}), one, agentUser, false, other},
		{"a waldur/parent of another Waldur project is refused",
			with(pythonProject("alloc-alpha", agentUser), nil, map[string]string{AnnotationParent: "waldur-proj-physics"}), one, agentUser, false, "waldur-proj-physics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideAdoption(tt.ns, tt.claimants, tt.user, s)
			if d.Adopt != tt.adopt {
				t.Fatalf("adopt = %v (proof %q, reason %q), want %v", d.Adopt, d.Proof, d.Reason, tt.adopt)
			}
			if got := d.Proof + d.Reason; !strings.Contains(got, tt.why) {
				t.Errorf("proof/reason %q does not say %q", got, tt.why)
			}
		})
	}
}

type finder struct{ res []backend.Resource }

func (f finder) ResourcesByBackendID(_ context.Context, id string) ([]backend.Resource, error) {
	var out []backend.Resource
	for _, r := range f.res {
		if r.BackendID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f finder) Resources(context.Context) ([]backend.Resource, error) { return f.res, nil }

// fakeBackend is a backend on a fake cluster whose users/~ answers user
// ("": the user API is missing), counting the calls to it.
func fakeBackend(t *testing.T, user string, objs ...runtime.Object) (*Backend, *int) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		namespaceGVR: "NamespaceList", quotaGVR: "ResourceQuotaList", roleBindingGVR: "RoleBindingList", userGVR: "UserList",
	}, objs...)
	calls := 0
	dyn.PrependReactor("get", "users", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if user == "" {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: userGVR.Group, Resource: "users"}, "~")
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "user.openshift.io/v1", "kind": "User"}}
		u.SetName(user)
		return true, u, nil
	})
	codec, err := newQuotaCodec(map[string]config.BackendComponent{"cpu": {}, "memory": {}, "storage": {}, "pods": {}})
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	s.AllocationPrefix, s.NamespacePrefix = "alloc-", ""
	return &Backend{settings: s, quota: codec, dyn: dyn, log: backend.Logger(nil, Type),
		resources: finder{res: []backend.Resource{pythonResource}}, adoptions: backend.AdoptionsCounter(nil)}, &calls
}

func TestChangesAdoptThePythonAgentsProject(t *testing.T) {
	ctx := context.Background()
	verbs := map[string]func(b *Backend) error{
		"SetLimits": func(b *Backend) error {
			_, err := b.SetLimits(ctx, "alloc-alpha", map[string]float64{"cpu": 2})
			return err
		},
		"Pause":   func(b *Backend) error { return b.Pause(ctx, "alloc-alpha") },
		"Restore": func(b *Backend) error { return b.Restore(ctx, "alloc-alpha") },
		"SetRoleBindings": func(b *Backend) error {
			_, err := b.SetRoleBindings(ctx, "alloc-alpha", map[string]string{"alice": "PROJECT.MANAGER"})
			return err
		},
		"Delete": func(b *Backend) error { return b.Delete(ctx, "alloc-alpha") },
	}
	for verb, do := range verbs {
		t.Run(verb+" adopts the project the configured token requested", func(t *testing.T) {
			b, _ := fakeBackend(t, agentUser, pythonProject("alloc-alpha", agentUser))
			if err := do(b); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(b.adoptions.WithLabelValues(Type, backend.AdoptionAdopted)); got != 1 {
				t.Errorf("adopted count = %v, want 1", got)
			}
			ns, err := b.dyn.Resource(namespaceGVR).Get(ctx, "alloc-alpha", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !isManaged(ns) || ns.GetAnnotations()[AnnotationResourceUUID] != resUUID {
				t.Errorf("labels %v, annotations %v: want sitebus's mark for %s", ns.GetLabels(), ns.GetAnnotations(), resUUID)
			}
		})
		t.Run(verb+" refuses another requester's project and leaves it untouched", func(t *testing.T) {
			b, _ := fakeBackend(t, agentUser, pythonProject("alloc-alpha", "alice"))
			err := do(b)
			if !errors.Is(err, fault.NotManaged) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), "requester is alice") {
				t.Fatalf("err = %v, want a terminal refusal naming the requester", err)
			}
			ns, gerr := b.dyn.Resource(namespaceGVR).Get(ctx, "alloc-alpha", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if len(ns.GetLabels()) > 0 || ns.GetAnnotations()[AnnotationResourceUUID] != "" {
				t.Errorf("foreign project changed: %v", ns.Object)
			}
			if got := testutil.ToFloat64(b.adoptions.WithLabelValues(Type, backend.AdoptionRefused)); got != 1 {
				t.Errorf("refused count = %v, want 1", got)
			}
		})
	}
	t.Run("the token's user is asked once", func(t *testing.T) {
		b, calls := fakeBackend(t, agentUser, pythonProject("alloc-alpha", "alice"))
		for range 3 {
			if err := b.Pause(ctx, "alloc-alpha"); !errors.Is(err, fault.NotManaged) {
				t.Fatalf("Pause: %v", err)
			}
		}
		if *calls != 1 {
			t.Errorf("users/~ asked %d times, want 1", *calls)
		}
	})
	t.Run("without OpenShift's user API nothing is adopted", func(t *testing.T) {
		b, _ := fakeBackend(t, "", pythonProject("alloc-alpha", agentUser))
		if err := b.Pause(ctx, "alloc-alpha"); !errors.Is(err, fault.NotManaged) || !strings.Contains(err.Error(), "unknown") {
			t.Fatalf("Pause: err = %v, want a refusal saying the user is unknown", err)
		}
	})
	t.Run("create never adopts, even the resource's own Python project", func(t *testing.T) {
		b, _ := fakeBackend(t, agentUser, pythonProject("alloc-alpha", agentUser))
		r := pythonResource
		if _, err := b.Create(ctx, r); !errors.Is(err, fault.NotManaged) {
			t.Fatalf("Create: err = %v, want NotManaged", err)
		}
	})
}
