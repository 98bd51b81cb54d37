// Package simkube is a simulator's way into the real Kubernetes API server
// behind it (okdsim, ranchersim): a dynamic client and a proxy, both as the
// simulator's own user (the test cluster does not know the simulated
// service's users).
package simkube

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/kubeproxy"
)

// Client is the dynamic client and the proxy to one API server.
type Client struct {
	Dyn   dynamic.Interface
	Proxy *kubeproxy.Proxy
}

// New connects to cfg's API server; onError answers a request the proxy
// could not forward, in the simulated service's error format.
func New(cfg *rest.Config, onError func(w http.ResponseWriter, err error)) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	proxy, err := kubeproxy.New(cfg, onError)
	if err != nil {
		return nil, err
	}
	return &Client{Dyn: dyn, Proxy: proxy}, nil
}

// Namespaces are the cluster's namespaces.
func (c *Client) Namespaces() dynamic.ResourceInterface {
	return c.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
}
