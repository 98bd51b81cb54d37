// Command okdsim serves the OpenShift project API simulator (see package
// okdsim) for local runs, in front of a real kube-apiserver.
//
//	okdsim -listen 127.0.0.1:8444 -kubeconfig /tmp/sitebus-kube-…/kubeconfig \
//	  -token-file /tmp/okd-token
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

	"github.com/sitebus/sitebus/e2e/okdsim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "okdsim:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8444", "address to serve the API on (plain HTTP)")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster behind the simulator (required)")
	tokenFile := flag.String("token-file", "", "file of valid bearer tokens, re-read on every request; empty: a temporary one")
	token := flag.String("token", okdsim.DefaultToken, "token written to -token-file when it does not exist")
	user := flag.String("user", okdsim.DefaultUser, "user of the tokens (openshift.io/requester of requested projects)")
	listAll := flag.Bool("list-all-namespaces", false, "list every namespace as a project (a cluster-admin's view)")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if *kubeconfig == "" {
		return fmt.Errorf("-kubeconfig (or KUBECONFIG) is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", *kubeconfig, err)
	}
	srv, err := okdsim.New(okdsim.Options{Kube: cfg, TokenFile: *tokenFile, Token: *token, User: *user,
		ListAllNamespaces: *listAll, Logger: log})
	if err != nil {
		return err
	}
	if err := srv.Start(*listen); err != nil {
		_ = srv.Close()
		return err
	}
	defer func() { _ = srv.Close() }()
	// The token file's path is logged, never a token.
	log.Info("okdsim listening", "url", srv.URL(), "token_file", srv.TokenFile(), "admin", srv.URL()+"/sim/")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}
