package ranchersim

import (
	"cmp"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/e2e/simkit"
)

type namespaceBody struct {
	Type        string            `json:"type"`
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
	m := map[string]any{
		"id": ns.GetName(), "name": ns.GetName(), "type": "namespace", "baseType": "namespace",
		"projectId": nullable(ann[ProjectIDAnnotation]), "description": ann[DescriptionAnnotation],
		"uuid": string(ns.GetUID()), "labels": cloneMap(ns.GetLabels()), "annotations": ann,
		"resourceQuota": nil, "containerDefaultResourceLimit": nil,
		"links":   map[string]string{"self": self, "update": self, "remove": self, "yaml": self + "/yaml"},
		"actions": map[string]string{"move": self + "?action=move"},
	}
	timestamps(m, ns.GetCreationTimestamp().Time)
	active(m)
	if ns.GetDeletionTimestamp() != nil {
		m["state"] = "removing"
		m["transitioning"] = "yes"
	} else if phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase"); phase == "Terminating" {
		m["state"] = "removing"
	}
	return m
}

// kubeReady checks the cluster path value and that there is a Kubernetes
// API server.
func (s *Server) kubeReady(r *http.Request) *apiError {
	if err := s.cluster(r); err != nil {
		return err
	}
	if s.kube == nil {
		return errNoKube
	}
	return nil
}

// listNamespaces lists the real namespaces; ?projectId=c-…:p-… (norman
// filter) keeps those of one project.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.kubeReady(r); err != nil {
		return err
	}
	list, err := s.kube.namespaces().List(r.Context(), metav1.ListOptions{})
	if err != nil {
		return kubeErr(err)
	}
	b := simkit.BaseURL(r)
	objs := make([]map[string]any, 0, len(list.Items))
	for i := range list.Items {
		objs = append(objs, s.namespaceRep(b, &list.Items[i]))
	}
	writeCollection(w, r, "namespace", b+"/v3/cluster/"+s.opts.ClusterID+"/namespaces", objs)
	return nil
}

func (s *Server) getNamespace(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.kubeReady(r); err != nil {
		return err
	}
	ns, err := s.kube.namespaces().Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		return kubeErr(err)
	}
	simkit.WriteJSON(w, http.StatusOK, s.namespaceRep(simkit.BaseURL(r), ns))
	return nil
}

// createNamespace creates a real namespace with the body's labels and
// annotations plus Rancher's project annotation and label.
func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.kubeReady(r); err != nil {
		return err
	}
	var in namespaceBody
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	if in.Name == "" {
		return missingRequired("name")
	}
	labels, ann := cloneMap(in.Labels), cloneMap(in.Annotations)
	if in.ProjectID != "" {
		s.mu.Lock()
		p := s.projects[in.ProjectID]
		s.mu.Unlock()
		if p == nil || p.clusterID != s.opts.ClusterID {
			return invalidReference("projectId", `projects.management.cattle.io "`+projectShortID(in.ProjectID)+`" not found`)
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
		return kubeErr(err)
	}
	s.log.Debug("namespace created", "name", in.Name, "project", in.ProjectID)
	simkit.WriteJSON(w, http.StatusCreated, s.namespaceRep(simkit.BaseURL(r), created))
	return nil
}

func (s *Server) deleteNamespace(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.kubeReady(r); err != nil {
		return err
	}
	ctx := r.Context()
	name := r.PathValue("name")
	ns, err := s.kube.namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return kubeErr(err)
	}
	if err := s.kube.namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return kubeErr(err)
	}
	rep := s.namespaceRep(simkit.BaseURL(r), ns)
	rep["state"] = "removing"
	simkit.WriteJSON(w, http.StatusOK, rep)
	return nil
}

// proxyKube forwards /k8s/clusters/<id>/<path> to <kube-apiserver>/<path>
// with the simulator's cluster credentials, as Rancher's cluster proxy
// does.
func (s *Server) proxyKube(w http.ResponseWriter, r *http.Request) *apiError {
	if err := s.kubeReady(r); err != nil {
		return err
	}
	out := r.Clone(r.Context())
	out.URL.Path = "/" + strings.TrimPrefix(r.PathValue("rest"), "/")
	out.URL.RawPath = ""
	s.kube.proxy.ServeHTTP(w, out)
	return nil
}
