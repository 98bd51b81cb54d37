package okd

import (
	"context"
	"errors"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
)

// listPage bounds one list response; a cluster may hold thousands.
const listPage = 500

var managedSelector = LabelManagedBy + "=" + ManagedByValue

// Metadata is what the Python plugin posts to set_backend_metadata:
// {name, organization, description, quotas, users}, users being the
// managed role bindings' users and their ClusterRoles.
func (b *Backend) Metadata(ctx context.Context, backendID string) (map[string]any, error) {
	ns, err := b.getNamespace(ctx, backendID)
	if err != nil {
		return nil, err
	}
	q, err := b.getQuota(ctx, backendID)
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return nil, err
	}
	return b.metadata(ctx, ns, q)
}

func (b *Backend) metadata(ctx context.Context, ns, q *unstructured.Unstructured) (map[string]any, error) {
	quotas := map[string]any{}
	if q != nil {
		for k, v := range hardOf(q) {
			quotas[k] = v
		}
	}
	users := map[string]any{}
	if isManaged(ns) {
		bindings, err := b.managedBindings(ctx, ns.GetName())
		if err != nil {
			return nil, err
		}
		for _, rb := range bindings {
			if user, role, ok := bindingUser(rb); ok {
				users[user] = role
			}
		}
	}
	a := ns.GetAnnotations()
	return map[string]any{
		"name":         ns.GetName(),
		"organization": a[AnnotationOrganization],
		"description":  a[AnnotationDescription],
		"quotas":       quotas,
		"users":        users,
	}, nil
}

// List returns the projects sitebus manages under this offering's prefix
// (as the Python plugin filters by namespace_prefix), with their status.
func (b *Backend) List(ctx context.Context) ([]backend.Object, error) {
	status := map[string]backend.Status{}
	err := b.listAll(ctx, b.dyn.Resource(quotaGVR), quotaListOptions(), func(q *unstructured.Unstructured) {
		status[q.GetNamespace()] = statusOf(q)
	})
	if err != nil {
		return nil, wrapAPI("list", "ResourceQuotas "+QuotaName, err)
	}
	var out []backend.Object
	prefix := b.settings.NamespacePrefix + b.settings.AllocationPrefix
	err = b.listAll(ctx, b.dyn.Resource(namespaceGVR), metav1.ListOptions{LabelSelector: managedSelector, Limit: listPage},
		func(ns *unstructured.Unstructured) {
			if isManaged(ns) && ns.GetDeletionTimestamp() == nil && strings.HasPrefix(ns.GetName(), prefix) {
				st, ok := status[ns.GetName()]
				if !ok {
					st = backend.StatusActive
				}
				out = append(out, backend.Object{BackendID: ns.GetName(), Status: st})
			}
		})
	if err != nil {
		return nil, wrapAPI("list", "projects", err)
	}
	slices.SortFunc(out, func(a, b backend.Object) int { return strings.Compare(a.BackendID, b.BackendID) })
	return out, nil
}

// quotaListOptions select sitebus's quotas in every namespace.
func quotaListOptions() metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name=" + QuotaName, LabelSelector: managedSelector, Limit: listPage}
}

type lister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

func (b *Backend) listAll(ctx context.Context, l lister, opts metav1.ListOptions, each func(*unstructured.Unstructured)) error {
	for {
		page, err := l.List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range page.Items {
			each(&page.Items[i])
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// Ping asks for the API server's version, the cheapest authenticated
// call (the Python plugin reads /api/v1).
func (b *Backend) Ping(ctx context.Context) error {
	_, err := b.disco.RESTClient().Get().AbsPath("/api/v1").Do(ctx).Raw()
	return wrapAPI("reach the API server at", b.settings.APIURL, err)
}

// Diagnostics describes the cluster as sitebus sees it: versions, whether
// the project API is served, the token source, and how many projects it
// manages.
func (b *Backend) Diagnostics(ctx context.Context) (map[string]any, error) {
	d := map[string]any{
		"api_url":          b.settings.APIURL,
		"verify_cert":      b.settings.VerifyCert,
		"token_type":       b.tokens.Kind(),
		"namespace_prefix": b.settings.NamespacePrefix,
		"project_prefix":   b.settings.NamespacePrefix + b.settings.AllocationPrefix,
	}
	v, err := b.disco.ServerVersion()
	if err != nil {
		return nil, wrapAPI("read the version of", b.settings.APIURL, err)
	}
	d["server_version"] = v.GitVersion
	_, err = b.disco.ServerResourcesForGroupVersion(ProjectGVR.GroupVersion().String())
	d["project_api"] = err == nil
	if err != nil {
		d["project_api_error"] = err.Error()
	}
	objs, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	d["managed_projects"] = len(objs)
	return d, nil
}
