package okd

import (
	"context"
	"encoding/json"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

// AnnotationRequester is set by OpenShift on a project made through a
// ProjectRequest: the user whose token asked for it.
const AnnotationRequester = "openshift.io/requester"

// userGVR is OpenShift's user API; users/~ is the user of the token that
// asks.
var userGVR = schema.GroupVersionResource{Group: "user.openshift.io", Version: "v1", Resource: "users"}

// adopt is what every change (SetLimits, Pause, Downscale, Restore,
// SetRoleBindings, Delete) does with a project whose namespace lacks
// sitebus's mark: it marks it as sitebus's when it is the Python agent's
// for a Waldur resource of the offering (decideAdoption), and refuses it
// otherwise. The Python agent requested its projects with the token
// sitebus is configured with (a site switches by pointing sitebus at the
// agent's config), so OpenShift recorded that token's user as the
// requester. Without a resource finder (operator tools) every unmarked
// project is refused.
func (b *Backend) adopt(ctx context.Context, ns *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	name := ns.GetName()
	if b.resources == nil {
		return nil, b.notManaged(name)
	}
	d, err := b.decide(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !d.Adopt {
		b.adoptions.WithLabelValues(Type, backend.AdoptionRefused).Inc()
		return nil, fault.Errorf(fault.NotManaged,
			"OpenShift project %s exists and is not managed by sitebus (no %s=%s label), and it is not the Python agent's for a resource of this offering (%s); refusing to touch it",
			name, LabelManagedBy, ManagedByValue, d.Reason)
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": ns.GetResourceVersion(), // changed meanwhile: read and judged again
		"labels":          map[string]any{LabelManagedBy: ManagedByValue},
		"annotations":     map[string]any{AnnotationResourceUUID: d.Resource.UUID},
	}})
	if err != nil {
		return nil, err
	}
	out, err := b.dyn.Resource(namespaceGVR).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: DefaultFieldManager})
	if err != nil {
		return nil, wrapAPI("adopt the namespace of project", name, err)
	}
	b.adoptions.WithLabelValues(Type, backend.AdoptionAdopted).Inc()
	b.log.Info("adopted the Python agent's OpenShift project", "project", name, "resource", d.Resource.UUID, "proof", d.Proof)
	return out, nil
}

var _ backend.Adopter = (*Backend)(nil)

// decide finds the resources that name ns and the configured token's
// user, and decides (decideAdoption).
func (b *Backend) decide(ctx context.Context, ns *unstructured.Unstructured) (backend.Adoption, error) {
	claimants, err := backend.Claimants(ctx, b.resources, ns.GetName(), b.BackendID)
	if err != nil {
		return backend.Adoption{}, err
	}
	user, err := b.identity.get(ctx, b)
	if err != nil {
		return backend.Adoption{}, err
	}
	return decideAdoption(ns, claimants, user, b.settings), nil
}

// PlanAdoption tells what the first change for backendID would do with
// its project (backend.Adopter), without changing it.
func (b *Backend) PlanAdoption(ctx context.Context, backendID string) (backend.PlannedAdoption, error) {
	ns, err := b.getNamespace(ctx, backendID)
	return backend.PlanObject(backendID, err, func() bool { return isManaged(ns) }, b.resources != nil,
		func() (backend.Adoption, error) { return b.decide(ctx, ns) })
}

// Adopt adopts the project of backendID as the first change for it would
// (backend.Adopter): a project of sitebus's is left as it is, a refused
// one errs ErrNotManaged.
func (b *Backend) Adopt(ctx context.Context, backendID string) error {
	_, err := b.getManaged(ctx, backendID)
	return err
}

// decideAdoption tells whether an unmarked project is the Python agent's
// for the one Waldur resource that names it (claimants): OpenShift
// recorded user, the configured token's user ("" when the cluster cannot
// tell), as its requester. A project another tool marked as its own, or
// whose waldur/parent (which the Python plugin asks for, and a project
// template may keep) names another Waldur project, is not the resource's.
func decideAdoption(ns *unstructured.Unstructured, claimants []backend.Resource, user string, s Settings) backend.Adoption {
	if by, ok := ns.GetLabels()[LabelManagedBy]; ok && by != ManagedByValue {
		return backend.Refuse("it is marked %s=%s", LabelManagedBy, by)
	}
	r, refusal, ok := backend.OneClaimant(claimants)
	if !ok {
		return refusal
	}
	a := ns.GetAnnotations()
	if other := a[AnnotationResourceUUID]; other != "" && other != r.UUID {
		return backend.Refuse("its %s is resource %s, not %s", AnnotationResourceUUID, other, r.UUID)
	}
	requester, requested := a[AnnotationRequester]
	switch {
	case !requested:
		return backend.Refuse("it has no %s: no token requested it through the project API", AnnotationRequester)
	case user == "":
		return backend.Refuse("the user of the configured token is unknown (OpenShift's users/~ did not answer), so the requester %s proves nothing", requester)
	case requester != user:
		return backend.Refuse("its %s is %s, not the configured token's user %s", AnnotationRequester, requester, user)
	}
	if parent, ok := a[AnnotationParent]; ok {
		if n, err := s.Names(r); err == nil && n.Parent != "" && parent != n.Parent {
			return backend.Refuse("its %s is %s, but the resource's Waldur project is %s", AnnotationParent, parent, n.Parent)
		}
	}
	return backend.Adoption{Adopt: true, Resource: r,
		Proof: "resource " + r.UUID + " names it; its " + AnnotationRequester + " is the configured token's user " + user}
}

// tokenUser caches the user of the configured token (OpenShift's
// users/~). A rotated token is the same service account's, so the first
// answer stands for the process's life. A cluster without the user API
// (plain Kubernetes) gives "", which proves no requester.
type tokenUser struct {
	mu    sync.Mutex
	known bool
	name  string
}

func (u *tokenUser) get(ctx context.Context, b *Backend) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.known {
		return u.name, nil
	}
	obj, err := b.dyn.Resource(userGVR).Get(ctx, "~", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b.log.Warn("OpenShift's user API does not answer users/~; projects the Python agent made cannot be adopted", "err", err)
	case err != nil:
		return "", wrapAPI("get the user of the configured token:", "users/~", err)
	default:
		u.name = obj.GetName()
	}
	u.known = true
	return u.name, nil
}
