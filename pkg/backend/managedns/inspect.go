package managedns

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"

	"github.com/sitebus/sitebus/pkg/backend"
)

// Metadata is what the Python plugin posts to set_backend_metadata:
// {name, quota, status: {ready, message}}.
func (b *Backend) Metadata(ctx context.Context, backendID string) (map[string]any, error) {
	cr, err := b.get(ctx, "get", backendID)
	if err != nil {
		return nil, err
	}
	return metadata(cr), nil
}

func metadata(cr *unstructured.Unstructured) map[string]any {
	return map[string]any{
		"name":   cr.GetName(),
		"quota":  stringsToAny(specQuota(cr)),
		"status": readyStatus(cr),
	}
}

// listPage bounds one list response; the CR namespace may hold thousands.
const listPage = 500

// List returns the CRs in the CR namespace that sitebus manages, each
// with the limits in force.
func (b *Backend) List(ctx context.Context) ([]backend.Object, error) {
	var out []backend.Object
	err := b.eachManaged(ctx, func(cr *unstructured.Unstructured) {
		o := backend.Object{BackendID: cr.GetName(), Status: statusOf(cr)}
		if l, err := b.quota.fromQuota(specQuota(cr)); err == nil {
			o.Limits = l
		}
		out = append(out, o)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b backend.Object) int {
		switch {
		case a.BackendID < b.BackendID:
			return -1
		case a.BackendID > b.BackendID:
			return 1
		}
		return 0
	})
	return out, nil
}

// eachManaged hands each CR sitebus manages in the CR namespace to f,
// reading them a page at a time.
func (b *Backend) eachManaged(ctx context.Context, f func(cr *unstructured.Unstructured)) error {
	opts := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedByValue, Limit: listPage}
	for {
		page, err := b.crs.List(ctx, opts)
		if err != nil {
			return wrapAPI("list", "in "+b.settings.CRNamespace, err)
		}
		for i := range page.Items {
			if cr := &page.Items[i]; isManaged(cr) {
				f(cr)
			}
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// Ping asks the API server for its version, as the Python plugin does.
func (b *Backend) Ping(ctx context.Context) error {
	_, err := b.serverVersion(ctx)
	return err
}

func (b *Backend) serverVersion(ctx context.Context) (*version.Info, error) {
	raw, err := b.disco.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("k8s-ut-namespace: GET /version: %w", err)
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("k8s-ut-namespace: GET /version: %w", err)
	}
	return &v, nil
}

// Diagnostics reports the server version, where the CRs live, whether the
// CRD is served and how many CRs sitebus manages. It fails only when the
// API server does not answer.
func (b *Backend) Diagnostics(ctx context.Context) (map[string]any, error) {
	d := map[string]any{
		"backend_type":     Type,
		"cr_namespace":     b.settings.CRNamespace,
		"namespace_prefix": b.settings.NamespacePrefix,
		"quota_mapping":    b.settings.QuotaMapping,
	}
	v, err := b.serverVersion(ctx)
	if err != nil {
		return d, err
	}
	d["server_version"] = v.GitVersion
	installed, err := b.crdServed(ctx)
	if err != nil {
		d["crd_error"] = err.Error()
	}
	d["crd_installed"] = installed
	if installed {
		if objs, err := b.List(ctx); err != nil {
			d["list_error"] = err.Error()
		} else {
			d["managed_namespaces"] = len(objs)
		}
	}
	return d, nil
}

// crdServed asks discovery (uncached) whether the API server serves
// managednamespaces in provisioning.hpc.ut.ee/v1.
func (b *Backend) crdServed(ctx context.Context) (bool, error) {
	raw, err := b.disco.RESTClient().Get().AbsPath("/apis", Group, Version).Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == Resource {
			return true, nil
		}
	}
	return false, nil
}
