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
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/e2e/ranchersim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ranchersim:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8443", "address to serve the API on (plain HTTP)")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"),
		"kubeconfig of the cluster behind the simulator; empty serves the management API only")
	accessKey := flag.String("access-key", ranchersim.DefaultAccessKey, "API access key (basic auth user)")
	secretKey := flag.String("secret-key", ranchersim.DefaultSecretKey, "API secret key (basic auth password)")
	clusterID := flag.String("cluster-id", ranchersim.DefaultClusterID, "id of the simulated downstream cluster")
	clusterName := flag.String("cluster-name", ranchersim.DefaultClusterName, "name of the simulated downstream cluster")
	uniqueNames := flag.Bool("unique-project-names", false, "answer 409 to a second project with the same name (Rancher does not)")
	dupBindings := flag.Bool("allow-duplicate-bindings", false, "allow identical bindings twice (Rancher before 2.14)")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := ranchersim.Options{
		AccessKey: *accessKey, SecretKey: *secretKey, ClusterID: *clusterID, ClusterName: *clusterName,
		UniqueProjectNames: *uniqueNames, AllowDuplicateBindings: *dupBindings, Logger: log,
	}
	if *kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			return fmt.Errorf("load kubeconfig %s: %w", *kubeconfig, err)
		}
		opts.Kube = cfg
	}
	srv, err := ranchersim.New(opts)
	if err != nil {
		return err
	}
	if err := srv.Start(*listen); err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
	log.Info("ranchersim listening", "url", srv.URL(), "api", srv.URL()+"/v3", "cluster", *clusterID,
		"kube", *kubeconfig != "")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}
