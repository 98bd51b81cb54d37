// Package manifest decodes Kubernetes YAML (or JSON) manifests into
// unstructured objects. It is kept apart from package kube so the Rancher
// simulator's importYaml can parse manifests without pulling in the
// cluster harness.
package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Decode splits a multi-document manifest into objects, skipping empty
// documents and expanding `kind: List`.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read document %d: %w", n, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if js = bytes.TrimSpace(js); len(js) == 0 || string(js) == "null" {
			continue
		}
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode(js, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			objs = append(objs, o)
		case *unstructured.UnstructuredList:
			for i := range o.Items {
				objs = append(objs, &o.Items[i])
			}
		default:
			return nil, fmt.Errorf("document %d: unexpected %T", n, obj)
		}
	}
}
