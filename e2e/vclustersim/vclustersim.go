// Package vclustersim stands in for the two programs that run next to a
// virtual cluster in production and that the end-to-end tests, the
// benchmark and `make run` cannot run: vCluster itself, which writes the
// virtual cluster's kubeconfig into a Secret of its host namespace (the
// contract of the vcluster offering's external driver), and Rancher's
// cluster agent, which connects back to Rancher once sitebus has applied
// the registration manifest into the virtual cluster. A second real
// kube-apiserver plays the virtual cluster.
package vclustersim

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// poll is how often the stand-ins look: short, so a create waits on them
// no longer than on a real vCluster or agent.
const poll = 50 * time.Millisecond

// BringKubeconfig is vCluster writing its kubeconfig: once the host
// namespace ns exists (sitebus made it), the Secret vcluster.SecretName(ns)
// appears in it holding kubeconfig under the offering's default key. It
// returns when the Secret is there or ctx ends.
func BringKubeconfig(ctx context.Context, host kubernetes.Interface, ns string, kubeconfig []byte) {
	BringKubeconfigWhen(ctx, host, kubeconfig, func(context.Context) (string, string, bool) {
		return ns, vcluster.SecretName(ns), true
	})
}

// BringKubeconfigWhen is vCluster writing its kubeconfig once what starts
// it is there (the chart's StatefulSet, a platform's instance): started
// reports the Secret's namespace and name, or false while nothing has
// started it yet. It returns when the Secret is there or ctx ends.
func BringKubeconfigWhen(ctx context.Context, host kubernetes.Interface, kubeconfig []byte, started func(context.Context) (ns, name string, ok bool)) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if ns, name, ok := started(ctx); ok {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Data: map[string][]byte{vcluster.DefaultSecretKey: kubeconfig}}
			_, err := host.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RunAgent is Rancher's agent connecting back: every imported cluster of
// rs whose name match accepts is marked connected once the agent's
// Deployment cattle-cluster-agent and its cattle-credentials-* Secret
// exist in the virtual cluster virt (what sitebus applied from the
// registration manifest). It runs until ctx ends.
func RunAgent(ctx context.Context, rs *ranchersim.Server, virt kubernetes.Interface, match func(clusterName string) bool) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, pc := range rs.Inventory().ProvisioningClusters {
			if pc.ClusterID == "" || !match(pc.Name) {
				continue
			}
			if agentApplied(ctx, virt) {
				_ = rs.ConnectAgent(pc.ClusterID)
			}
		}
	}
}

// agentApplied reports whether the agent's Deployment and credentials
// Secret are in the virtual cluster.
func agentApplied(ctx context.Context, virt kubernetes.Interface) bool {
	if _, err := virt.AppsV1().Deployments(vcluster.AgentNamespace).Get(ctx, "cattle-cluster-agent", metav1.GetOptions{}); err != nil {
		return false
	}
	secrets, err := virt.CoreV1().Secrets(vcluster.AgentNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "cattle-credentials-") {
			return true
		}
	}
	return false
}
