// Package tilt tests the repository's Tiltfile with the real tilt binary
// (make tilt builds it): the local mode under `tilt ci`, every part a local
// process as `make run` starts them, and the Kubernetes mode rendered
// without a cluster by `tilt alpha tiltfile-result`, asserting the
// resources Tilt would create and the images it would build.
package tilt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/testenv"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/config"
)

const tiltVersion = "v0.34.0"

// tiltBinary is the tilt .ci/tilt.sh builds; plain `go test` without it
// skips (fails in CI), make test builds it first.
func tiltBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(harness.CacheDir(), "tilt-"+tiltVersion, "tilt")
	_, err := os.Stat(bin)
	testenv.Require(t, "tilt "+tiltVersion+" (build it with `make tilt`; make test does)", err)
	return bin
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tiltEnv is the environment tilt runs in: the given kubeconfig, and
// Tilt's own state (API server config, session data) in dir instead of
// the user's ~/.tilt-dev and XDG directories, so runs do not share it.
func tiltEnv(t *testing.T, kubeconfig, dir string, extra ...string) []string {
	t.Helper()
	goenv, err := exec.Command("go", "env", "GOENV").Output()
	if err != nil {
		t.Fatalf("go env GOENV: %v", err)
	}
	drop := []string{"KUBECONFIG=", "SITEBUS_TILT_MODE=", "TILT_DEV_DIR=", "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=", "GOENV="}
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(drop, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return append(env, append([]string{
		"KUBECONFIG=" + kubeconfig,
		"TILT_DEV_DIR=" + filepath.Join(dir, "tilt-dev"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		// XDG_CONFIG_HOME moved; keep the user's go env file (GOFLAGS, ...).
		"GOENV=" + strings.TrimSpace(string(goenv)),
	}, extra...)...)
}

// writeKubeconfig writes a kubeconfig whose current context is context
// (none when empty), pointing at a server nothing listens on: rendering
// must not need the cluster.
func writeKubeconfig(t *testing.T, context string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	text := "apiVersion: v1\nkind: Config\n"
	if context != "" {
		text += fmt.Sprintf(`clusters:
- name: %[1]s
  cluster: {server: "https://127.0.0.1:9"}
users:
- name: %[1]s
  user: {token: not-a-real-token}
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: %[1]s}
current-context: %[1]s
`, context)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tiltfileResult is the part of `tilt alpha tiltfile-result`'s JSON the
// tests read (the format is Tilt's internal one, pinned by tiltVersion).
type tiltfileResult struct {
	Manifests []manifest
}

type manifest struct {
	Name                 string
	ImageTargets         []imageTarget
	DeployTarget         deployTarget
	ResourceDependencies []string
	Labels               map[string]string
}

type imageTarget struct {
	Selector     string `json:"selector"`
	BuildDetails struct {
		Args       []string `json:"args"`
		Env        []string `json:"env"`
		OutputMode string   `json:"outputMode"`
	}
}

// deployTarget holds either a Kubernetes target (YAML) or a local one
// (UpdateCmdSpec, ServeCmd).
type deployTarget struct {
	YAML          string `json:"yaml"`
	UpdateCmdSpec *struct {
		Args []string `json:"args"`
	}
	ServeCmd struct{ Argv []string }
}

func (r tiltfileResult) names() []string {
	var n []string
	for _, m := range r.Manifests {
		n = append(n, m.Name)
	}
	return n
}

func (r tiltfileResult) manifest(name string) (manifest, bool) {
	for _, m := range r.Manifests {
		if m.Name == name {
			return m, true
		}
	}
	return manifest{}, false
}

// renderTiltfile runs `tilt alpha tiltfile-result` on the repository's
// Tiltfile. A Tiltfile error (exit code 5) comes back as err with tilt's
// message.
func renderTiltfile(t *testing.T, env []string, args ...string) (tiltfileResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := repoRoot(t)
	cmdArgs := []string{"alpha", "tiltfile-result", "--file", filepath.Join(root, "Tiltfile")}
	if len(args) > 0 {
		cmdArgs = append(append(cmdArgs, "--"), args...)
	}
	cmd := exec.CommandContext(ctx, tiltBinary(t), cmdArgs...)
	cmd.Dir = root
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return tiltfileResult{}, fmt.Errorf("tilt %s: %w\n%s", strings.Join(cmdArgs, " "), err, stderr.String())
	}
	var res tiltfileResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("decode tiltfile-result: %v\n%.2000s", err, stdout.String())
	}
	return res, nil
}

// chartServices are the services the chart runs as Deployments (its
// values.yaml), each sitebus-<name> in the release "sitebus".
func chartServices(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy/helm/sitebus/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Services map[string]any `json:"services"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Services) == 0 {
		t.Fatal("chart values list no services")
	}
	var names []string
	for n := range v.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

var localResources = []string{"sitebus-build", "site", "unit-tests"}

func TestTiltfileModeSelection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		context string
		env     []string
		args    []string
		// wantK8s: the Kubernetes mode's resources; else the local ones.
		wantK8s bool
		// wantErr: the Tiltfile refuses to load, with this in the message.
		wantErr string
	}{
		{name: "a local cluster context selects the Kubernetes mode", context: "kind-sitebus", wantK8s: true},
		{name: "no context selects the local mode", context: ""},
		{name: "--mode=local wins over a context", context: "kind-sitebus", args: []string{"--mode=local"}},
		{name: "SITEBUS_TILT_MODE=local wins over a context", context: "kind-sitebus", env: []string{"SITEBUS_TILT_MODE=local"}},
		{name: "--mode wins over SITEBUS_TILT_MODE", context: "kind-sitebus", env: []string{"SITEBUS_TILT_MODE=local"}, args: []string{"--mode=k8s"}, wantK8s: true},
		{name: "a remote context is refused when the mode was not named", context: "prod-cluster", wantErr: "allow_k8s_contexts('prod-cluster')"},
		{name: "--mode=k8s allows a remote context", context: "prod-cluster", args: []string{"--mode=k8s"}, wantK8s: true},
		{name: "--mode=k8s without a context fails", context: "", args: []string{"--mode=k8s"}, wantErr: "k8s mode needs a Kubernetes context"},
		{name: "an unknown mode fails", context: "kind-sitebus", args: []string{"--mode=docker"}, wantErr: `unknown mode "docker"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tiltEnv(t, writeKubeconfig(t, tc.context), t.TempDir(), tc.env...)
			res, err := renderTiltfile(t, env, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want a Tiltfile error with %q, got %v (resources %v)", tc.wantErr, err, res.names())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, hasSite := res.manifest("site")
			_, hasNATS := res.manifest("sitebus-nats")
			if tc.wantK8s && (hasSite || !hasNATS) {
				t.Errorf("want the Kubernetes mode, got resources %v", res.names())
			}
			if !tc.wantK8s && !slices.Equal(res.names(), localResources) {
				t.Errorf("want the local mode's resources %v, got %v", localResources, res.names())
			}
		})
	}
}

// k8sObject is the part of a rendered object the tests read.
type k8sObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int `json:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Image string   `json:"image"`
					Args  []string `json:"args"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func decodeObjects(t *testing.T, stream string) []k8sObject {
	t.Helper()
	var out []k8sObject
	for _, doc := range strings.Split(stream, "\n---\n") {
		if strings.TrimSpace(doc) == "" || strings.TrimSpace(doc) == "---" {
			continue
		}
		var o k8sObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decode %q...: %v", doc[:min(len(doc), 200)], err)
		}
		out = append(out, o)
	}
	return out
}

// TestKubernetesModeRendersTheSite renders the Kubernetes mode against a
// kind context without a cluster and checks what `tilt up` would do: one
// Deployment per chart service running the ko-built sitebus image, the
// chart's NATS StatefulSet, RabbitMQ and the three simulators as
// Deployments with their ko-built images, ordered behind the namespace,
// CRD, Secret and RBAC.
func TestKubernetesModeRendersTheSite(t *testing.T) {
	env := tiltEnv(t, writeKubeconfig(t, "kind-sitebus"), t.TempDir())
	res, err := renderTiltfile(t, env)
	if err != nil {
		t.Fatal(err)
	}

	type want struct {
		kind  string
		image string // the image ref Tilt builds for it ("" none)
		cmd   string // the import path ko builds
	}
	wants := map[string]want{
		"sitebus-nats": {kind: "StatefulSet"},
		"rabbitmq":     {kind: "Deployment"},
		"waldursim":    {kind: "Deployment", image: "sitebus-dev/waldursim", cmd: "./e2e/cmd/waldursim"},
		"keycloaksim":  {kind: "Deployment", image: "sitebus-dev/keycloaksim", cmd: "./e2e/cmd/keycloaksim"},
		"ranchersim":   {kind: "Deployment", image: "sitebus-dev/ranchersim", cmd: "./e2e/cmd/ranchersim"},
	}
	services := chartServices(t)
	for _, s := range services {
		wants["sitebus-"+s] = want{kind: "Deployment", image: "ghcr.io/sitebus/sitebus", cmd: "./services/cmd/sitebus"}
	}

	for name, w := range wants {
		t.Run(name, func(t *testing.T) {
			m, ok := res.manifest(name)
			if !ok {
				t.Fatalf("no resource %s; resources %v", name, res.names())
			}
			objs := decodeObjects(t, m.DeployTarget.YAML)
			var workload *k8sObject
			for i := range objs {
				if objs[i].Kind == w.kind && objs[i].Metadata.Name == name {
					workload = &objs[i]
				}
			}
			if workload == nil {
				t.Fatalf("resource %s has no %s %s: %+v", name, w.kind, name, objs)
			}
			if workload.Metadata.Namespace != "sitebus-dev" {
				t.Errorf("%s in namespace %q, want sitebus-dev", name, workload.Metadata.Namespace)
			}
			if !slices.Contains(m.ResourceDependencies, "sitebus-dev-setup") {
				t.Errorf("%s does not wait for sitebus-dev-setup: deps %v", name, m.ResourceDependencies)
			}
			if w.image == "" {
				if len(m.ImageTargets) != 0 {
					t.Errorf("%s builds images %+v, want none", name, m.ImageTargets)
				}
				return
			}
			if len(m.ImageTargets) != 1 || m.ImageTargets[0].Selector != w.image {
				t.Fatalf("%s builds %+v, want one image %s", name, m.ImageTargets, w.image)
			}
			if img := workload.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, w.image+":") && img != w.image {
				t.Errorf("%s runs image %q, not the one Tilt builds (%s)", name, img, w.image)
			}
			b := m.ImageTargets[0].BuildDetails
			if got := strings.Join(b.Args, " "); !strings.HasSuffix(got, "deploy/dev/ko-build.sh "+w.cmd) {
				t.Errorf("%s image built by %q, want deploy/dev/ko-build.sh %s", name, got, w.cmd)
			}
			// ko pushes to the registry itself: Tilt must not look for
			// the image in a Docker daemon.
			if b.OutputMode != "remote" {
				t.Errorf("%s image output mode %q, want remote (skips_local_docker)", name, b.OutputMode)
			}
		})
	}

	t.Run("sitebus services wait for NATS, RabbitMQ and the simulators", func(t *testing.T) {
		for _, s := range services {
			m, _ := res.manifest("sitebus-" + s)
			for _, dep := range []string{"sitebus-nats", "rabbitmq", "waldursim", "keycloaksim", "ranchersim"} {
				if !slices.Contains(m.ResourceDependencies, dep) {
					t.Errorf("sitebus-%s does not wait for %s: %v", s, dep, m.ResourceDependencies)
				}
			}
		}
	})

	t.Run("setup holds the namespace, CRD, config Secret and fixture", func(t *testing.T) {
		m, ok := res.manifest("sitebus-dev-setup")
		if !ok {
			t.Fatalf("no resource sitebus-dev-setup; resources %v", res.names())
		}
		have := map[string]bool{}
		for _, o := range decodeObjects(t, m.DeployTarget.YAML) {
			have[o.Kind+"/"+o.Metadata.Name] = true
		}
		for _, k := range []string{"Namespace/sitebus-dev", "CustomResourceDefinition/managednamespaces.provisioning.hpc.ut.ee",
			"Secret/sitebus-config", "ConfigMap/waldursim-fixture", "Secret/rabbitmq", "ServiceAccount/sitebus"} {
			if !have[k] {
				t.Errorf("sitebus-dev-setup lacks %s; has %v", k, have)
			}
		}
	})

	t.Run("the simulator's fixture has every offering of the dev config", func(t *testing.T) {
		m, _ := res.manifest("sitebus-dev-setup")
		var fixtureYAML string
		for _, doc := range strings.Split(m.DeployTarget.YAML, "\n---\n") {
			var cm struct {
				Kind     string                `json:"kind"`
				Metadata struct{ Name string } `json:"metadata"`
				Data     map[string]string     `json:"data"`
			}
			if err := yaml.Unmarshal([]byte(doc), &cm); err == nil && cm.Kind == "ConfigMap" && cm.Metadata.Name == "waldursim-fixture" {
				fixtureYAML = cm.Data["fixture.yaml"]
			}
		}
		if fixtureYAML == "" {
			t.Fatal("no ConfigMap waldursim-fixture with fixture.yaml")
		}
		path := filepath.Join(t.TempDir(), "fixture.yaml")
		if err := os.WriteFile(path, []byte(fixtureYAML), 0o600); err != nil {
			t.Fatal(err)
		}
		fx, err := waldursim.LoadFixture(path)
		if err != nil {
			t.Fatalf("the simulator would not start: %v", err)
		}
		cfg, err := config.Load(filepath.Join(repoRoot(t), "deploy/dev/config.yaml"))
		if err != nil {
			t.Fatalf("deploy/dev/config.yaml: %v", err)
		}
		if len(cfg.Offerings) != 2 {
			t.Errorf("dev config has %d offerings, want the namespaces and the Rancher one", len(cfg.Offerings))
		}
		for _, o := range cfg.Offerings {
			if !slices.ContainsFunc(fx.Offerings, func(f waldursim.Offering) bool { return f.UUID == o.WaldurOfferingUUID }) {
				t.Errorf("offering %s (%s) of the dev config is not in the simulator's fixture", o.Name, o.WaldurOfferingUUID)
			}
		}
	})

	t.Run("no object is left uncategorized", func(t *testing.T) {
		if _, ok := res.manifest("uncategorized"); ok {
			t.Errorf("objects in Tilt's uncategorized resource: the Tiltfile's setup list misses some")
		}
	})
}
