package okd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/pkg/fault"
)

// BindingPrefix starts the name of a user's RoleBinding: waldur-<username>,
// as the Python plugin names them.
const BindingPrefix = "waldur-"

const rbacGroup = "rbac.authorization.k8s.io"

// ClusterRole is the ClusterRole a Waldur role is bound to: the role map's
// (case-insensitive; a scoped role such as PROJECT.MANAGER is looked up by
// its last part too), else default_role. "" means no binding.
func (s Settings) ClusterRole(waldurRole string) string {
	r := strings.ToLower(strings.TrimSpace(waldurRole))
	if c, ok := s.RoleMap[r]; ok {
		return c
	}
	if i := strings.LastIndex(r, "."); i >= 0 {
		if c, ok := s.RoleMap[r[i+1:]]; ok {
			return c
		}
	}
	return s.DefaultRole
}

// SetRoleBindings reconciles the users' RoleBindings in a managed project
// with users (username → Waldur role): one binding waldur-<username> per
// user to the ClusterRole the role maps to, labelled as sitebus's. A
// binding whose role changed is replaced (a roleRef cannot be changed);
// managed bindings of users no longer listed are deleted; bindings sitebus
// did not make are never touched, except the Python agent's of a listed
// user (named waldur-<username>, that one user as its only subject), which
// is adopted. changed is false when every binding was as wanted. Problems
// with single users are joined; the others are still reconciled.
func (b *Backend) SetRoleBindings(ctx context.Context, project string, users map[string]string) (changed bool, err error) {
	if _, err := b.getManaged(ctx, project); err != nil {
		return false, err
	}
	plan, errs, err := b.planBindings(ctx, project, users)
	if err != nil {
		return false, err
	}
	rbs := b.dyn.Resource(roleBindingGVR).Namespace(project)
	for _, c := range plan {
		if c.binding != nil {
			name := c.binding.GetName()
			if err := deleteBinding(ctx, rbs, c.binding); err != nil {
				errs = append(errs, wrapAPI("delete RoleBinding", project+"/"+name, err))
				continue
			}
			if c.Action == BindingDelete {
				changed = true
				b.log.Info("removed OpenShift role binding", "project", project, "binding", name)
				continue
			}
		}
		made, err := b.createBinding(ctx, rbs, project, c.User, c.Want)
		changed = changed || made
		if err != nil {
			errs = append(errs, err)
		}
	}
	return changed, errors.Join(errs...)
}

// What SetRoleBindings does to one user's binding (BindingChange.Action).
const (
	BindingCreate  = "create"  // the user has no binding
	BindingReplace = "replace" // the binding names another ClusterRole
	BindingDelete  = "delete"  // a binding of a user no longer listed
)

// BindingChange is one change SetRoleBindings makes: the user's binding
// to the ClusterRole Want, where Have is bound ("" when none).
type BindingChange struct {
	User, Action, Want, Have string
	// binding is the managed binding there (replace, delete).
	binding *unstructured.Unstructured
}

// PlanRoleBindings is SetRoleBindings's dry run: the changes it would
// make, decided by the same planBindings, changing nothing. A project
// without sitebus's mark has none (a change would adopt or refuse it, and
// its bindings are not sitebus's); an absent one is ErrNotFound.
func (b *Backend) PlanRoleBindings(ctx context.Context, project string, users map[string]string) ([]BindingChange, error) {
	ns, err := b.getNamespace(ctx, project)
	if err != nil {
		return nil, err
	}
	if !isManaged(ns) {
		return nil, nil
	}
	plan, _, err := b.planBindings(ctx, project, users)
	return plan, err
}

// planBindings decides SetRoleBindings's changes from the project's
// managed bindings; errs are the users that cannot be bound.
func (b *Backend) planBindings(ctx context.Context, project string, users map[string]string) (plan []BindingChange, errs []error, err error) {
	existing, err := b.managedBindings(ctx, project)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]*unstructured.Unstructured{}
	for _, rb := range existing {
		have[rb.GetName()] = rb
	}
	want := map[string]bool{}
	for _, user := range sortedKeys(users) {
		role := b.settings.ClusterRole(users[user])
		if role == "" {
			continue // unmapped role and no default_role: no access
		}
		if err := validUsername(user); err != nil {
			errs = append(errs, err)
			continue
		}
		name := BindingPrefix + user
		want[name] = true
		c := BindingChange{User: user, Action: BindingCreate, Want: role}
		if rb := have[name]; rb != nil {
			r, ok := boundRole(rb, user)
			if ok && r == role {
				continue
			}
			c.Action, c.Have, c.binding = BindingReplace, r, rb
		}
		plan = append(plan, c)
	}
	for _, name := range sortedKeys(have) {
		if want[name] {
			continue
		}
		user, role, _ := bindingUser(have[name])
		if user == "" {
			user = strings.TrimPrefix(name, BindingPrefix)
		}
		plan = append(plan, BindingChange{User: user, Action: BindingDelete, Have: role, binding: have[name]})
	}
	return plan, errs, nil
}

// createBinding creates a user's binding; one of that name already there
// is adopted when it is the Python agent's, refused otherwise.
func (b *Backend) createBinding(ctx context.Context, rbs dynamic.ResourceInterface, project, user, role string) (bool, error) {
	name := BindingPrefix + user
	rb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rbacGroup + "/v1",
		"kind":       "RoleBinding",
		"metadata": map[string]any{
			"name": name, "namespace": project,
			"labels": map[string]any{LabelManagedBy: ManagedByValue},
		},
		"roleRef":  map[string]any{"apiGroup": rbacGroup, "kind": "ClusterRole", "name": role},
		"subjects": []any{map[string]any{"apiGroup": rbacGroup, "kind": "User", "name": user}},
	}}
	_, err := rbs.Create(ctx, rb, metav1.CreateOptions{FieldManager: DefaultFieldManager})
	if apierrors.IsAlreadyExists(err) {
		old, gerr := rbs.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return false, wrapAPI("get RoleBinding", project+"/"+name, gerr)
		}
		if _, python := boundRole(old, user); !python || isManaged(old) {
			if isManaged(old) {
				// Made meanwhile by a racing reconcile; the next one checks it.
				return false, fmt.Errorf("OpenShift RoleBinding %s/%s appeared while being created; retry", project, name)
			}
			return false, fault.Errorf(fault.NotManaged, "OpenShift RoleBinding %s/%s exists and is not managed by sitebus; refusing to touch it", project, name)
		}
		if err := deleteBinding(ctx, rbs, old); err != nil {
			return false, wrapAPI("replace the Python agent's RoleBinding", project+"/"+name, err)
		}
		_, err = rbs.Create(ctx, rb, metav1.CreateOptions{FieldManager: DefaultFieldManager})
	}
	if err != nil {
		return false, wrapAPI("create RoleBinding", project+"/"+name, err)
	}
	b.log.Info("bound OpenShift project user", "project", project, "user", user, "cluster_role", role)
	return true, nil
}

// deleteBinding deletes rb unless it was replaced since it was read.
func deleteBinding(ctx context.Context, rbs dynamic.ResourceInterface, rb *unstructured.Unstructured) error {
	uid := rb.GetUID()
	err := rbs.Delete(ctx, rb.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// managedBindings lists the project's bindings sitebus made.
func (b *Backend) managedBindings(ctx context.Context, project string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := b.listAll(ctx, b.dyn.Resource(roleBindingGVR).Namespace(project),
		metav1.ListOptions{LabelSelector: managedSelector, Limit: listPage}, func(rb *unstructured.Unstructured) {
			if isManaged(rb) && strings.HasPrefix(rb.GetName(), BindingPrefix) {
				out = append(out, rb.DeepCopy())
			}
		})
	if err != nil {
		return nil, wrapAPI("list RoleBindings in", project, err)
	}
	return out, nil
}

// boundRole is the ClusterRole rb binds user to, when rb has the shape
// sitebus (and the Python agent) gives it: a ClusterRole, user as the
// only subject.
func boundRole(rb *unstructured.Unstructured, user string) (string, bool) {
	u, role, ok := bindingUser(rb)
	return role, ok && u == user
}

// bindingUser reads a binding of sitebus's shape: one User subject bound
// to a ClusterRole.
func bindingUser(rb *unstructured.Unstructured) (user, role string, ok bool) {
	kind, _, _ := unstructured.NestedString(rb.Object, "roleRef", "kind")
	role, _, _ = unstructured.NestedString(rb.Object, "roleRef", "name")
	subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
	if kind != "ClusterRole" || len(subjects) != 1 {
		return "", "", false
	}
	s, _ := subjects[0].(map[string]any)
	if s["kind"] != "User" {
		return "", "", false
	}
	user, _ = s["name"].(string)
	return user, role, user != ""
}

// validUsername refuses a username that cannot name a binding (a path
// segment: no '/', no '%', not "." or "..") or is blank.
func validUsername(user string) error {
	if strings.TrimSpace(user) == "" || strings.ContainsAny(user, "/%") || user == "." || user == ".." {
		return fault.Errorf(fault.Invalid, "username %q cannot name an OpenShift RoleBinding (%s<username>)", user, BindingPrefix)
	}
	return nil
}
