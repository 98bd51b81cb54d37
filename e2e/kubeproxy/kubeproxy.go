// Package kubeproxy is the reverse proxy the e2e simulators (okdsim,
// ranchersim) put in front of a real kube-apiserver: it forwards requests
// with the cluster's credentials from a rest.Config, dropping the
// client's own Authorization header, and streams watches.
package kubeproxy

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	"k8s.io/client-go/rest"
)

// Proxy forwards to the API server of a rest.Config as the config's user.
type Proxy struct {
	*httputil.ReverseProxy
	// Host is the API server's base URL.
	Host *url.URL
	// Transport carries the config's TLS settings and credentials, for
	// the simulator's own requests to the API server.
	Transport http.RoundTripper
}

// New builds a Proxy to cfg's API server. TransportFor adds the config's
// TLS settings and credentials, so the proxy speaks to the API server as
// the simulator (the test cluster does not know the simulator's tokens).
// onError answers a request the API server could not be reached for, in
// the simulated service's error format.
func New(cfg *rest.Config, onError func(w http.ResponseWriter, err error)) (*Proxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("kube host %q: %w", cfg.Host, err)
	}
	if target.Scheme == "" { // rest.Config allows a bare host:port
		target, _ = url.Parse("https://" + cfg.Host)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube transport: %w", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The simulator's token (OKD token, Rancher key) must not
			// reach the API server; the transport sets the cluster's own
			// credentials only when none are set.
			pr.Out.Header.Del("Authorization")
		},
		Transport:     tr,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			onError(w, err)
		},
	}
	return &Proxy{ReverseProxy: rp, Host: target, Transport: tr}, nil
}
