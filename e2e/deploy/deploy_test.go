// Package deploy_test checks that the shipped manifests are accepted by a
// real API server (its validation, the CRD's schema), so a typo in deploy/
// fails the tests rather than a site's rollout.
package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

// The kustomize base (the chart rendered with default values) applies as
// kustomize would: every resource of the kustomization, in its order.
func TestManifestsAreAccepted(t *testing.T) {
	kube.Require(t)
	cluster := kube.Shared(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The CRD and the CR namespace the Role lives in come first.
	if err := cluster.ApplyFile(ctx, filepath.Join(root, "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := cluster.ApplyYAML(ctx, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: waldur-system}\n")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy/kubernetes")
	var kust struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	// A namespace transformer would move the Role out of the CR namespace.
	if kust.Namespace != "" || len(kust.Resources) < 5 || kust.Resources[0] != "namespace.yaml" {
		t.Fatalf("kustomization: namespace %q, resources %v", kust.Namespace, kust.Resources)
	}
	for _, f := range kust.Resources {
		if err := cluster.ApplyFile(ctx, filepath.Join(dir, f)); err != nil {
			t.Errorf("the API server refused %s: %v", f, err)
		}
	}
}
