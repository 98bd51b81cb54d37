package okdsim

import (
	"bytes"
	"context"
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
	// OpenShift refuses these project names, and names starting with
	// them and a dash (403).
	reservedNames = []string{"openshift", "kubernetes", "kube"}

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

// newNamespace is a namespace to create, with annotations and labels.
func newNamespace(name string, annotations, labels map[string]string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(name)
	ns.SetAnnotations(annotations)
	ns.SetLabels(labels)
	return ns
}

// nsErr renames a namespace error to the project OpenShift would name; a
// conflict gets OpenShift's message.
func nsErr(err error, name string) error {
	switch {
	case apierrors.IsNotFound(err):
		return apierrors.NewNotFound(projectsGR, name)
	case apierrors.IsConflict(err):
		return apierrors.NewConflict(projectsGR, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return err
}

// readBody decodes the request body into v (a json.Unmarshaler decodes
// itself); an empty one leaves v be when optional.
func readBody(r *http.Request, v any, optional bool) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	switch u, ok := v.(json.Unmarshaler); {
	case err != nil || optional && len(bytes.TrimSpace(b)) == 0:
	case ok:
		err = u.UnmarshalJSON(b)
	default:
		err = json.NewDecoder(bytes.NewReader(b)).Decode(v)
	}
	return badBody(err)
}

// badBody is the API server's 400 for a body it cannot decode (nil for
// no error).
func badBody(err error) error {
	if err == nil {
		return nil
	}
	return apierrors.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
}

func validateProjectRequest(pr projectRequest) error {
	p := field.NewPath("metadata", "name")
	var errs field.ErrorList
	switch {
	case pr.Name == "":
		errs = append(errs, field.Required(p, "name or generateName is required"))
	case len(pr.Name) < 2:
		errs = append(errs, field.Invalid(p, pr.Name, "must be at least 2 characters long"))
		fallthrough
	default:
		for _, msg := range validation.IsDNS1123Label(pr.Name) {
			errs = append(errs, field.Invalid(p, pr.Name, msg))
		}
	}
	if strings.ContainsAny(pr.DisplayName, "\n\t") {
		errs = append(errs, field.Invalid(field.NewPath("displayName"), pr.DisplayName, "may not contain a new line or tab"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(projectRequestGK, pr.Name, errs)
	}
	for _, f := range reservedNames {
		if pr.Name == f {
			return apierrors.NewForbidden(projectRequestGR, pr.Name, fmt.Errorf("cannot request a project with the name %q", f))
		}
		if strings.HasPrefix(pr.Name, f+"-") {
			return apierrors.NewForbidden(projectRequestGR, pr.Name, fmt.Errorf("cannot request a project starting with %q", f+"-"))
		}
	}
	return nil
}

func (s *Server) createProjectRequest(r *http.Request) (any, error) {
	var pr projectRequest
	if err := readBody(r, &pr, false); err != nil {
		return nil, err
	}
	if err := validateProjectRequest(pr); err != nil {
		return nil, err
	}
	ctx := r.Context()
	name := pr.Name
	user := userFrom(ctx)
	// The request's own metadata.annotations and labels are dropped, as
	// the template OpenShift processes takes only these parameters.
	created, err := s.kube.namespaces().Create(ctx, newNamespace(name, map[string]string{
		DisplayNameAnnotation: pr.DisplayName, DescriptionAnnotation: pr.Description, RequesterAnnotation: user,
	}, nil), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, apierrors.NewAlreadyExists(projectRequestGR, name)
	}
	if err != nil {
		return nil, err
	}
	if !s.opts.NoAdminBinding {
		if err := s.createAdminBinding(ctx, name, user); err != nil {
			// OpenShift deletes the project when a template object fails.
			_ = s.kube.namespaces().Delete(ctx, name, metav1.DeleteOptions{})
			return nil, apierrors.NewInternalError(err)
		}
	}
	s.log.Info("project requested", "name", name, "user", user)
	return toProject(created), nil
}

func (s *Server) createAdminBinding(ctx context.Context, ns, user string) error {
	rb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": AdminBindingName, "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	_, err := s.kube.dyn.Resource(roleBindingGVR).Namespace(ns).Create(ctx, rb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create role binding %s/%s: %w", ns, AdminBindingName, err)
	}
	return nil
}

// projects lists the namespaces GET projects shows: every one with
// Options.ListAllNamespaces, else those carrying openshift.io/requester
// (see the package doc).
func (s *Server) projects(ctx context.Context, opts metav1.ListOptions) ([]*unstructured.Unstructured, string, error) {
	list, err := s.kube.namespaces().List(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		if _, ok := list.Items[i].GetAnnotations()[RequesterAnnotation]; ok || s.opts.ListAllNamespaces {
			out = append(out, &list.Items[i])
		}
	}
	return out, list.GetResourceVersion(), nil
}

func (s *Server) listProjects(r *http.Request) (any, error) {
	q := r.URL.Query()
	list, rv, err := s.projects(r.Context(), metav1.ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")})
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"kind": "ProjectList", "apiVersion": APIVersion,
		"metadata": map[string]any{"resourceVersion": rv},
		"items":    simkit.Map(list, toProject),
	}, nil
}

func (s *Server) getProject(r *http.Request) (any, error) {
	ns, err := s.kube.namespaces().Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		return nil, nsErr(err, r.PathValue("name"))
	}
	return toProject(ns), nil
}

// deleteProject passes the body's DeleteOptions (preconditions,
// propagation) on to the namespace delete, as OpenShift's project storage
// does: a UID or resourceVersion precondition that no longer holds is a
// 409, not a deleted project.
func (s *Server) deleteProject(r *http.Request) (any, error) {
	name := r.PathValue("name")
	var opts metav1.DeleteOptions
	if err := readBody(r, &opts, true); err != nil {
		return nil, err
	}
	if err := s.kube.namespaces().Delete(r.Context(), name, opts); err != nil {
		return nil, nsErr(err, name)
	}
	s.log.Info("project deleted", "name", name)
	return successStatus(), nil
}

// updateProject (PUT) takes labels and annotations from the body, the only
// fields OpenShift lets a project update change; a resourceVersion in the
// body is a precondition, as usual.
func (s *Server) updateProject(r *http.Request) (any, error) {
	name := r.PathValue("name")
	var in unstructured.Unstructured
	if err := readBody(r, &in, false); err != nil {
		return nil, err
	}
	if in.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", in.GetName(), name))
	}
	ns, err := s.kube.namespaces().Get(r.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil, nsErr(err, name)
	}
	ns.SetLabels(in.GetLabels())
	ns.SetAnnotations(in.GetAnnotations())
	if rv := in.GetResourceVersion(); rv != "" {
		ns.SetResourceVersion(rv)
	}
	updated, err := s.kube.namespaces().Update(r.Context(), ns, metav1.UpdateOptions{})
	if err != nil {
		return nil, nsErr(err, name)
	}
	return toProject(updated), nil
}

// patchProject applies the metadata labels and annotations of a merge,
// strategic merge or JSON patch to the namespace; a JSON patch touching
// anything else is Invalid.
func (s *Server) patchProject(r *http.Request) (any, error) {
	name := r.PathValue("name")
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var patch json.RawMessage // taken as it is
	if err := readBody(r, &patch, false); err != nil {
		return nil, err
	}
	switch types.PatchType(ct) {
	case types.MergePatchType, types.StrategicMergePatchType:
		var in struct {
			Metadata struct {
				Labels          map[string]*string `json:"labels,omitempty"`
				Annotations     map[string]*string `json:"annotations,omitempty"`
				ResourceVersion string             `json:"resourceVersion,omitempty"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(patch, &in); err != nil {
			return nil, badBody(err)
		}
		patch, _ = json.Marshal(map[string]any{"metadata": in.Metadata})
	case types.JSONPatchType:
		var ops []struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(patch, &ops); err != nil {
			return nil, badBody(err)
		}
		for _, op := range ops {
			if !strings.HasPrefix(op.Path, "/metadata/labels") && !strings.HasPrefix(op.Path, "/metadata/annotations") {
				return nil, apierrors.NewInvalid(projectGK, name, field.ErrorList{
					field.Forbidden(field.NewPath(strings.TrimPrefix(op.Path, "/")), "field is immutable; only labels and annotations may change"),
				})
			}
		}
	default:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", projectsGR, name,
			"the server does not support the patch type "+ct, 0, false)
	}
	updated, err := s.kube.namespaces().Patch(r.Context(), name, types.PatchType(ct), patch, metav1.PatchOptions{})
	if err != nil {
		return nil, nsErr(err, name)
	}
	return toProject(updated), nil
}
