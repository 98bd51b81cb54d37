package vcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// FieldManager owns what sitebus applies into a virtual cluster.
const FieldManager = "sitebus"

// Rancher's agent objects that live outside namespace cattle-system
// (rancher/rancher pkg/systemtemplate/template.go): removing the agent
// deletes these and the namespace.
var agentClusterObjects = []struct {
	gvr  schema.GroupVersionResource
	name string
}{
	{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, "cattle-admin-binding"},
	{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, "proxy-role-binding-kubernetes-master"},
	{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "cattle-admin"},
	{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "proxy-clusterrole-kubeapiserver"},
}

// AgentNamespace is where Rancher's cluster agent runs.
const AgentNamespace = "cattle-system"

// Version asks the virtual cluster's API server for its version: it
// answers once the virtual cluster is up and the kubeconfig works.
func Version(ctx context.Context, cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	raw, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("virtual cluster /version: %w", err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("virtual cluster /version: %w", err)
	}
	return v.GitVersion, nil
}

// FetchManifest reads Rancher's import manifest. Its URL carries the
// registration token, so neither the URL nor the body appear in errors.
func FetchManifest(ctx context.Context, client *http.Client, manifestURL string, insecure bool) ([]byte, error) {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
		if insecure {
			client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // verify_cert: false
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, manifestURL, nil)
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "the registration token's manifestUrl is not a URL")
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // *url.Error quotes the URL
		}
		return nil, fmt.Errorf("fetch Rancher's import manifest: %w", err)
	}
	defer resp.Body.Close()
	// A manifest cut at the limit would be applied in part: past it the
	// fetch fails whole (httpbody.ReadAll) instead.
	body, err := httpbody.ReadAll(resp.Body, 8<<20)
	if err != nil {
		return nil, fmt.Errorf("read Rancher's import manifest: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch Rancher's import manifest: HTTP %d", resp.StatusCode)
	}
	return body, nil
}

// ApplyManifest server-side applies every object of a multi-document
// YAML manifest into the cluster of cfg, with field manager sitebus and
// force (sitebus owns what it applies; a repeat is a no-op). It returns
// how many objects it applied.
func ApplyManifest(ctx context.Context, cfg *rest.Config, manifest []byte) (int, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	n := 0
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fault.Errorf(fault.Invalid, "Rancher's import manifest is not YAML: %v", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			mapper.Reset()
			if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return n, fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			// The API server's message may quote a Secret's data; name the
			// object only.
			return n, &kubeapi.Error{Kind: kubeapi.Kind(err), Err: err,
				Msg: fmt.Sprintf("apply %s %s/%s into the virtual cluster: %s", gvk.Kind, obj.GetNamespace(), obj.GetName(), apierrors.ReasonForError(err))}
		}
		n++
	}
}

// RemoveAgent deletes Rancher's agent from the virtual cluster: its
// cluster-wide RBAC objects and namespace cattle-system. Absent objects
// are done.
func RemoveAgent(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, o := range agentClusterObjects {
		if err := dyn.Resource(o.gvr).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return apiErr("delete "+o.gvr.Resource+" "+o.name+" in the virtual cluster", err)
		}
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if err := dyn.Resource(nsGVR).Delete(ctx, AgentNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete namespace "+AgentNamespace+" in the virtual cluster", err)
	}
	return nil
}
