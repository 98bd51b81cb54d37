package ranchersim

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sitebus/sitebus/e2e/kubeproxy"
)

// Rancher's namespace-to-project link: the annotation holds the full
// project id "c-…:p-…", the label (which cannot hold ':') only "p-…".
const (
	ProjectIDAnnotation   = "field.cattle.io/projectId"
	ProjectIDLabel        = "field.cattle.io/projectId"
	DescriptionAnnotation = "field.cattle.io/description"
)

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// kubeClient is the simulator's way into the downstream cluster. Its
// proxy speaks to the API server as the simulator (Rancher proxies as
// itself too, impersonating the user; the test cluster has no Rancher
// users to impersonate).
type kubeClient struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	proxy  *kubeproxy.Proxy
}

func newKubeClient(cfg *rest.Config) (*kubeClient, error) {
	cfg = rest.CopyConfig(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	proxy, err := kubeproxy.New(cfg, func(w http.ResponseWriter, err error) {
		writeErr(w, newErr(http.StatusServiceUnavailable, "ClusterUnavailable", "cluster not available: "+err.Error()))
	})
	if err != nil {
		return nil, err
	}
	return &kubeClient{
		dyn:    dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
		proxy:  proxy,
	}, nil
}

func (k *kubeClient) namespaces() dynamic.ResourceInterface { return k.dyn.Resource(namespaceGVR) }

// projectNamespaces lists the namespaces whose annotation names projectID.
// The label narrows the listing; the annotation decides, as p-… alone is
// not unique across clusters.
func (k *kubeClient) projectNamespaces(ctx context.Context, projectID string) ([]unstructured.Unstructured, error) {
	list, err := k.namespaces().List(ctx, metav1.ListOptions{LabelSelector: ProjectIDLabel + "=" + projectShortID(projectID)})
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, ns := range list.Items {
		if ns.GetAnnotations()[ProjectIDAnnotation] == projectID {
			out = append(out, ns)
		}
	}
	return out, nil
}

// deleteProjectNamespaces deletes every namespace of the project; the
// namespace controller finishes the job.
func (k *kubeClient) deleteProjectNamespaces(ctx context.Context, projectID string) error {
	nss, err := k.projectNamespaces(ctx, projectID)
	if err != nil {
		return fmt.Errorf("list namespaces of %s: %w", projectID, err)
	}
	for _, ns := range nss {
		if err := k.namespaces().Delete(ctx, ns.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", ns.GetName(), err)
		}
	}
	return nil
}
