package vcluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/kubeproxy"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

// countingProxy serves a cluster's API over plain HTTP on a loopback port
// and counts the requests that pass, as e2e/provisioner counts Vault's:
// sitebus reaches the API server only through it, so the count is
// sitebus's calls and none of the stand-ins' or the controller-manager's.
type countingProxy struct {
	n          atomic.Int64
	kubeconfig string // a kubeconfig naming the proxy
}

func newCountingProxy(t testing.TB, c *kube.Cluster, name string) *countingProxy {
	t.Helper()
	proxy, err := kubeproxy.New(c.RESTConfig(), func(w http.ResponseWriter, err error) {
		http.Error(w, err.Error(), http.StatusBadGateway)
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.n.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.kubeconfig = filepath.Join(t.TempDir(), name+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: %[1]s, cluster: {server: %[2]q}}]
users: [{name: %[1]s, user: {}}]
contexts: [{name: %[1]s, context: {cluster: %[1]s, user: %[1]s}}]
current-context: %[1]s
`, name, srv.URL)
	if err := os.WriteFile(p.kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withCountingProxies puts a counting proxy in front of each API server:
// the offering's host kubeconfig and the virtual cluster's kubeconfig
// Secret name the proxies.
func withCountingProxies(host, virt **countingProxy) envOption {
	return func(e *env) {
		*host, *virt = newCountingProxy(e.t, e.host, "host"), newCountingProxy(e.t, e.virt, "virtual")
		e.hostKubeconfig, e.virtKubeconfig = (*host).kubeconfig, (*virt).kubeconfig
	}
}

// BenchmarkVClusterCreate measures creates of a virtual cluster through
// the real `sitebus run` (simulated Waldur → RabbitMQ → sitebus → the
// Rancher and Keycloak simulators and two real kube-apiservers, the host
// and the one playing the virtual cluster): each op is one create with a
// team of two, from the order's STOMP frame to Waldur's set_state_done.
// It includes the stand-ins' reaction (the kubeconfig Secret and the
// agent connecting, each looked for every 50 ms). Per create it reports
// the calls to Rancher, Keycloak and Waldur (their call logs) and to each
// API server (a counting proxy in front of each). Between creates, untimed,
// the virtual cluster is terminated and the next waits until its host
// namespace and the agent's namespace are gone, so every create starts
// from the same empty state. Run with `make bench-vcluster`.
func BenchmarkVClusterCreate(b *testing.B) {
	var hostCalls, virtCalls *countingProxy
	e := newEnvWith(b, "bench", []envOption{withMembers(map[string]any{}), withCountingProxies(&hostCalls, &virtCalls)},
		harness.WithKeycloak(kcAdminPassword, harness.KeycloakUsers...))
	ctx := context.Background()
	team := []waldursim.TeamMember{harness.Member("alice01", "PROJECT.ADMIN"), harness.Member("bob01", "PROJECT.MEMBER")}
	var total struct{ rancher, keycloak, waldur, host, virt int64 }
	var took time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		e.waitGone(ctx)
		e.bringKubeconfig(b)
		req := e.create()
		req.Silent = true
		orderUUID, resUUID := e.Order(req)
		for _, m := range team {
			if _, err := e.Admin.SetTeam(harness.Context(b, time.Minute), waldursim.TeamRequest{ResourceUUID: resUUID, Member: m, Granted: true, Silent: true}); err != nil {
				b.Fatal(err)
			}
		}
		h0, v0 := hostCalls.n.Load(), virtCalls.n.Load()
		start := time.Now()
		b.StartTimer()
		e.Deliver(orderUUID)
		o := e.WaitOrder(orderUUID, "done", "erred")
		b.StopTimer()
		end := time.Now()
		took += end.Sub(start)
		if o.State != "done" {
			b.Fatalf("create %s: %s\n%s", o.State, o.ErrorMessage, e.Sitebus.Tail(40))
		}
		total.host += hostCalls.n.Load() - h0
		total.virt += virtCalls.n.Load() - v0
		r, k, w := e.callsBetween(start, end)
		total.rancher += r
		total.keycloak += k
		total.waldur += w
		if o := e.order(waldursim.CreateOrderRequest{Type: "Terminate", ResourceUUID: resUUID}); o.State != "done" {
			b.Fatalf("terminate %s: %s", o.State, o.ErrorMessage)
		}
		b.StartTimer()
	}
	b.StopTimer()
	per := func(n int64) float64 { return float64(n) / float64(b.N) }
	b.ReportMetric(per(total.rancher), "rancher-calls/op")
	b.ReportMetric(per(total.host), "host-kube-calls/op")
	b.ReportMetric(per(total.virt), "virtual-kube-calls/op")
	b.ReportMetric(per(total.keycloak), "keycloak-calls/op")
	b.ReportMetric(per(total.waldur), "waldur-calls/op")
	fmt.Printf("vcluster create, STOMP frame → set_state_done, %d creates, team of 2: mean %s; per create %.1f Rancher, %.1f host API server, %.1f virtual cluster API server, %.1f Keycloak, %.1f Waldur calls\n",
		b.N, (took / time.Duration(b.N)).Round(time.Millisecond), per(total.rancher), per(total.host), per(total.virt), per(total.keycloak), per(total.waldur))
}

// waitGone waits until the last create's host namespace and the agent's
// namespace in the virtual cluster are gone (both control planes run a
// controller-manager, so namespaces finish terminating).
func (e *env) waitGone(ctx context.Context) {
	harness.Eventually(e.t, 2*time.Minute, "the previous virtual cluster's namespaces to go", func() bool {
		_, hostErr := e.hostCS.CoreV1().Namespaces().Get(ctx, e.ns(), metav1.GetOptions{})
		_, virtErr := e.virtCS.CoreV1().Namespaces().Get(ctx, vcluster.AgentNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(hostErr) && apierrors.IsNotFound(virtErr)
	})
}

// callsBetween counts the calls the Rancher, Keycloak and Waldur
// simulators logged from start to end.
func (e *env) callsBetween(start, end time.Time) (rancher, keycloak, waldur int64) {
	e.t.Helper()
	in := func(t time.Time) bool { return !t.Before(start) && !t.After(end) }
	for _, c := range e.Rancher.Calls() {
		if in(c.Time) {
			rancher++
		}
	}
	for _, c := range e.Keycloak.Calls() {
		if in(c.Time) {
			keycloak++
		}
	}
	calls, err := e.Admin.Calls(harness.Context(e.t, time.Minute))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range calls {
		if strings.HasPrefix(c.Path, "/api/") && in(c.Time) {
			waldur++
		}
	}
	return rancher, keycloak, waldur
}
