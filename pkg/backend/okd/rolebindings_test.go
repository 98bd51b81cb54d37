package okd

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func binding(ns, name, user, role string, managed bool) *unstructured.Unstructured {
	rb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rbacGroup + "/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": rbacGroup, "kind": "ClusterRole", "name": role},
		"subjects": []any{map[string]any{"apiGroup": rbacGroup, "kind": "User", "name": user}},
	}}
	if managed {
		rb.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
	}
	return rb
}

func project(name string, managed bool) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if managed {
		ns.SetLabels(map[string]string{LabelManagedBy: ManagedByValue})
	}
	return ns
}

// PlanRoleBindings is SetRoleBindings's dry run: it lists the binding
// deleted by hand, the one re-pointed by hand and the leftover, never a
// binding sitebus did not make; after SetRoleBindings it lists nothing.
func TestPlanRoleBindingsIsTheDryRunOfSetRoleBindings(t *testing.T) {
	ctx := context.Background()
	const ns = "alloc-alpha"
	users := map[string]string{"alice": "PROJECT.MANAGER", "bob": "PROJECT.MANAGER", "dave": "PROJECT.MEMBER"}
	objs := []runtime.Object{project(ns, true),
		binding(ns, "waldur-alice", "alice", "edit", true),
		binding(ns, "waldur-bob", "bob", "view", true),     // changed by hand
		binding(ns, "waldur-carol", "carol", "edit", true), // no longer on the team
		binding(ns, "team-admins", "eve", "admin", false),  // someone else's
		// dave's binding was deleted by hand
	}
	b, _ := fakeBackend(t, "", objs...)
	b.settings.RoleMap, b.settings.DefaultRole = map[string]string{"manager": "edit"}, "view"

	plan, err := b.PlanRoleBindings(ctx, ns, users)
	if err != nil {
		t.Fatal(err)
	}
	want := []BindingChange{
		{User: "bob", Action: BindingReplace, Want: "edit", Have: "view"},
		{User: "dave", Action: BindingCreate, Want: "view"},
		{User: "carol", Action: BindingDelete, Have: "edit"},
	}
	if len(plan) != len(want) {
		t.Fatalf("plan %+v, want %+v", plan, want)
	}
	for i := range want {
		if p := plan[i]; p.User != want[i].User || p.Action != want[i].Action || p.Want != want[i].Want || p.Have != want[i].Have {
			t.Errorf("change %d = %+v, want %+v", i, p, want[i])
		}
	}
	if got := b.bindingsIn(t, ns); len(got) != 4 {
		t.Fatalf("the dry run changed the bindings: %v", got)
	}

	if _, err := b.SetRoleBindings(ctx, ns, users); err != nil {
		t.Fatal(err)
	}
	if plan, err = b.PlanRoleBindings(ctx, ns, users); err != nil || len(plan) != 0 {
		t.Errorf("after SetRoleBindings: plan %+v, err %v; want none", plan, err)
	}
	if got := b.bindingsIn(t, ns); got["team-admins"] != "admin" {
		t.Errorf("someone else's binding was touched: %v", got)
	}
}

func TestPlanRoleBindingsOfAProjectSitebusDidNotMake(t *testing.T) {
	b, _ := fakeBackend(t, "", project("alloc-alpha", false), binding("alloc-alpha", "waldur-bob", "bob", "view", true))
	plan, err := b.PlanRoleBindings(context.Background(), "alloc-alpha", map[string]string{"alice": "PROJECT.MANAGER"})
	if err != nil || plan != nil {
		t.Errorf("plan %+v, err %v; want none: the project is not sitebus's", plan, err)
	}
}

// bindingsIn is name → ClusterRole of the project's bindings.
func (b *Backend) bindingsIn(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := b.dyn.Resource(roleBindingGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, rb := range list.Items {
		out[rb.GetName()], _, _ = unstructured.NestedString(rb.Object, "roleRef", "name")
	}
	return out
}
