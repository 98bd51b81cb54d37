package okdsim

import (
	"cmp"
	"context"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Project is a project as tests see (and seed) it: its namespace's
// metadata.
type Project struct {
	Name        string
	DisplayName string
	Description string
	Requester   string
	Annotations map[string]string
	Labels      map[string]string
	Phase       string // Active, Terminating
}

func projectOf(ns *unstructured.Unstructured) Project {
	a := ns.GetAnnotations()
	phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
	return Project{Name: ns.GetName(), DisplayName: a[DisplayNameAnnotation], Description: a[DescriptionAnnotation],
		Requester: a[RequesterAnnotation], Annotations: a, Labels: ns.GetLabels(), Phase: phase}
}

// Project returns one project; found is false when its namespace does not
// exist.
func (s *Server) Project(ctx context.Context, name string) (p Project, found bool, err error) {
	ns, err := s.kube.namespaces().Get(ctx, name, metav1.GetOptions{})
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
	a := map[string]string{}
	maps.Copy(a, p.Annotations)
	p.Requester = cmp.Or(p.Requester, "someone-else")
	a[DisplayNameAnnotation], a[DescriptionAnnotation], a[RequesterAnnotation] = p.DisplayName, p.Description, p.Requester
	_, err := s.kube.namespaces().Create(ctx, newNamespace(p.Name, a, p.Labels), metav1.CreateOptions{})
	return err
}
