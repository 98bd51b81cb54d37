package okdsim_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/okdsim"
	"github.com/sitebus/sitebus/e2e/simkit"
)

func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }

// env is a simulator in front of the shared test cluster, a client with
// the simulator's token, and direct access to the cluster.
type env struct {
	sim *okdsim.Server
	c   *client
	dyn dynamic.Interface
	ctx context.Context
}

func newEnv(t *testing.T, opts okdsim.Options) *env {
	t.Helper()
	kc := kube.Shared(t)
	opts.Kube = kc.RESTConfig()
	sim := okdsim.NewTestServer(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return &env{sim: sim, c: &client{t: t, base: sim.URL(), token: sim.Token(), hc: &http.Client{Timeout: 30 * time.Second}},
		dyn: kc.Dynamic(), ctx: ctx}
}

// uniqueName keeps tests apart in the shared cluster; the namespace is
// deleted when the test ends.
func (e *env) uniqueName(t *testing.T, prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := prefix + "-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		_ = e.dyn.Resource(namespaceGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// client speaks to the simulator as the Python OKD plugin does: a bearer
// token and JSON bodies.
type client struct {
	t     *testing.T
	base  string
	token string
	hc    *http.Client
}

type response struct {
	status int
	raw    string
	obj    map[string]any
}

func (c *client) do(method, path string, body any) response {
	c.t.Helper()
	return c.doType(method, path, "application/json", body)
}

func (c *client) doType(method, path, contentType string, body any) response {
	c.t.Helper()
	var auth func(*http.Request)
	if c.token != "" {
		auth = func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+c.token) }
	}
	status, raw := simkit.TestCall(context.Background(), c.t, c.hc, method, c.base, path, contentType, body, auth)
	r := response{status: status, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.obj)
	return r
}

func (r response) want(t *testing.T, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.raw)
	}
	return r
}

// wantStatus fails unless the response is a Kubernetes Status failure with
// code and reason.
func (r response) wantStatus(t *testing.T, code int, reason string) response {
	t.Helper()
	r.want(t, code)
	if r.obj["kind"] != "Status" || r.obj["apiVersion"] != "v1" || r.obj["status"] != "Failure" ||
		r.obj["reason"] != reason || r.obj["code"] != float64(code) {
		t.Fatalf("want a Status %d %s, got %s", code, reason, r.raw)
	}
	return r
}

func (r response) str(path ...string) string {
	var cur any = r.obj
	for _, p := range path {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}

const api = "/apis/project.openshift.io/v1"

// whoami is OpenShift's user of the bearer token, a call that needs only
// a valid token.
const whoami = "/apis/user.openshift.io/v1/users/~"

// requestProject sends the Python plugin's ProjectRequest body plus
// displayName and description.
func (c *client) requestProject(name, display, description string, annotations map[string]string) response {
	c.t.Helper()
	return c.do("POST", api+"/projectrequests", map[string]any{
		"kind": "ProjectRequest", "apiVersion": "project.openshift.io/v1",
		"metadata":    map[string]any{"name": name, "annotations": annotations},
		"displayName": display, "description": description,
	})
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
