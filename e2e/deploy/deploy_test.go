// Package deploy_test checks that the shipped manifests are accepted by a
// real API server (its validation, the CRD's schema), so a typo in deploy/
// fails the tests rather than a site's rollout.
package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

func TestManifestsAreAccepted(t *testing.T) {
	kube.Require(t)
	cluster := kube.Shared(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The CRD and the namespaces the others live in come first.
	first := []string{"deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml", "deploy/kubernetes/namespace.yaml"}
	for _, f := range first {
		if err := cluster.ApplyFile(ctx, filepath.Join(root, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if err := cluster.ApplyYAML(ctx, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: waldur-system}\n")); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy/kubernetes/*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "kustomization.yaml") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Namespaced objects without one go where the kustomization puts them.
			if !strings.Contains(string(data), "namespace:") {
				data = []byte(strings.Replace(string(data), "metadata:\n", "metadata:\n  namespace: sitebus\n", 1))
			}
			if err := cluster.ApplyYAML(ctx, data); err != nil {
				t.Errorf("the API server refused %s: %v", filepath.Base(f), err)
			}
		})
	}
}
