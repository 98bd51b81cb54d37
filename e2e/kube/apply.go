package kube

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube/manifest"
)

// FieldManager is the server-side-apply manager name ApplyYAML uses.
const FieldManager = "sitebus-e2e"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyFile applies the (multi-document) YAML manifest at path; see ApplyYAML.
func (c *Cluster) ApplyFile(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := c.ApplyYAML(ctx, data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ApplyYAML creates or updates every object in a multi-document YAML (or
// JSON) manifest, in order, with server-side apply (forcing conflicts, like
// `kubectl apply --server-side --force-conflicts`). Namespaced objects
// without a namespace go to "default". After a CustomResourceDefinition it
// waits until the CRD is Established, so later documents (and the caller)
// can use the new kind at once.
func (c *Cluster) ApplyYAML(ctx context.Context, data []byte) error {
	objs, err := manifest.Decode(data)
	if err != nil {
		return err
	}
	for i, obj := range objs {
		if err := c.apply(ctx, obj); err != nil {
			return fmt.Errorf("object %d (%s %q): %w", i+1, obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

func (c *Cluster) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := c.restMapping(ctx, gvk)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		ri = c.dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return err
	}
	if mapping.Resource == crdGVR {
		if err := c.waitEstablished(ctx, obj.GetName()); err != nil {
			return err
		}
		// The cached discovery does not know the new kind yet.
		c.mapper.Reset()
	}
	return nil
}

// restMapping resolves gvk, refreshing discovery while the kind is unknown:
// a CRD can be Established a moment before discovery serves it.
func (c *Cluster) restMapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	var mapping *meta.RESTMapping
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			mapping = m
			return true, nil
		case meta.IsNoMatchError(err):
			lastErr = err
			c.mapper.Reset()
			return false, nil
		default:
			return false, err
		}
	})
	if err != nil && lastErr != nil {
		return nil, fmt.Errorf("resolve %s: %w", gvk, lastErr)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	return mapping, nil
}

// waitEstablished waits until the CRD's Established condition is True.
func (c *Cluster) waitEstablished(ctx context.Context, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := c.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
			if m["type"] == "NamesAccepted" && m["status"] == "False" {
				return false, fmt.Errorf("CRD %s names not accepted: %v", name, m["message"])
			}
		}
		last = fmt.Sprintf("conditions %v", conds)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established (%s): %w", name, last, err)
	}
	return nil
}
