package okdsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// The annotations OpenShift's default project template sets.
const (
	DisplayNameAnnotation = "openshift.io/display-name"
	DescriptionAnnotation = "openshift.io/description"
	RequesterAnnotation   = "openshift.io/requester"
)

// AdminBindingName is the RoleBinding the default project template creates
// for the requester, to ClusterRole admin.
const AdminBindingName = "admin"

var (
	// OpenShift refuses these project names and prefixes (403).
	forbiddenNames    = []string{"openshift", "kubernetes", "kube"}
	forbiddenPrefixes = []string{"openshift-", "kubernetes-", "kube-"}

	projectRequestGK = schema.GroupKind{Group: Group, Kind: "ProjectRequest"}
	projectGK        = schema.GroupKind{Group: Group, Kind: "Project"}
)

// projectRequest is project.openshift.io/v1 ProjectRequest.
type projectRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	DisplayName       string `json:"displayName,omitempty"`
	Description       string `json:"description,omitempty"`
}

// toProject maps a namespace onto a Project, as OpenShift's project
// storage does: the namespace's metadata, spec and status under another
// kind.
func toProject(ns *unstructured.Unstructured) map[string]any {
	obj := ns.DeepCopy().Object
	obj["kind"] = "Project"
	obj["apiVersion"] = APIVersion
	unstructured.RemoveNestedField(obj, "metadata", "managedFields")
	return obj
}

// nsErr renames a namespace error to the project OpenShift would name.
func nsErr(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(projectsGR, name)
	}
	return err
}

func validateProjectName(name string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	if name == "" {
		return field.ErrorList{field.Required(p, "name or generateName is required")}
	}
	var errs field.ErrorList
	if len(name) < 2 {
		errs = append(errs, field.Invalid(p, name, "must be at least 2 characters long"))
	}
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func (s *Server) createProjectRequest(w http.ResponseWriter, r *http.Request) {
	var pr projectRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&pr); err != nil {
		writeErr(w, apierrors.NewBadRequest("the body of the request was in an unknown format: "+err.Error()))
		return
	}
	name := pr.Name
	errs := validateProjectName(name)
	if strings.ContainsAny(pr.DisplayName, "\n\t") {
		errs = append(errs, field.Invalid(field.NewPath("displayName"), pr.DisplayName, "may not contain a new line or tab"))
	}
	if len(errs) > 0 {
		writeErr(w, apierrors.NewInvalid(projectRequestGK, name, errs))
		return
	}
	for _, f := range forbiddenNames {
		if name == f {
			writeErr(w, apierrors.NewForbidden(projectRequestGR, name, fmt.Errorf("cannot request a project with the name %q", f)))
			return
		}
	}
	for _, f := range forbiddenPrefixes {
		if strings.HasPrefix(name, f) {
			writeErr(w, apierrors.NewForbidden(projectRequestGR, name, fmt.Errorf("cannot request a project starting with %q", f)))
			return
		}
	}
	ctx := r.Context()
	user := userFrom(ctx)
	// The request's own metadata.annotations and labels are dropped, as
	// the template OpenShift processes takes only these parameters.
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(name)
	ns.SetAnnotations(map[string]string{
		DisplayNameAnnotation: pr.DisplayName, DescriptionAnnotation: pr.Description, RequesterAnnotation: user,
	})
	created, err := s.kube.namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		writeErr(w, apierrors.NewAlreadyExists(projectRequestGR, name))
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if !s.opts.NoAdminBinding {
		if err := s.createAdminBinding(r, name, user); err != nil {
			// OpenShift deletes the project when a template object fails.
			_ = s.kube.namespaces().Delete(ctx, name, metav1.DeleteOptions{})
			writeErr(w, apierrors.NewInternalError(err))
			return
		}
	}
	s.log.Info("project requested", "name", name, "user", user)
	simkit.WriteJSON(w, http.StatusCreated, toProject(created))
}

func (s *Server) createAdminBinding(r *http.Request, ns, user string) error {
	rb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": AdminBindingName, "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	_, err := s.kube.dyn.Resource(roleBindingGVR).Namespace(ns).Create(r.Context(), rb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create role binding %s/%s: %w", ns, AdminBindingName, err)
	}
	return nil
}

// listProjectRequests is OpenShift's "may I request projects?" probe: a
// Success Status when allowed.
func (s *Server) listProjectRequests(w http.ResponseWriter, _ *http.Request) {
	simkit.WriteJSON(w, http.StatusOK, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
}

// visible says whether GET projects lists ns (see the package doc).
func (s *Server) visible(ns *unstructured.Unstructured) bool {
	if s.opts.ListAllNamespaces {
		return true
	}
	_, ok := ns.GetAnnotations()[RequesterAnnotation]
	return ok
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	list, err := s.kube.namespaces().List(r.Context(), metav1.ListOptions{
		LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"),
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	items := []any{}
	for i := range list.Items {
		if s.visible(&list.Items[i]) {
			items = append(items, toProject(&list.Items[i]))
		}
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"kind": "ProjectList", "apiVersion": APIVersion,
		"metadata": map[string]any{"resourceVersion": list.GetResourceVersion()},
		"items":    items,
	})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ns, err := s.kube.namespaces().Get(r.Context(), name, metav1.GetOptions{})
	if err != nil {
		writeErr(w, nsErr(err, name))
		return
	}
	simkit.WriteJSON(w, http.StatusOK, toProject(ns))
}

// deleteProject passes the body's DeleteOptions (preconditions,
// propagation) on to the namespace delete, as OpenShift's project storage
// does: a UID or resourceVersion precondition that no longer holds is a
// 409, not a deleted project.
func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var opts metav1.DeleteOptions
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		err = json.Unmarshal(b, &opts)
	}
	if err != nil {
		writeErr(w, apierrors.NewBadRequest("the body of the request was in an unknown format: "+err.Error()))
		return
	}
	if err := s.kube.namespaces().Delete(r.Context(), name, opts); err != nil {
		writeErr(w, projectConflict(err, name))
		return
	}
	s.log.Info("project deleted", "name", name)
	simkit.WriteJSON(w, http.StatusOK, successStatus())
}

// updateProject (PUT) takes labels and annotations from the body, the only
// fields OpenShift lets a project update change; a resourceVersion in the
// body is a precondition, as usual.
func (s *Server) updateProject(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var in unstructured.Unstructured
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = in.UnmarshalJSON(b)
	}
	if err != nil {
		writeErr(w, apierrors.NewBadRequest("the body of the request was in an unknown format: "+err.Error()))
		return
	}
	if in.GetName() != name {
		writeErr(w, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", in.GetName(), name)))
		return
	}
	ctx := r.Context()
	ns, err := s.kube.namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		writeErr(w, nsErr(err, name))
		return
	}
	ns.SetLabels(in.GetLabels())
	ns.SetAnnotations(in.GetAnnotations())
	if rv := in.GetResourceVersion(); rv != "" {
		ns.SetResourceVersion(rv)
	}
	updated, err := s.kube.namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		writeErr(w, projectConflict(err, name))
		return
	}
	simkit.WriteJSON(w, http.StatusOK, toProject(updated))
}

// projectConflict renames a namespace conflict to the project.
func projectConflict(err error, name string) error {
	if apierrors.IsConflict(err) {
		return apierrors.NewConflict(projectsGR, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return nsErr(err, name)
}

// patchProject applies the metadata labels and annotations of a merge,
// strategic merge or JSON patch to the namespace; a JSON patch touching
// anything else is Invalid.
func (s *Server) patchProject(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeErr(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	var patch []byte
	switch pt := types.PatchType(ct); pt {
	case types.MergePatchType, types.StrategicMergePatchType:
		var in struct {
			Metadata struct {
				Labels          map[string]*string `json:"labels,omitempty"`
				Annotations     map[string]*string `json:"annotations,omitempty"`
				ResourceVersion string             `json:"resourceVersion,omitempty"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b, &in); err != nil {
			writeErr(w, apierrors.NewBadRequest("the body of the request was in an unknown format: "+err.Error()))
			return
		}
		patch, _ = json.Marshal(map[string]any{"metadata": in.Metadata})
	case types.JSONPatchType:
		var ops []struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(b, &ops); err != nil {
			writeErr(w, apierrors.NewBadRequest("the body of the request was in an unknown format: "+err.Error()))
			return
		}
		for _, op := range ops {
			if !strings.HasPrefix(op.Path, "/metadata/labels") && !strings.HasPrefix(op.Path, "/metadata/annotations") {
				writeErr(w, apierrors.NewInvalid(projectGK, name, field.ErrorList{
					field.Forbidden(field.NewPath(strings.TrimPrefix(op.Path, "/")), "field is immutable; only labels and annotations may change"),
				}))
				return
			}
		}
		patch = b
	default:
		writeErr(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", projectsGR, name,
			"the server does not support the patch type "+ct, 0, false))
		return
	}
	updated, err := s.kube.namespaces().Patch(r.Context(), name, types.PatchType(ct), patch, metav1.PatchOptions{})
	if err != nil {
		writeErr(w, projectConflict(err, name))
		return
	}
	simkit.WriteJSON(w, http.StatusOK, toProject(updated))
}
