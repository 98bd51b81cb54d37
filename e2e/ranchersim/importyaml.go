package ranchersim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube/manifest"
)

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
func (s *Server) importYAML(r *http.Request) (int, any, *apiError) {
	if s.kube == nil {
		return fail(errNoKube)
	}
	var in importBody
	if err := decodeBody(r, &in); err != nil {
		return fail(err)
	}
	imp := Import{Time: s.now(), ClusterID: s.opts.ClusterID, importBody: in}
	lines, failed := s.kube.applyManifest(r.Context(), in)
	imp.Message = strings.Join(lines, "\n")
	if imp.Message != "" {
		imp.Message += "\n"
	}
	imp.Status = http.StatusOK
	if failed {
		imp.Status = http.StatusBadRequest
	}
	s.mu.Lock()
	s.imports = append(s.imports, imp)
	s.mu.Unlock()
	return imp.Status, map[string]any{"type": "importYamlOutput", "message": imp.Message}, nil
}

// applyManifest applies every object and returns kubectl-style output lines
// and whether anything failed.
func (k *kubeClient) applyManifest(ctx context.Context, in importBody) ([]string, bool) {
	objs, err := manifest.Decode([]byte(in.YAML))
	if err != nil {
		return []string{"error: error parsing STDIN: " + err.Error()}, true
	}
	if len(objs) == 0 {
		return []string{"error: no objects passed to apply"}, true
	}
	var lines []string
	failed := false
	for _, obj := range objs {
		line, err := k.applyOne(ctx, obj, in)
		if err != nil {
			failed = true
			line = err.Error()
		}
		lines = append(lines, line)
	}
	return lines, failed
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
	var ri dynamic.ResourceInterface = k.dyn.Resource(mapping.Resource)
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
		ri = k.dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	} else if gvk.Kind == "Namespace" && gvk.Group == "" && in.ProjectID != "" {
		// Rancher puts namespaces the manifest creates into the project.
		ann, labels := cloneMap(obj.GetAnnotations()), cloneMap(obj.GetLabels())
		ann[ProjectIDAnnotation] = in.ProjectID
		labels[ProjectIDLabel] = projectShortID(in.ProjectID)
		obj.SetAnnotations(ann)
		obj.SetLabels(labels)
	}
	ref := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		ref += "." + gvk.Group
	}
	ref += "/" + obj.GetName()

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
