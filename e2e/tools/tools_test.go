// Package tools_test runs the operator commands sitebus diagnostics and
// sitebus load-components as processes against the Waldur, Rancher and
// Keycloak simulators, a real RabbitMQ and a real kube-apiserver.
package tools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/waldur"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

// Distinctive secrets, none of which may be printed.
const (
	rancherSecret   = "rancher-TOPSECRET-51ab"
	keycloakSecret  = "kc-TOPSECRET-77c3"
	wrongWaldurTok  = "waldur-TOPSECRET-wrong-0d1e"
	keycloakAdmin   = "sitebus-admin"
	crdManifestPath = "deploy/crds/managednamespaces.provisioning.hpc.ut.ee.yaml"
)

type site struct {
	fx      *waldursim.Fixture
	sim     *waldursim.Server
	broker  *rabbitmq.Broker
	cluster *kube.Cluster
	rancher *ranchersim.Server
	kc      *keycloaksim.Server
}

func newSite(t *testing.T) *site {
	t.Helper()
	kube.Require(t)
	rabbitmq.Require(t)
	fx := harness.Fixture(t)
	broker := rabbitmq.Shared(t)
	sim, err := harness.StartSimulator("127.0.0.1:0", fx, broker, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	cluster := kube.Shared(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.ApplyFile(ctx, filepath.Join(root, crdManifestPath)); err != nil {
		t.Fatal(err)
	}
	s := &site{fx: fx, sim: sim, broker: broker, cluster: cluster,
		rancher: ranchersim.NewTestServer(t, ranchersim.Options{Kube: cluster.RESTConfig(), SecretKey: rancherSecret}),
		kc:      keycloaksim.NewTestServer(t, keycloaksim.Config{AdminUsername: keycloakAdmin, AdminPassword: keycloakSecret}),
	}
	return s
}

// registerSubscription makes the event subscription (and its broker user)
// that sitebus run would, so diagnostics can log in to the broker with it.
func (s *site) registerSubscription(t *testing.T) {
	t.Helper()
	c, err := waldur.New(waldur.Config{APIURL: s.sim.URL() + "/api/", Token: s.fx.Users[0].Token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off := s.fx.Offerings[0].UUID
	id, err := c.RegisterAgentIdentity(ctx, waldur.AgentIdentityRequest{Offering: off, Name: "agent-" + off, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	es, err := c.RegisterEventSubscription(ctx, id.UUID, "order", "diagnostics test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, es.UUID, off, "order"); err != nil {
		t.Fatal(err)
	}
}

// config is one offering's configuration; mutate edits the parts a case
// changes.
type config struct {
	token, backend, rancherKey, keycloakURL, transport string
	components                                         []string
}

func (s *site) defaults() config {
	return config{token: s.fx.Users[0].Token, backend: "k8s-ut-namespace", rancherKey: s.rancher.Options().AccessKey,
		keycloakURL: strings.TrimRight(s.kc.URL(), "/") + "/", transport: "websocket"}
}

func (s *site) write(t *testing.T, c config) string {
	t.Helper()
	host, port, _ := strings.Cut(s.broker.WebSTOMPAddr(), ":")
	tcpHost, tcpPort, _ := strings.Cut(s.broker.STOMPAddr(), ":")
	keycloak := fmt.Sprintf(`      keycloak_enabled: true
      keycloak: {keycloak_url: %q, keycloak_realm: waldur, keycloak_user_realm: master, keycloak_username: %s, keycloak_password: %s}
`, c.keycloakURL, keycloakAdmin, keycloakSecret)
	var settings string
	switch c.backend {
	case "rancher":
		o := s.rancher.Options()
		settings = fmt.Sprintf("      backend_url: %s\n      username: %s\n      password: %s\n      cluster_id: %s\n",
			s.rancher.URL(), c.rancherKey, rancherSecret, o.ClusterID)
	default:
		settings = fmt.Sprintf("      kubeconfig_path: %q\n      cr_namespace: waldur-system\n", s.cluster.Kubeconfig)
	}
	comps := c.components
	if comps == nil {
		comps = []string{"cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}"}
	}
	yaml := fmt.Sprintf(`offerings:
  - name: site
    waldur_api_url: %s/api/
    waldur_api_token: %s
    waldur_offering_uuid: %s
    backend_type: %s
    order_processing_backend: %s
    stomp_enabled: true
    websocket_use_tls: false
    stomp_ws_host: %s
    stomp_ws_port: %s
    stomp_ws_path: %s
    backend_settings:
%s%s    backend_components:
      %s
sitebus:
  data_dir: %q
  stomp: {transport: %s, tcp_host: %s, tcp_port: %s}
`, s.sim.URL(), c.token, s.fx.Offerings[0].UUID, c.backend, c.backend, host, port, rabbitmq.WebSTOMPPath,
		settings, keycloak, strings.Join(comps, "\n      "), t.TempDir(), c.transport, tcpHost, tcpPort)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sitebus runs the binary; it returns the combined output and the exit code.
func sitebus(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin, err := harness.SitebusBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{rancherSecret, keycloakSecret, wrongWaldurTok} {
		if strings.Contains(string(out), secret) {
			t.Errorf("secret %q printed:\n%s", secret, out)
		}
	}
	return string(out), code
}

func TestDiagnostics(t *testing.T) {
	s := newSite(t)
	s.registerSubscription(t)
	tests := map[string]struct {
		edit func(c *config)
		code int
		want []string
	}{
		"ManagedNamespace site over Web-STOMP: all pass": {
			code: 0,
			want: []string{"ok   waldur token: token accepted", "ok   stomp: logged in at ws://", "ok   backend k8s-ut-namespace: answers: server_version=v1.",
				"ok   keycloak token: logged in", "ok   keycloak realm: realm \"waldur\" answers", "ok   nats: embedded NATS server", " 0 failed"},
		},
		"the bridge's TCP form passes too": {
			edit: func(c *config) { c.transport = "tcp" },
			code: 0,
			want: []string{"ok   stomp: logged in at stomp://", " 0 failed"},
		},
		"Rancher site with the right key: all pass": {
			edit: func(c *config) { c.backend = "rancher" },
			code: 0,
			want: []string{"ok   backend rancher: answers:", "managed_projects=", " 0 failed"},
		},
		"a wrong Rancher key is named as the problem": {
			edit: func(c *config) { c.backend, c.rancherKey = "rancher", "token-wrongkey" },
			code: 1,
			want: []string{`FAIL backend rancher: Rancher refused access key "token-wrongkey" (401`,
				"fix: check backend_settings.username (the access key token-wrongkey) and password", "ok   waldur token", " 1 failed"},
		},
		"a wrong Waldur token is named as the problem": {
			edit: func(c *config) { c.token = wrongWaldurTok },
			code: 1,
			want: []string{"FAIL waldur token: Waldur refused the token (401 Unauthorized)", "fix: check waldur_api_token", "ok   waldur api: Waldur"},
		},
		"an unreachable Keycloak is named as the problem": {
			// Port 1: nothing listens there, and no other test can take it.
			edit: func(c *config) { c.keycloakURL = "http://127.0.0.1:1/auth/" },
			code: 1,
			want: []string{"FAIL keycloak token: Keycloak at http://127.0.0.1:1/auth/ did not give a token", "fix: check backend_settings.keycloak.keycloak_url", " 1 failed"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := s.defaults()
			if tc.edit != nil {
				tc.edit(&c)
			}
			out, code := sitebus(t, "diagnostics", "-c", s.write(t, c), "--timeout", "20s")
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("json output", func(t *testing.T) {
		c := s.defaults()
		c.rancherKey, c.backend = "token-wrongkey", "rancher"
		out, code := sitebus(t, "diagnostics", "-c", s.write(t, c), "--output", "json")
		if code != 1 || !strings.Contains(out, `"ok": false`) || !strings.Contains(out, `"check": "backend rancher"`) {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}

func TestLoadComponents(t *testing.T) {
	s := newSite(t)
	off := s.fx.Offerings[0].UUID
	c := s.defaults()
	c.components = []string{
		"cpu: {type: cpu, measured_unit: cores, accounting_type: limit, label: CPU}",
		"ram: {type: ram, measured_unit: GiB, accounting_type: limit, label: Memory, limit: 256}",
		"gpu: {type: gpu, measured_unit: units, accounting_type: usage, label: GPU, description: NVIDIA H100}",
	}
	out, code := sitebus(t, "load-components", "-c", s.write(t, c))
	if code != 0 || !strings.Contains(out, "cpu: unchanged") || !strings.Contains(out, "ram: updated (limit_amount, name)") ||
		!strings.Contains(out, "gpu: created") || !strings.Contains(out, "1 created, 1 updated, 1 unchanged, 0 failed") {
		t.Fatalf("first run, exit %d:\n%s", code, out)
	}
	byType := func() map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, comp := range s.sim.Components(off) {
			m[comp["type"].(string)] = comp
		}
		return m
	}
	got := byType()
	if g := got["gpu"]; g == nil || g["name"] != "GPU" || g["billing_type"] != "usage" || g["measured_unit"] != "units" || g["description"] != "NVIDIA H100" || g["limit_amount"] != nil {
		t.Errorf("gpu in Waldur: %v", g)
	}
	if r := got["ram"]; r["name"] != "Memory" || fmt.Sprint(r["limit_amount"]) != "256" || r["limit_period"] != "month" {
		t.Errorf("ram in Waldur: %v", r)
	}

	out, code = sitebus(t, "load-components", "-c", s.write(t, c))
	if code != 0 || !strings.Contains(out, "nothing to change: 3 component(s) as configured") {
		t.Errorf("second run, exit %d:\n%s", code, out)
	}
	if again := byType(); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Errorf("the second run changed Waldur:\nbefore %v\nafter  %v", got, again)
	}

	c.components[2] = "gpu: {type: gpu, measured_unit: GPUs, accounting_type: usage, label: GPU, description: NVIDIA H100}"
	out, code = sitebus(t, "load-components", "-c", s.write(t, c))
	if code != 0 || !strings.Contains(out, "gpu: updated (measured_unit)") || !strings.Contains(out, "0 created, 1 updated, 2 unchanged") {
		t.Errorf("changed config, exit %d:\n%s", code, out)
	}
	if g := byType()["gpu"]; g["measured_unit"] != "GPUs" {
		t.Errorf("gpu after the change: %v", g)
	}

	c.components = append(c.components, "bad: {measured_unit: x, accounting_type: limit, label: Bad, limit: 0.5}")
	out, code = sitebus(t, "load-components", "-c", s.write(t, c))
	if code != 1 || !strings.Contains(out, "bad: failed to create") || !strings.Contains(out, "A valid integer is required.") {
		t.Errorf("a component Waldur refuses, exit %d:\n%s", code, out)
	}
}
