package ranchersim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
	"github.com/sitebus/sitebus/e2e/simkit"
)

type namespaceBody struct {
	Name        string            `json:"name"`
	ProjectID   string            `json:"projectId"`
	Description string            `json:"description"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// kubeErr turns a Kubernetes API error into the norman error Rancher makes
// of it: the status code, the reason as code ("AlreadyExists") and the
// message.
func kubeErr(err error) *apiError {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := string(s.Reason)
		code = cmp.Or(code, "ServerError")
		status := int(s.Code)
		status = cmp.Or(status, http.StatusInternalServerError)
		return newErr(status, code, s.Message)
	}
	return newErr(http.StatusServiceUnavailable, "ClusterUnavailable", "cluster not available: "+err.Error())
}

// namespaceRep is the v3 namespace Rancher derives from the Kubernetes one.
func (s *Server) namespaceRep(b string, ns *unstructured.Unstructured) map[string]any {
	self := b + "/v3/cluster/" + s.opts.ClusterID + "/namespaces/" + ns.GetName()
	ann := cloneMap(ns.GetAnnotations())
	m := normanObj("namespace", self, ns.GetCreationTimestamp().Time, map[string]any{
		"id": ns.GetName(), "name": ns.GetName(),
		"projectId": nullable(ann[ProjectIDAnnotation]), "description": ann[DescriptionAnnotation],
		"uuid": string(ns.GetUID()), "labels": cloneMap(ns.GetLabels()), "annotations": ann,
		"resourceQuota": nil, "containerDefaultResourceLimit": nil,
	}, map[string]string{"yaml": self + "/yaml"}, map[string]string{"move": self + "?action=move"})
	if phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase"); phase == "Terminating" || ns.GetDeletionTimestamp() != nil {
		removing(m, ns.GetDeletionTimestamp() != nil)
	}
	return m
}

// kubeReady checks the cluster path value (only the simulator's own
// cluster has namespaces) and that there is a Kubernetes API server.
func (s *Server) kubeReady(r *http.Request) *apiError {
	if id := r.PathValue("cluster"); id != s.opts.ClusterID {
		return notFoundCluster(id)
	}
	if s.kube == nil {
		return errNoKube
	}
	return nil
}

// listNamespaces lists the real namespaces; ?projectId=c-…:p-… (norman
// filter) keeps those of one project.
func (s *Server) listNamespaces(r *http.Request) (int, any, *apiError) {
	if err := s.kubeReady(r); err != nil {
		return fail(err)
	}
	list, err := s.kube.namespaces().List(r.Context(), metav1.ListOptions{})
	if err != nil {
		return fail(kubeErr(err))
	}
	b := simkit.BaseURL(r)
	objs := make([]map[string]any, 0, len(list.Items))
	for i := range list.Items {
		objs = append(objs, s.namespaceRep(b, &list.Items[i]))
	}
	return ok(collection(r, "namespace", b+"/v3/cluster/"+s.opts.ClusterID+"/namespaces", objs))
}

func (s *Server) getNamespace(r *http.Request) (int, any, *apiError) {
	if err := s.kubeReady(r); err != nil {
		return fail(err)
	}
	ns, err := s.kube.namespaces().Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		return fail(kubeErr(err))
	}
	return ok(s.namespaceRep(simkit.BaseURL(r), ns))
}

// createNamespace creates a real namespace with the body's labels and
// annotations plus Rancher's project annotation and label.
func (s *Server) createNamespace(r *http.Request) (int, any, *apiError) {
	var in namespaceBody
	if err := s.kubeReady(r); err != nil {
		return fail(err)
	}
	if err := decodeBody(r, &in); err != nil {
		return fail(err)
	}
	if in.Name == "" {
		return fail(missingRequired("name"))
	}
	labels, ann := cloneMap(in.Labels), cloneMap(in.Annotations)
	if in.ProjectID != "" {
		s.mu.Lock()
		p := s.projects.Get(in.ProjectID)
		s.mu.Unlock()
		if p == nil || p.ClusterID != s.opts.ClusterID {
			return fail(invalidReference("projectId", `projects.management.cattle.io "`+projectShortID(in.ProjectID)+`" not found`))
		}
		ann[ProjectIDAnnotation] = in.ProjectID
		labels[ProjectIDLabel] = projectShortID(in.ProjectID)
	}
	if in.Description != "" {
		ann[DescriptionAnnotation] = in.Description
	}
	ann["field.cattle.io/creatorId"] = s.opts.UserID
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": in.Name},
	}}
	ns.SetLabels(labels)
	ns.SetAnnotations(ann)
	created, err := s.kube.namespaces().Create(r.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		return fail(kubeErr(err))
	}
	s.log.Debug("namespace created", "name", in.Name, "project", in.ProjectID)
	return http.StatusCreated, s.namespaceRep(simkit.BaseURL(r), created), nil
}

func (s *Server) deleteNamespace(r *http.Request) (int, any, *apiError) {
	if err := s.kubeReady(r); err != nil {
		return fail(err)
	}
	ns, err := s.kube.namespaces().Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err == nil {
		err = s.kube.namespaces().Delete(r.Context(), ns.GetName(), metav1.DeleteOptions{})
	}
	if err != nil {
		return fail(kubeErr(err))
	}
	return ok(removing(s.namespaceRep(simkit.BaseURL(r), ns), false))
}

// proxyKube forwards /k8s/clusters/<id>/<path> to <kube-apiserver>/<path>
// with the simulator's cluster credentials, as Rancher's cluster proxy
// does.
func (s *Server) proxyKube(w http.ResponseWriter, r *http.Request) {
	if err := s.kubeReady(r); err != nil {
		writeErr(w, err)
		return
	}
	out := r.Clone(r.Context())
	out.URL.Path = "/" + strings.TrimPrefix(r.PathValue("rest"), "/")
	out.URL.RawPath = ""
	s.kube.proxy.ServeHTTP(w, out)
}

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

// deleteProjectNamespaces deletes every namespace whose annotation names
// the project; the namespace controller finishes the job. The label
// narrows the listing; the annotation decides, as p-… alone is not unique
// across clusters.
func (k *kubeClient) deleteProjectNamespaces(ctx context.Context, projectID string) error {
	list, err := k.namespaces().List(ctx, metav1.ListOptions{LabelSelector: ProjectIDLabel + "=" + projectShortID(projectID)})
	if err != nil {
		return fmt.Errorf("list namespaces of %s: %w", projectID, err)
	}
	for _, ns := range list.Items {
		if ns.GetAnnotations()[ProjectIDAnnotation] != projectID {
			continue
		}
		if err := k.namespaces().Delete(ctx, ns.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", ns.GetName(), err)
		}
	}
	return nil
}
