// Command okdsim serves the OpenShift project API simulator (see package
// okdsim) for local runs, in front of a real kube-apiserver.
//
//	okdsim -listen 127.0.0.1:8444 -kubeconfig /tmp/sitebus-kube-…/kubeconfig \
//	  -token-file /tmp/okd-token
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/simkit"
)

func main() {
	simkit.Main("okdsim", "127.0.0.1:8444", func(fs *flag.FlagSet) simkit.Build {
		kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster behind the simulator (required)")
		tokenFile := fs.String("token-file", "", "file of valid bearer tokens, re-read on every request; empty: a temporary one")
		token := fs.String("token", okdsim.DefaultToken, "token written to -token-file when it does not exist")
		user := fs.String("user", okdsim.DefaultUser, "user of the tokens (openshift.io/requester of requested projects)")
		return func(_ context.Context, log *slog.Logger) (simkit.Sim, []any, error) {
			if *kubeconfig == "" {
				return nil, nil, errors.New("-kubeconfig (or KUBECONFIG) is required")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
			if err != nil {
				return nil, nil, fmt.Errorf("load kubeconfig %s: %w", *kubeconfig, err)
			}
			srv, err := okdsim.New(okdsim.Options{Kube: cfg, TokenFile: *tokenFile, Token: *token, User: *user, Logger: log})
			if err != nil {
				return nil, nil, err
			}
			// The token file's path is logged, never a token.
			return srv, []any{"token_file", srv.TokenFile()}, nil
		}
	})
}
