package vcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
	"github.com/sitebus/sitebus/pkg/fault"
)

// ErrNoKubeconfig is the kubeconfig Secret's absence: the driver has not
// brought it yet (retry later).
var ErrNoKubeconfig = errors.New("the virtual cluster's kubeconfig Secret is not there yet")

// VirtualConfig reads the kubeconfig Secret vc-<slug> of the host
// namespace ns and returns how to reach the virtual cluster's API, with
// the server replaced by vcluster_server when that is set. The
// kubeconfig is a credential: it is kept in memory only, and neither it
// nor the Secret's data appear in errors or logs.
func (b *Backend) VirtualConfig(ctx context.Context, ns string) (*rest.Config, error) {
	name := SecretName(ns)
	sec, err := b.host.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w (%s/%s)", ErrNoKubeconfig, ns, name)
	}
	if err != nil {
		return nil, apiErr("get secret "+ns+"/"+name, err)
	}
	raw := sec.Data[b.settings.SecretKey]
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w (%s/%s has no key %s)", ErrNoKubeconfig, ns, name, b.settings.SecretKey)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		// clientcmd's message may quote the file; give none of it.
		return nil, fault.Errorf(fault.Invalid, "secret %s/%s key %s is not a kubeconfig", ns, name, b.settings.SecretKey)
	}
	if b.settings.Server != "" {
		// The virtual cluster's certificate names the server its own
		// kubeconfig gives (vCluster's is https://localhost:8443), not the
		// service, ingress host or node port sitebus reaches it at; so TLS
		// verifies against the kubeconfig's name, as a client reaching a
		// server through a proxy does with tls.Config.ServerName.
		if cfg.ServerName == "" && !cfg.Insecure {
			if u, err := url.Parse(cfg.Host); err == nil && u.Hostname() != "" {
				cfg.ServerName = u.Hostname()
			}
		}
		cfg.Host = b.settings.Server
	}
	kubeapi.SetDefaults(cfg)
	kubeapi.GuardAnswers(cfg, "the virtual cluster")
	return cfg, nil
}
