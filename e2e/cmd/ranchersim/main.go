// Command ranchersim serves the Rancher v3 simulator (see package
// ranchersim) for local runs, in front of a real kube-apiserver.
//
//	ranchersim -listen 127.0.0.1:8443 -kubeconfig /tmp/sitebus-kube-…/kubeconfig \
//	  -access-key token-sim01 -secret-key sim-secret-key -cluster-id c-m-sim00001
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/simkit"
)

func main() {
	simkit.Main("ranchersim", "127.0.0.1:8443", func(fs *flag.FlagSet) simkit.Build {
		var opts ranchersim.Options
		kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"),
			"kubeconfig of the cluster behind the simulator; empty serves the management API only")
		fs.StringVar(&opts.AccessKey, "access-key", ranchersim.DefaultAccessKey, "API access key (basic auth user)")
		fs.StringVar(&opts.SecretKey, "secret-key", ranchersim.DefaultSecretKey, "API secret key (basic auth password)")
		fs.StringVar(&opts.ClusterID, "cluster-id", ranchersim.DefaultClusterID, "id of the simulated downstream cluster")
		fs.StringVar(&opts.ClusterName, "cluster-name", ranchersim.DefaultClusterName, "name of the simulated downstream cluster")
		return func(_ context.Context, log *slog.Logger) (simkit.Sim, []any, error) {
			opts.Logger = log
			if *kubeconfig != "" {
				cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
				if err != nil {
					return nil, nil, fmt.Errorf("load kubeconfig %s: %w", *kubeconfig, err)
				}
				opts.Kube = cfg
			}
			srv, err := ranchersim.New(opts)
			return srv, []any{"cluster", opts.ClusterID, "kube", *kubeconfig != ""}, err
		}
	})
}
