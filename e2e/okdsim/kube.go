package okdsim

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/kubeproxy"
)

var (
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// kubeClient is the simulator's way into the API server behind it.
type kubeClient struct {
	dyn   dynamic.Interface
	proxy *kubeproxy.Proxy
}

func newKubeClient(cfg *rest.Config) (*kubeClient, error) {
	cfg = rest.CopyConfig(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	proxy, err := kubeproxy.New(cfg, func(w http.ResponseWriter, err error) {
		writeErr(w, apierrors.NewServiceUnavailable("API server not available: "+err.Error()))
	})
	if err != nil {
		return nil, err
	}
	return &kubeClient{dyn: dyn, proxy: proxy}, nil
}

func (k *kubeClient) namespaces() dynamic.ResourceInterface { return k.dyn.Resource(namespaceGVR) }
