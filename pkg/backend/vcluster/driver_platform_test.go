package vcluster

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/sitebus/sitebus/pkg/fault"
)

const (
	platformUUID      = "11111111-2222-4333-8444-555555555555"
	otherPlatformUUID = "66666666-7777-4888-8999-000000000000"
)

func platformSettings() Settings {
	s := DefaultSettings()
	s.Driver, s.ImportToRancher = DriverPlatform, false
	s.PlatformProject, s.PlatformTemplate, s.PlatformOwner = "waldur", "small", "admin"
	return s
}

func fakePlatform(t *testing.T, objs ...runtime.Object) (*PlatformDriver, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{VirtualClusterInstanceGVR: VirtualClusterInstanceKind + "List"}, objs...)
	return &PlatformDriver{s: platformSettings(), dyn: dyn, log: slog.New(slog.DiscardHandler)}, dyn
}

func TestPlatformInstanceIsMadeFromTheTemplateOnTheHostNamespaceWithOurMarks(t *testing.T) {
	u, err := PlatformInstance(platformSettings(), "vc-team-a", platformUUID)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "storage.loft.sh/v1" || u.GetKind() != "VirtualClusterInstance" || u.GetName() != "team-a" || u.GetNamespace() != "p-waldur" {
		t.Errorf("identity: %s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
	}
	for path, want := range map[string]string{
		"spec.templateRef.name":          "small",
		"spec.clusterRef.cluster":        DefaultPlatformCluster,
		"spec.clusterRef.namespace":      "vc-team-a",
		"spec.clusterRef.virtualCluster": "team-a",
		"spec.owner.user":                "admin",
	} {
		if got, _, _ := unstructured.NestedString(u.Object, strings.Split(path, ".")...); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if u.GetLabels()[LabelManaged] != "true" || u.GetLabels()[LabelResourceUUID] != platformUUID || u.GetAnnotations()[AnnotationManaged] != "true" || u.GetAnnotations()[AnnotationResourceUUID] != platformUUID {
		t.Errorf("marks: %v %v", u.GetLabels(), u.GetAnnotations())
	}

	s := platformSettings()
	s.PlatformOwner = ""
	u, err = PlatformInstance(s, "vc-team-a", platformUUID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "owner"); ok {
		t.Error("an owner without platform_owner; the platform should choose it")
	}
}

func TestPlatformInstanceNameRefusesWhatIsNotAVirtualClusterNamespace(t *testing.T) {
	tests := []struct{ name, ns, want string }{
		{name: "the slug", ns: "vc-a", want: "a"},
		{name: "no prefix", ns: "team-a"},
		{name: "the prefix alone", ns: "vc-"},
		{name: "over 63 characters", ns: "vc-" + strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InstanceName(tt.ns)
			if tt.want == "" {
				if !errors.Is(err, fault.Invalid) {
					t.Fatalf("InstanceName(%q) = %q, %v; want Invalid", tt.ns, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("InstanceName(%q) = %q, %v; want %q", tt.ns, got, err, tt.want)
			}
		})
	}
}

func foreignInstance(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storage.loft.sh/v1", "kind": VirtualClusterInstanceKind,
		"spec": map[string]any{"templateRef": map[string]any{"name": "theirs"}},
	}}
	u.SetName("team-a")
	u.SetNamespace("p-waldur")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestPlatformDriverRefusesAnInstanceNotItsOwnUntouched(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{name: "made by hand", obj: foreignInstance(nil, nil), want: "not managed by sitebus"},
		{name: "another resource's", obj: foreignInstance(marks(otherPlatformUUID),
			map[string]string{AnnotationManaged: "true", AnnotationResourceUUID: otherPlatformUUID}), want: "belongs to Waldur resource"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, dyn := fakePlatform(t, tt.obj)
			if _, err := d.Install(ctx, "vc-team-a", platformUUID, "", nil); !errors.Is(err, fault.NotManaged) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Install: %v, want NotManaged %q", err, tt.want)
			}
			if _, err := d.Uninstall(ctx, "vc-team-a", platformUUID); !errors.Is(err, fault.NotManaged) {
				t.Fatalf("Uninstall: %v, want NotManaged", err)
			}
			for _, a := range dyn.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("touched the foreign instance: %s", a.GetVerb())
				}
			}
			got, err := dyn.Resource(VirtualClusterInstanceGVR).Namespace("p-waldur").Get(ctx, "team-a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tpl, _, _ := unstructured.NestedString(got.Object, "spec", "templateRef", "name"); tpl != "theirs" {
				t.Errorf("template changed to %q", tpl)
			}
		})
	}
}

func TestPlatformDriverInstallsOnceUpdatesADriftedSpecAndUninstallsOnce(t *testing.T) {
	ctx := context.Background()
	d, dyn := fakePlatform(t)
	steps := []struct {
		name string
		do   func() (string, error)
		want string
	}{
		{name: "first install creates", want: ReleaseInstalled, do: func() (string, error) {
			r, err := d.Install(ctx, "vc-team-a", platformUUID, "1.31", map[string]float64{"cpu": 2})
			return r.Action, err
		}},
		{name: "second install changes nothing", want: ReleaseUnchanged, do: func() (string, error) {
			r, err := d.Install(ctx, "vc-team-a", platformUUID, "1.31", nil)
			return r.Action, err
		}},
		{name: "a template changed by hand is put back", want: ReleaseUpgraded, do: func() (string, error) {
			ri := dyn.Resource(VirtualClusterInstanceGVR).Namespace("p-waldur")
			u, err := ri.Get(ctx, "team-a", metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			_ = unstructured.SetNestedField(u.Object, "large", "spec", "templateRef", "name")
			_ = unstructured.SetNestedField(u.Object, "1.0.0", "spec", "templateRef", "version")
			if _, err := ri.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				return "", err
			}
			r, err := d.Install(ctx, "vc-team-a", platformUUID, "", nil)
			if err != nil {
				return "", err
			}
			u, err = ri.Get(ctx, "team-a", metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			// The platform's own fields (the template's version) are kept.
			if v, _, _ := unstructured.NestedString(u.Object, "spec", "templateRef", "version"); v != "1.0.0" {
				t.Errorf("the template version the platform set was dropped: %q", v)
			}
			return r.Action, err
		}},
		{name: "uninstall deletes it", want: "true", do: func() (string, error) {
			had, err := d.Uninstall(ctx, "vc-team-a", platformUUID)
			return map[bool]string{true: "true", false: "false"}[had], err
		}},
		{name: "a second uninstall finds none", want: "false", do: func() (string, error) {
			had, err := d.Uninstall(ctx, "vc-team-a", platformUUID)
			return map[bool]string{true: "true", false: "false"}[had], err
		}},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s: %q, %v; want %q", st.name, got, err, st.want)
		}
	}
}
