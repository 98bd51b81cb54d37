package okdsim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// newNamespace is the namespace of project p: its annotations and labels,
// and the display name, description and requester annotations the
// default project template sets, from p's fields.
func newNamespace(p Project) *unstructured.Unstructured {
	a := map[string]string{}
	maps.Copy(a, p.Annotations)
	a[DisplayNameAnnotation], a[DescriptionAnnotation], a[RequesterAnnotation] = p.DisplayName, p.Description, p.Requester
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(p.Name)
	ns.SetAnnotations(a)
	ns.SetLabels(p.Labels)
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

// readBody decodes the request body into v, answering a body it cannot
// decode with the API server's 400; an empty one leaves v be when
// optional. Like the API server's decoder, it refuses data after the
// JSON value.
func readBody(r *http.Request, v any, optional bool) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && (!optional || len(bytes.TrimSpace(b)) > 0) {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return apierrors.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
	}
	return nil
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

func (s *Server) createProjectRequest(r *http.Request, _ struct{}) (any, error) {
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
	created, err := s.kube.Namespaces().Create(ctx, newNamespace(Project{Name: name,
		DisplayName: pr.DisplayName, Description: pr.Description, Requester: user}), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, apierrors.NewAlreadyExists(projectRequestGR, name)
	}
	if err != nil {
		return nil, err
	}
	if err := s.createAdminBinding(ctx, name, user); err != nil {
		// OpenShift deletes the project when a template object fails.
		_ = s.kube.Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		return nil, apierrors.NewInternalError(err)
	}
	s.log.Info("project requested", "name", name, "user", user)
	return simkit.Created(toProject(created)), nil
}

func (s *Server) createAdminBinding(ctx context.Context, ns, user string) error {
	rb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": AdminBindingName, "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	_, err := s.kube.Dyn.Resource(roleBindingGVR).Namespace(ns).Create(ctx, rb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create role binding %s/%s: %w", ns, AdminBindingName, err)
	}
	return nil
}

// deleteProject passes the body's DeleteOptions (preconditions,
// propagation) on to the namespace delete, as OpenShift's project storage
// does: a UID or resourceVersion precondition that no longer holds is a
// 409, not a deleted project.
func (s *Server) deleteProject(r *http.Request, _ struct{}) (any, error) {
	name := r.PathValue("name")
	var opts metav1.DeleteOptions
	if err := readBody(r, &opts, true); err != nil {
		return nil, err
	}
	if err := s.kube.Namespaces().Delete(r.Context(), name, opts); err != nil {
		return nil, nsErr(err, name)
	}
	s.log.Info("project deleted", "name", name)
	// OpenShift's answer to a project delete is a bare Status, no details.
	return metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}, nil
}

// Project is a project as tests see (and seed) it: its namespace's
// metadata.
type Project struct {
	Name        string
	DisplayName string
	Description string
	Requester   string
	Annotations map[string]string
	Labels      map[string]string
}

func projectOf(ns *unstructured.Unstructured) Project {
	a := ns.GetAnnotations()
	return Project{Name: ns.GetName(), DisplayName: a[DisplayNameAnnotation], Description: a[DescriptionAnnotation],
		Requester: a[RequesterAnnotation], Annotations: a, Labels: ns.GetLabels()}
}

// Project returns one project; found is false when its namespace does not
// exist.
func (s *Server) Project(ctx context.Context, name string) (p Project, found bool, err error) {
	ns, err := s.kube.Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Project{}, false, nil
	}
	if err != nil {
		return Project{}, false, err
	}
	return projectOf(ns), true, nil
}

// SeedProject creates a project behind the client's back, as another user
// of the cluster would: a namespace with p's annotations and labels, the
// display name, description and requester (default "someone-else") set
// from p's fields.
func (s *Server) SeedProject(ctx context.Context, p Project) error {
	p.Requester = cmp.Or(p.Requester, "someone-else")
	_, err := s.kube.Namespaces().Create(ctx, newNamespace(p), metav1.CreateOptions{})
	return err
}
