package okdsim

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var (
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// kubeClient is the simulator's way into the API server behind it.
type kubeClient struct {
	dyn   dynamic.Interface
	hc    *http.Client // with the cluster's credentials, for discovery
	host  *url.URL
	proxy *httputil.ReverseProxy
}

func newKubeClient(cfg *rest.Config) (*kubeClient, error) {
	cfg = rest.CopyConfig(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("kube host %q: %w", cfg.Host, err)
	}
	if target.Scheme == "" { // rest.Config allows a bare host:port
		target, _ = url.Parse("https://" + cfg.Host)
	}
	// TransportFor adds the config's TLS settings and credentials: the
	// proxy speaks to the API server as the simulator, since the test
	// cluster does not know the simulator's tokens.
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube transport: %w", err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The simulator's token must not reach the API server; the
			// transport sets the cluster's own only when none is set.
			pr.Out.Header.Del("Authorization")
		},
		Transport:     tr,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeErr(w, apierrors.NewServiceUnavailable("API server not available: "+err.Error()))
		},
	}
	return &kubeClient{dyn: dyn, hc: &http.Client{Transport: tr}, host: target, proxy: proxy}, nil
}

func (k *kubeClient) namespaces() dynamic.ResourceInterface { return k.dyn.Resource(namespaceGVR) }
