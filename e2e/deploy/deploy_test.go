// Package deploy_test checks that the shipped manifests are accepted by a
// real API server (its validation, the CRD's schema), so a typo in deploy/
// fails the tests rather than a site's rollout.
package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/services/app"
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

// deployment is the part of a Deployment this test reads.
type deployment struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int `json:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Args []string `json:"args"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// Every service `sitebus run --only` knows has its own Deployment that runs
// it alone against the NATS cluster, and the kustomization ships it: a
// service added to app.ServiceNames without one fails here.
func TestEveryServiceHasADeployment(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy/kubernetes")
	var kust struct {
		Resources []string `json:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	for _, name := range app.ServiceNames {
		t.Run(name, func(t *testing.T) {
			file := name + ".yaml"
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatalf("no Deployment for service %s: %v", name, err)
			}
			var d deployment
			if err := yaml.Unmarshal(data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Kind != "Deployment" || d.Metadata.Name != "sitebus-"+name {
				t.Errorf("%s holds %s %q, want Deployment sitebus-%s", file, d.Kind, d.Metadata.Name, name)
			}
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("%s: %d containers, want 1", file, len(d.Spec.Template.Spec.Containers))
			}
			args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
			for _, want := range []string{"run --only " + name + " ", "--nats-url nats://", "-c /etc/sitebus/config.yaml"} {
				if !strings.Contains(args+" ", want) {
					t.Errorf("%s: args %q lack %q", file, args, want)
				}
			}
			if d.Spec.Replicas == nil {
				t.Errorf("%s: replicas not written down", file)
			}
			if !slices.Contains(kust.Resources, file) {
				t.Errorf("kustomization.yaml does not list %s", file)
			}
		})
	}
}
