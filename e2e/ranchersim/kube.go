package ranchersim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sitebus/sitebus/e2e/kube/manifest"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/simkit/simkube"
)

// namespaceBody is what POST …/namespaces accepts (JSON names matched
// case-insensitively).
type namespaceBody struct {
	Name, ProjectID, Description string
	Labels, Annotations          map[string]string
}

// kubeErr turns a Kubernetes API error into the norman error Rancher makes
// of it: the status code, the reason as code ("AlreadyExists") and the
// message.
func kubeErr(err error) *apiError {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return newErr(cmp.Or(int(s.Code), http.StatusInternalServerError), cmp.Or(string(s.Reason), "ServerError"), s.Message)
	}
	return newErr(http.StatusServiceUnavailable, "ClusterUnavailable", "cluster not available: "+err.Error())
}

// namespaceRep is the v3 namespace Rancher derives from the Kubernetes one.
func (s *Server) namespaceRep(b string, ns *unstructured.Unstructured) map[string]any {
	self := b + "/v3/cluster/" + s.opts.ClusterID + "/namespaces/" + ns.GetName()
	ann := simkit.CloneOrEmpty(ns.GetAnnotations())
	m := normanObj("namespace", self, ns.GetCreationTimestamp().Time, map[string]any{
		"id": ns.GetName(), "name": ns.GetName(),
		"projectId": simkit.OrNil(ann[ProjectIDAnnotation]), "description": ann[DescriptionAnnotation],
		"uuid": string(ns.GetUID()), "labels": simkit.CloneOrEmpty(ns.GetLabels()), "annotations": ann,
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
		return clustersType.notFound(id)
	}
	if s.kube == nil {
		return errNoKube
	}
	return nil
}

// onKube serves h once kubeReady passes.
func (s *Server) onKube(h handler) handler {
	return func(r *http.Request, in struct{}) (any, error) {
		if err := s.kubeReady(r); err != nil {
			return nil, err
		}
		return h(r, in)
	}
}

// listNamespaces lists the real namespaces; ?projectId=c-…:p-… (norman
// filter) keeps those of one project.
func (s *Server) listNamespaces(r *http.Request, _ struct{}) (any, error) {
	list, err := s.kube.Namespaces().List(r.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, kubeErr(err)
	}
	b := simkit.BaseURL(r)
	objs := simkit.Map(list.Items, func(ns unstructured.Unstructured) map[string]any { return s.namespaceRep(b, &ns) })
	return collection(r, "namespace", b+"/v3/cluster/"+s.opts.ClusterID+"/namespaces", objs), nil
}

func (s *Server) getNamespace(r *http.Request, _ struct{}) (any, error) {
	ns, err := s.kube.Namespaces().Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		return nil, kubeErr(err)
	}
	return s.namespaceRep(simkit.BaseURL(r), ns), nil
}

// createNamespace creates a real namespace with the body's labels and
// annotations plus Rancher's project annotation and label.
func (s *Server) createNamespace(r *http.Request, _ struct{}) (any, error) {
	var in namespaceBody
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	if in.Name == "" {
		return nil, missingRequired("name")
	}
	labels, ann := simkit.CloneOrEmpty(in.Labels), simkit.CloneOrEmpty(in.Annotations)
	if in.ProjectID != "" {
		// The store's own lock will do: a project's cluster never changes.
		if p := s.projects.Get(in.ProjectID); p == nil || p.ClusterID != s.opts.ClusterID {
			return nil, invalidReference("projectId", `projects.management.cattle.io "`+projectShortID(in.ProjectID)+`" not found`)
		}
		ann[ProjectIDAnnotation] = in.ProjectID
		labels[ProjectIDLabel] = projectShortID(in.ProjectID)
	}
	if in.Description != "" {
		ann[DescriptionAnnotation] = in.Description
	}
	ann["field.cattle.io/creatorId"] = s.opts.UserID
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(in.Name)
	ns.SetLabels(labels)
	ns.SetAnnotations(ann)
	created, err := s.kube.Namespaces().Create(r.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		return nil, kubeErr(err)
	}
	s.log.Debug("namespace created", "name", in.Name, "project", in.ProjectID)
	return simkit.Created(s.namespaceRep(simkit.BaseURL(r), created)), nil
}

// namespaceUpdate is what PUT …/namespaces/<name> accepts: a map field
// given replaces the namespace's (norman's update replaces a map it is
// sent, so removing a label is leaving it out); one not given stays.
type namespaceUpdate struct {
	Description         *string
	Labels, Annotations map[string]string
}

// updateNamespace is Rancher's norman PUT of a namespace: it writes the
// labels, annotations and description to the real namespace. Rancher's
// own project link (annotation and label) is kept whatever the body says:
// moving a namespace is the move action, not an update.
func (s *Server) updateNamespace(r *http.Request, _ struct{}) (any, error) {
	var in namespaceUpdate
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	ns, err := s.kube.Namespaces().Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		return nil, kubeErr(err)
	}
	oldAnn, oldLabels := ns.GetAnnotations(), ns.GetLabels()
	if in.Labels != nil {
		labels := simkit.CloneOrEmpty(in.Labels)
		if v, ok := oldLabels[ProjectIDLabel]; ok {
			labels[ProjectIDLabel] = v
		}
		ns.SetLabels(labels)
	}
	ann := simkit.CloneOrEmpty(oldAnn)
	if in.Annotations != nil {
		ann = simkit.CloneOrEmpty(in.Annotations)
		for _, k := range []string{ProjectIDAnnotation, DescriptionAnnotation} {
			if v, ok := oldAnn[k]; ok {
				ann[k] = v
			}
		}
	}
	if in.Description != nil {
		ann[DescriptionAnnotation] = *in.Description
	}
	ns.SetAnnotations(ann)
	updated, err := s.kube.Namespaces().Update(r.Context(), ns, metav1.UpdateOptions{})
	if err != nil {
		return nil, kubeErr(err)
	}
	s.log.Debug("namespace updated", "name", ns.GetName())
	return s.namespaceRep(simkit.BaseURL(r), updated), nil
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
	s.kube.Proxy.ServeHTTP(w, out)
}

// Rancher's namespace-to-project link: the annotation holds the full
// project id "c-…:p-…", the label (which cannot hold ':') only "p-…".
const (
	ProjectIDAnnotation   = "field.cattle.io/projectId"
	ProjectIDLabel        = "field.cattle.io/projectId"
	DescriptionAnnotation = "field.cattle.io/description"
)

// kubeClient is the simulator's way into the downstream cluster. Its
// proxy speaks to the API server as the simulator (Rancher proxies as
// itself too, impersonating the user; the test cluster has no Rancher
// users to impersonate).
type kubeClient struct {
	*simkube.Client
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newKubeClient(cfg *rest.Config) (*kubeClient, error) {
	c, err := simkube.New(cfg, func(w http.ResponseWriter, err error) {
		writeErr(w, newErr(http.StatusServiceUnavailable, "ClusterUnavailable", "cluster not available: "+err.Error()))
	})
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &kubeClient{Client: c, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}, nil
}

// deleteProjectNamespaces deletes every namespace whose annotation names
// the project; the namespace controller finishes the job. The label
// narrows the listing; the annotation decides, as p-… alone is not unique
// across clusters.
func (k *kubeClient) deleteProjectNamespaces(ctx context.Context, projectID string) error {
	list, err := k.Namespaces().List(ctx, metav1.ListOptions{LabelSelector: ProjectIDLabel + "=" + projectShortID(projectID)})
	if err != nil {
		return fmt.Errorf("list namespaces of %s: %w", projectID, err)
	}
	for _, ns := range list.Items {
		if ns.GetAnnotations()[ProjectIDAnnotation] != projectID {
			continue
		}
		if err := k.Namespaces().Delete(ctx, ns.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", ns.GetName(), err)
		}
	}
	return nil
}

// Import is one importYaml call as received: YAML is the exact string of
// the body's "yaml" field, for byte-for-byte comparisons.
type Import struct {
	Time      time.Time
	ClusterID string
	importBody
	Status  int    // what the simulator answered
	Message string // the importYamlOutput message (kubectl's output)
}

// importBody is Rancher's ImportClusterYamlInput, whose JSON names (yaml,
// defaultNamespace, …) match these case-insensitively.
type importBody struct {
	YAML, Namespace, DefaultNamespace, ProjectID string
}

// FieldManager is the server-side-apply manager importYaml applies with.
const FieldManager = "ranchersim-importyaml"

// importYAML applies the manifest to the cluster as Rancher's handler does
// with kubectl apply: "namespace" forces the namespace of every namespaced
// object (a different one is an error), "defaultNamespace" only fills it
// in. The answer is {"type":"importYamlOutput","message":<kubectl output>},
// 200 on success and 400 when any object failed (the others are applied,
// as kubectl goes on).
func (s *Server) importYAML(r *http.Request) (any, error) {
	if s.kube == nil {
		return nil, errNoKube
	}
	var in importBody
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	msg, failed := s.kube.applyManifest(r.Context(), in)
	imp := Import{Time: s.now(), ClusterID: s.opts.ClusterID, importBody: in, Message: msg,
		Status: map[bool]int{false: http.StatusOK, true: http.StatusBadRequest}[failed]}
	s.mu.Lock()
	s.imports = append(s.imports, imp)
	s.mu.Unlock()
	return simkit.Reply{Status: imp.Status, Body: map[string]any{"type": "importYamlOutput", "message": imp.Message}}, nil
}

// applyManifest applies every object and returns kubectl's output (a line
// for each object, or one error line) and whether anything failed.
func (k *kubeClient) applyManifest(ctx context.Context, in importBody) (string, bool) {
	objs, err := manifest.Decode([]byte(in.YAML))
	switch {
	case err != nil:
		return "error: error parsing STDIN: " + err.Error() + "\n", true
	case len(objs) == 0:
		return "error: no objects passed to apply\n", true
	}
	out, failed := "", false
	for _, obj := range objs {
		line, err := k.applyOne(ctx, obj, in)
		if err != nil {
			failed, line = true, err.Error()
		}
		out += line + "\n"
	}
	return out, failed
}

func (k *kubeClient) applyOne(ctx context.Context, obj *unstructured.Unstructured, in importBody) (string, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		k.mapper.Reset() // a CRD may have been added since discovery was cached
		mapping, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return "", fmt.Errorf(`error: resource mapping not found for name: %q namespace: %q from "STDIN": %v`,
			obj.GetName(), obj.GetNamespace(), err)
	}
	var ri dynamic.ResourceInterface = k.Dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		switch ns := obj.GetNamespace(); {
		case in.Namespace != "" && ns != "" && ns != in.Namespace:
			return "", kubectlOutput(fmt.Sprintf("error: the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", ns, in.Namespace, ns))
		case ns != "":
		case in.DefaultNamespace != "":
			obj.SetNamespace(in.DefaultNamespace)
		case in.Namespace != "":
			obj.SetNamespace(in.Namespace)
		default:
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		ri = k.Dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	} else if gvk.Kind == "Namespace" && gvk.Group == "" && in.ProjectID != "" {
		// Rancher puts namespaces the manifest creates into the project.
		ann, labels := simkit.CloneOrEmpty(obj.GetAnnotations()), simkit.CloneOrEmpty(obj.GetLabels())
		ann[ProjectIDAnnotation] = in.ProjectID
		labels[ProjectIDLabel] = projectShortID(in.ProjectID)
		obj.SetAnnotations(ann)
		obj.SetLabels(labels)
	}
	// kind[.group]/name, as kubectl names it (groups are lower case).
	ref := strings.ToLower(strings.TrimSuffix(gvk.Kind+"."+gvk.Group, ".")) + "/" + obj.GetName()

	before, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fromServer(err, "retrieving current configuration of", ref)
	}
	after, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	switch {
	case err != nil && existed:
		return "", fromServer(err, "patching", ref)
	case err != nil:
		return "", fromServer(err, "creating", ref)
	case !existed:
		return ref + " created", nil
	case !equality.Semantic.DeepEqual(applied(before), applied(after)):
		return ref + " configured", nil
	default:
		return ref + " unchanged", nil
	}
}

// applied is obj without what changes on its own (status, written by
// controllers at any time) or on every write (resourceVersion,
// managedFields timestamps): what is left changes only if the apply did.
func applied(obj *unstructured.Unstructured) map[string]any {
	c := obj.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return c.Object
}

// kubectlOutput is an error line exactly as kubectl prints it (its
// sentences end with a full stop, which Go error strings should not).
type kubectlOutput string

func (o kubectlOutput) Error() string { return string(o) }

// fromServer formats an API error as kubectl prints it.
func fromServer(err error, verb, ref string) error {
	e := kubeErr(err)
	return fmt.Errorf(`Error from server (%s): error when %s %q: %s`, e.code, verb, ref, e.message)
}
