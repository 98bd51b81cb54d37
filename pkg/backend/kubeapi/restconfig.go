package kubeapi

import (
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// DefaultTimeout bounds one API request when the rest.Config sets none,
// so a hung connection cannot stall an order forever.
const DefaultTimeout = 30 * time.Second

// SetDefaults fills in what cfg leaves unset: the user agent, the request
// timeout and the client-side rate limit.
func SetDefaults(cfg *rest.Config) {
	if cfg.UserAgent == "" {
		cfg.UserAgent = "sitebus"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	// client-go's default limiter (5 QPS, burst 10) turns a burst of orders
	// into a 200 ms wait per call, and 50 QPS made 200 orders at once take
	// 2 s; the API server's priority and fairness is the right place to
	// protect the cluster, so the client only guards against a runaway loop.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 1000, 2000
	}
}

// Clients returns the dynamic and discovery clients of cfg; errors start
// with backendType.
func Clients(backendType string, cfg *rest.Config) (dynamic.Interface, discovery.DiscoveryInterface, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: dynamic client: %w", backendType, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: discovery client: %w", backendType, err)
	}
	return dyn, disco, nil
}
