package peers

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/ranchersim"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// callTimeout bounds each client's call: the per-attempt timeout Waldur's,
// Keycloak's and OpenStack's clients take from their config, and the
// context deadline for Rancher's, OpenShift's and Vault's, whose
// per-request bounds are a fixed 30 s. It must stay below the slow
// trickle's 2.6 s, so that the trickle is cut by the bound.
const callTimeout = 1500 * time.Millisecond

// hugeBodyTimeout bounds the calls that read a huge body: the case checks
// the 64 MiB cap, and reading 64 MiB on a loaded machine can take longer
// than callTimeout, which would end the call with a timeout instead.
const hugeBodyTimeout = 60 * time.Second

// hugeBody is past every client's 64 MiB cap.
const hugeBody = 64<<20 + 1<<20

// countingListener counts the connections a test server accepted and how
// many of them are still open.
type countingListener struct {
	net.Listener
	open atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once atomic.Bool
}

func (c *countedConn) Close() error {
	if c.once.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}

// serveSim builds a simulator with newSim(opts), closed by t.Cleanup,
// and serves it as serve does.
func serveSim[S interface {
	Handler() http.Handler
	Close() error
}, O any](t *testing.T, newSim func(O) (S, error), opts O) (S, string, *countingListener) {
	t.Helper()
	sim, err := newSim(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	url, conns := serve(t, sim.Handler())
	return sim, url, conns
}

// serve serves h on a counting listener, closed by t.Cleanup.
func serve(t *testing.T, h http.Handler) (string, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener = cl
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL, cl
}

// idleCloser captures a client's transport so the test can close its
// kept-alive connections and see that nothing else is left open; also
// closes them for a client that does not hand out its transport.
type idleCloser struct {
	rt   http.RoundTripper
	also func()
}

func (i *idleCloser) wrap(rt http.RoundTripper) http.RoundTripper { i.rt = rt; return rt }

func (i *idleCloser) close() {
	if i.also != nil {
		i.also()
	}
	if c, ok := i.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// peer is one client facing one simulator.
type peer struct {
	name    string // what the client's errors call the peer
	faults  *simkit.Faults
	prefix  string // the API path the faults hit
	call    func(ctx context.Context) error
	secrets []string // must not appear in an error
	conns   *countingListener
	idle    *idleCloser
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	waldurToken    = "waldur-token-0123456789abcdef"
	keycloakSecret = "keycloak-admin-pw-s3cret"
)

func waldurPeer(t *testing.T, bound time.Duration) *peer {
	sim, url, conns := serveSim(t, waldursim.New, waldursim.Config{Logger: quiet, Fixture: &waldursim.Fixture{
		Users: []waldursim.User{{UUID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", Username: "agent", Token: waldurToken}},
	}})
	idle := &idleCloser{}
	c, err := waldur.New(waldur.Config{APIURL: url + "/api/", Token: waldurToken, Logger: quiet,
		Timeout: bound, WrapTransport: idle.wrap,
		Retry: waldur.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return &peer{name: "waldur", faults: sim.Faults, prefix: "/api/", conns: conns, idle: idle,
		secrets: []string{waldurToken},
		call: func(ctx context.Context) error {
			o, err := c.GetOrder(ctx, "9f8e7d6c5b4a39281706f5e4d3c2b1a0")
			if err == nil && o.UUID == "" {
				return errors.New("no error, and an order with no uuid")
			}
			return err
		}}
}

func keycloakPeer(t *testing.T, bound time.Duration) *peer {
	sim, url, conns := serveSim(t, keycloaksim.New, keycloaksim.Config{AdminPassword: keycloakSecret})
	idle := &idleCloser{}
	c, err := keycloak.New(keycloak.Config{URL: url + "/", Username: "admin", Password: keycloakSecret,
		Timeout: bound, MaxAttempts: 1, Logger: quiet, WrapTransport: idle.wrap})
	if err != nil {
		t.Fatal(err)
	}
	return &peer{name: "keycloak", faults: sim.Faults, prefix: "/admin/realms/", conns: conns, idle: idle,
		secrets: []string{keycloakSecret},
		call: func(ctx context.Context) error {
			_, err := c.GetGroup(ctx, "5c1d3a8e-0000-4000-8000-000000000001")
			return err
		}}
}

func rancherPeer(t *testing.T, bound time.Duration) *peer {
	sim, url, conns := serveSim(t, ranchersim.New, ranchersim.Options{Logger: quiet})
	o := sim.Options()
	s, err := rancher.DecodeSettings(map[string]any{"backend_url": url, "username": o.AccessKey,
		"password": o.SecretKey, "cluster_id": o.ClusterID})
	if err != nil {
		t.Fatal(err)
	}
	idle := &idleCloser{}
	be, err := rancher.New(s, nil, rancher.Options{Logger: quiet, WrapTransport: idle.wrap})
	if err != nil {
		t.Fatal(err)
	}
	return &peer{name: "Rancher", faults: sim.Faults, prefix: "/v3/", conns: conns, idle: idle,
		secrets: []string{o.SecretKey},
		call: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			return be.Ping(ctx)
		}}
}

// misbehaviour is one way a peer answers badly, and the error it must
// cause: want names the cause; retryable says fault.Decide must not call
// it terminal.
type misbehaviour struct {
	name  string
	fault simkit.Fault
	want  string        // a substring of the error (case-insensitive)
	bound time.Duration // the call's bound; 0 is callTimeout
}

var misbehaviours = []misbehaviour{
	{name: "invalid JSON", want: "", fault: simkit.Fault{Status: http.StatusOK, Body: `{"uuid": "x",`, ContentType: "application/json"}},
	{name: "wrong content type", want: "", fault: simkit.Fault{Status: http.StatusOK,
		Body: "<html><body>Sign in to the proxy</body></html>", ContentType: "text/html"}},
	// No Body: the simulator's own error object, under a 200.
	{name: "200 with an error body", want: "error object", fault: simkit.Fault{Status: http.StatusOK}},
	{name: "huge body", want: "64 MiB limit", fault: simkit.Fault{Status: http.StatusOK, Body: `[`, Size: hugeBody, ContentType: "application/json"}, bound: hugeBodyTimeout},
	{name: "slow trickle", want: "", fault: simkit.Fault{Status: http.StatusOK, Body: `{"uuid": "x"}`, Trickle: 200 * time.Millisecond}},
	{name: "never answers", want: "", fault: simkit.Fault{Status: http.StatusOK, Delay: time.Hour}},
}

func TestMisbehavingPeersFailBoundedClassifiedAndLeakFree(t *testing.T) {
	runMisbehaviours(t, func(t *testing.T, bound time.Duration) []*peer {
		return []*peer{waldurPeer(t, bound), keycloakPeer(t, bound), rancherPeer(t, bound)}
	})
}

// peerSet makes the peers under test, their calls bounded by bound.
type peerSet func(t *testing.T, bound time.Duration) []*peer

// runMisbehaviours makes each peer misbehave in each way in turn and
// checks the call's error and what it left behind. Each case runs against
// peers made with its own bound.
func runMisbehaviours(t *testing.T, mk peerSet) {
	t.Helper()
	byBound := map[time.Duration][]*peer{}
	for _, m := range misbehaviours {
		if b := m.boundOrDefault(); byBound[b] == nil {
			byBound[b] = mk(t, b)
		}
	}
	// Every goroutine started so far (the servers' accept loops, the
	// simulators' own) is the baseline; what a call starts must end.
	baseline := goleak.IgnoreCurrent()
	for i, first := range byBound[callTimeout] {
		for _, m := range misbehaviours {
			p := byBound[m.boundOrDefault()][i]
			t.Run(first.name+"/"+m.name, func(t *testing.T) {
				f := m.fault
				f.PathPrefix = p.prefix
				p.faults.AddFault(f)
				t.Cleanup(p.faults.ClearFaults)

				err := p.call(t.Context())
				if err == nil {
					t.Fatal("the call succeeded")
				}
				t.Logf("error: %v (kind %q, terminal %v)", err, fault.KindOf(err), fault.IsTerminal(err))
				if fault.IsTerminal(err) {
					t.Errorf("terminal, want retryable: %v", err)
				}
				msg := err.Error()
				if !strings.Contains(strings.ToLower(msg), strings.ToLower(p.name)) {
					t.Errorf("the error does not name %s: %v", p.name, err)
				}
				if m.want != "" && !strings.Contains(msg, m.want) {
					t.Errorf("the error does not name the cause %q: %v", m.want, err)
				}
				for _, s := range p.secrets {
					if strings.Contains(msg, s) {
						t.Errorf("the error shows a secret: %v", err)
					}
				}

				// Nothing left behind: once the client drops its idle
				// connections, the server holds none open and no
				// goroutine the call started is running.
				p.idle.close()
				if err := goleak.Find(baseline); err != nil {
					t.Errorf("goroutines left: %v", err)
				}
				if n := waitClosed(t, p.conns); n != 0 {
					t.Errorf("%d connection(s) still open", n)
				}
			})
		}
	}
}

// waitClosed polls until the server sees no open connection or the
// test's context ends, and returns the count left.
func waitClosed(t *testing.T, l *countingListener) int64 {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for l.open.Load() != 0 {
		select {
		case <-ctx.Done():
			return l.open.Load()
		case <-tick.C:
		}
	}
	return 0
}

func (m misbehaviour) boundOrDefault() time.Duration {
	if m.bound == 0 {
		return callTimeout
	}
	return m.bound
}
