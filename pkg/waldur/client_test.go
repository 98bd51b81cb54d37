package waldur

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
)

const testToken = "s3cr3t-t0ken-value"

// request is what a test server saw.
type request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string
}

// recorder is an httptest server that records requests and answers with h.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, request{req.Method, req.URL.Path, req.URL.Query(), req.Header.Clone(), string(b)})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(b))
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

func (r *recorder) count() int { return len(r.requests()) }

// testConfig has tiny backoffs so retry tests take milliseconds.
func testConfig(apiURL string) Config {
	return Config{
		APIURL: apiURL,
		Token:  testToken,
		Retry: RetryPolicy{
			MaxAttempts:    5,
			InitialBackoff: time.Millisecond,
			MaxBackoff:     2 * time.Millisecond,
			MaxRetryAfter:  5 * time.Millisecond,
		},
		Logger: slog.New(slog.DiscardHandler),
	}
}

func newTestClient(t *testing.T, srvURL string, mutate ...func(*Config)) *Client {
	t.Helper()
	cfg := testConfig(srvURL + "/api/")
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func TestBaseURLNormalisation(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string
		wantErr bool
	}{
		"api with trailing slash":         {in: "https://x/api/", want: "https://x"},
		"api without trailing slash":      {in: "https://x/api", want: "https://x"},
		"root with slash":                 {in: "https://x/", want: "https://x"},
		"root without slash":              {in: "https://x", want: "https://x"},
		"host ending in api letters kept": {in: "https://wapi.example/api/", want: "https://wapi.example"},
		"path ending in api letters kept": {in: "https://x.example/wapi/", want: "https://x.example/wapi"},
		"only one api segment stripped":   {in: "https://x/api/api/", want: "https://x/api"},
		"sub-path prefix kept":            {in: "https://x/waldur/api/", want: "https://x/waldur"},
		"port kept":                       {in: "http://x:8080/api/", want: "http://x:8080"},
		"no scheme rejected":              {in: "waldur.example.com/api/", wantErr: true},
		"ftp rejected":                    {in: "ftp://x/api/", wantErr: true},
		"query rejected":                  {in: "https://x/api/?a=b", wantErr: true},
		"credentials rejected":            {in: "https://u:p@x/api/", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(tc.in)
			c, err := New(cfg)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("New(%q) succeeded, want error", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tc.in, err)
			}
			if got := c.BaseURL(); got != tc.want {
				t.Errorf("BaseURL() = %q, want %q", got, tc.want)
			}
			if got, want := c.url("/api/version/", nil).String(), tc.want+"/api/version/"; got != want {
				t.Errorf("url = %q, want %q", got, want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := map[string]struct {
		mutate  func(*Config)
		wantErr string // substring; "" means valid
	}{
		"token only is valid": {mutate: func(c *Config) {}},
		"full OIDC is valid": {mutate: func(c *Config) {
			c.Token = ""
			c.OIDC = OIDCConfig{TokenURL: "https://kc/token", ClientID: "id", ClientSecret: "sec"}
		}},
		"no credentials": {mutate: func(c *Config) { c.Token = "" }, wantErr: "either waldur_api_token"},
		"partial OIDC names the missing keys": {mutate: func(c *Config) {
			c.Token = ""
			c.OIDC = OIDCConfig{TokenURL: "https://kc/token"}
		}, wantErr: "oidc_client_id, oidc_client_secret"},
		"relative OIDC token url": {mutate: func(c *Config) {
			c.Token = ""
			c.OIDC = OIDCConfig{TokenURL: "/token", ClientID: "id", ClientSecret: "sec"}
		}, wantErr: "oidc_token_url must be"},
		"missing api url":       {mutate: func(c *Config) { c.APIURL = "" }, wantErr: "waldur_api_url is required"},
		"negative timeout":      {mutate: func(c *Config) { c.Timeout = -time.Second }, wantErr: "timeout"},
		"insecure with client":  {mutate: func(c *Config) { c.InsecureSkipVerify = true; c.HTTPClient = http.DefaultClient }, wantErr: "InsecureSkipVerify"},
		"initial above max":     {mutate: func(c *Config) { c.Retry.InitialBackoff = time.Hour }, wantErr: "initial backoff"},
		"secret never in error": {mutate: func(c *Config) { c.APIURL = "nope" }, wantErr: "must start with"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig("https://waldur.example.com/api/")
			tc.mutate(&cfg)
			cfg.setDefaults()
			err := cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want error containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Fatalf("error leaks the token: %v", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	var cfg Config
	cfg.setDefaults()
	if cfg.UserAgent != "sitebus/"+Version || cfg.Timeout != 30*time.Second ||
		cfg.Retry.MaxAttempts != 5 || cfg.Retry.InitialBackoff != 200*time.Millisecond ||
		cfg.Retry.MaxBackoff != 10*time.Second || cfg.Logger == nil || cfg.InsecureSkipVerify {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

func TestRequestHeaders(t *testing.T) {
	tests := map[string]struct {
		call            func(*Client) error
		wantContentType string
	}{
		"GET has no content type": {
			call:            func(c *Client) error { _, err := c.Version(context.Background()); return err },
			wantContentType: "",
		},
		"POST with body is JSON": {
			call:            func(c *Client) error { return c.ApproveOrderByProvider(context.Background(), "o1") },
			wantContentType: "application/json",
		},
		"POST without body has no content type": {
			call:            func(c *Client) error { return c.SetOrderStateDone(context.Background(), "o1") },
			wantContentType: "",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{}`) })
			c := newTestClient(t, srv.URL, func(c *Config) { c.UserAgent = "sitebus-test/1" })
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			h := srv.requests()[0].Header
			if got := h.Get("Authorization"); got != "Token "+testToken {
				t.Errorf("Authorization = %q", got)
			}
			if got := h.Get("Accept"); got != "application/json" {
				t.Errorf("Accept = %q", got)
			}
			if got := h.Get("User-Agent"); got != "sitebus-test/1" {
				t.Errorf("User-Agent = %q", got)
			}
			if got := h.Get("Content-Type"); got != tc.wantContentType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantContentType)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	tests := map[string]struct {
		// statuses are answered in order; the last one repeats.
		statuses     []int
		wantErr      bool
		wantRequests int
		wantStatus   int
		retryable    bool
	}{
		"503 then success is retried":     {statuses: []int{503, 200}, wantRequests: 2},
		"502 500 then success":            {statuses: []int{502, 500, 200}, wantRequests: 3},
		"429 then success":                {statuses: []int{429, 200}, wantRequests: 2},
		"400 is not retried":              {statuses: []int{400}, wantErr: true, wantRequests: 1, wantStatus: 400},
		"404 is not retried":              {statuses: []int{404}, wantErr: true, wantRequests: 1, wantStatus: 404},
		"409 is not retried":              {statuses: []int{409}, wantErr: true, wantRequests: 1, wantStatus: 409},
		"401 is not retried":              {statuses: []int{401}, wantErr: true, wantRequests: 1, wantStatus: 401},
		"persistent 503 stops at maximum": {statuses: []int{503}, wantErr: true, wantRequests: 5, wantStatus: 503, retryable: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var n atomic.Int32
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				st := tc.statuses[min(i, len(tc.statuses)-1)]
				writeJSON(w, st, `{"detail":"x"}`)
			})
			c := newTestClient(t, srv.URL)
			// The deadline only guards against a retry loop that never ends;
			// it must never cut a correct run short on a loaded machine.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := c.ApproveOrderByProvider(ctx, "o1")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got := srv.count(); got != tc.wantRequests {
				t.Errorf("requests = %d, want %d", got, tc.wantRequests)
			}
			if tc.wantErr {
				if got := StatusCode(err); got != tc.wantStatus {
					t.Errorf("StatusCode = %d, want %d", got, tc.wantStatus)
				}
				if got := retryable(err); got != tc.retryable {
					t.Errorf("retried = %v, want %v", got, tc.retryable)
				}
			}
			// Every attempt re-sends the same body.
			for _, r := range srv.requests() {
				if r.Body != "{}" {
					t.Errorf("attempt body = %q, want {}", r.Body)
				}
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	tests := map[string]struct {
		header string
		// dateIn, when set, makes the header an HTTP date that far ahead
		// of the moment the server answers.
		dateIn time.Duration
		want   time.Duration
	}{
		"seconds honoured":             {header: "7", want: 7 * time.Second},
		"capped at MaxRetryAfter":      {header: "3600", want: time.Minute},
		"zero retries immediately":     {header: "0", want: 0},
		"http date honoured":           {dateIn: 20 * time.Second, want: 20 * time.Second},
		"garbage falls back to jitter": {header: "soon", want: -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var n atomic.Int32
			var mu sync.Mutex              // the handler runs on the server's goroutine
			var date, answeredAt time.Time // the HTTP date sent, when dateIn is set
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					h := tc.header
					if tc.dateIn > 0 {
						mu.Lock()
						answeredAt = time.Now()
						date = answeredAt.Add(tc.dateIn).UTC().Truncate(time.Second)
						h = date.Format(http.TimeFormat)
						mu.Unlock()
					}
					w.Header().Set("Retry-After", h)
					writeJSON(w, 429, `{"detail":"slow down"}`)
					return
				}
				writeJSON(w, 200, `{"version":"7.0"}`)
			})
			c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxRetryAfter = time.Minute })
			var waits []time.Duration
			c.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }

			v, err := c.Version(context.Background())
			returnedAt := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if v.Version != "7.0" {
				t.Errorf("version = %q", v.Version)
			}
			if len(waits) != 1 {
				t.Fatalf("waits = %v, want one", waits)
			}
			switch {
			case tc.dateIn > 0:
				// The client reads its clock between the answer and the
				// return, so the wait lies between the date minus those two
				// instants: exact bounds, whatever the machine's speed.
				mu.Lock()
				lo, hi := date.Sub(returnedAt), date.Sub(answeredAt)
				mu.Unlock()
				if waits[0] < lo || waits[0] > hi {
					t.Errorf("wait = %v, want within [%v, %v] (date %v)", waits[0], lo, hi, date)
				}
			case tc.want < 0:
				if waits[0] >= 2*time.Millisecond {
					t.Errorf("wait = %v, want jittered backoff below MaxBackoff", waits[0])
				}
			case tc.want == 0:
				if waits[0] != 0 {
					t.Errorf("wait = %v, want 0", waits[0])
				}
			default:
				// HTTP dates have one-second resolution.
				if waits[0] < tc.want-time.Second || waits[0] > tc.want {
					t.Errorf("wait = %v, want about %v", waits[0], tc.want)
				}
			}
		})
	}
}

func TestRealRetryAfterSleepIsCapped(t *testing.T) {
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "120")
			writeJSON(w, 429, `{}`)
			return
		}
		writeJSON(w, 200, `{}`)
	})
	c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxRetryAfter = 20 * time.Millisecond })
	start := time.Now()
	if err := c.SetResourceOK(context.Background(), "r1"); err != nil {
		t.Fatal(err)
	}
	// At least the capped 20ms (a monotonic lower bound), and nowhere near
	// the 120s asked for: the upper bound is far from both.
	if d := time.Since(start); d < 20*time.Millisecond || d > 60*time.Second {
		t.Errorf("call took %v, want about 20ms (capped Retry-After)", d)
	}
	if srv.count() != 2 {
		t.Errorf("requests = %d, want 2", srv.count())
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	c := newTestClient(t, "http://unused", func(c *Config) {
		c.Retry.InitialBackoff = 100 * time.Millisecond
		c.Retry.MaxBackoff = 400 * time.Millisecond
	})
	for attempt, ceil := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 10: 400 * time.Millisecond} {
		for range 200 {
			if d := c.backoff(attempt, nil, nil); d < 0 || d >= ceil {
				t.Fatalf("backoff(%d) = %v, want [0,%v)", attempt, d, ceil)
			}
		}
	}
}

func TestTransportErrorIsRetried(t *testing.T) {
	// The first connection is hijacked and closed without an answer; the
	// second gets a real response.
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, 200, `{"uuid":"u1"}`)
	})
	c := newTestClient(t, srv.URL)
	me, err := c.Me(context.Background())
	if err != nil {
		t.Fatalf("Me: %v", err)
	}
	if me.UUID != "u1" || srv.count() != 2 {
		t.Errorf("uuid=%q requests=%d, want u1 after 2 requests", me.UUID, srv.count())
	}
}

func TestTransportErrorExhaustsAttempts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused

	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}
	c := newTestClient(t, "http://"+addr, func(c *Config) { c.HTTPClient = &http.Client{Transport: tr} })
	_, err = c.Version(context.Background())
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TransportError", err)
	}
	if !retryable(err) || fault.IsTerminal(err) {
		t.Errorf("a refused connection is not retried: %v", err)
	}
	if got := dials.Load(); got != 5 {
		t.Errorf("dials = %d, want 5", got)
	}
}

func TestContextDeadlineStopsRetries(t *testing.T) {
	// Two answers of 503, then a request that hangs until the caller's
	// deadline ends it: where the deadline falls does not depend on how
	// fast the machine is.
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 2 {
			<-r.Context().Done()
			return
		}
		writeJSON(w, 503, `{}`)
	})
	c := newTestClient(t, srv.URL, func(c *Config) {
		c.Retry = RetryPolicy{MaxAttempts: 1000, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}
		c.Timeout = 30 * time.Second // longer than the deadline: the deadline ends the hang
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := c.Version(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if retryable(err) || fault.IsTerminal(err) {
		t.Errorf("after the caller's deadline, %v is retried here or final for the bus", err)
	}
	if !strings.Contains(err.Error(), "503") {
		t.Errorf("err %q does not quote the last failure", err)
	}
	if n := srv.count(); n != 3 {
		t.Errorf("requests = %d, want 3 (the third cut short by the deadline)", n)
	}
}

func TestCancelDuringBackoffReturnsPromptly(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 429, `{}`)
	})
	c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxRetryAfter = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the client has started its 30s wait, not after a fixed
	// time that might fall before the first request on a loaded machine.
	sleeping := make(chan struct{})
	realSleep := c.sleep
	c.sleep = func(ctx context.Context, d time.Duration) error { close(sleeping); return realSleep(ctx, d) }
	go func() { <-sleeping; cancel() }()
	start := time.Now()
	_, err := c.Version(ctx)
	// Far below the 30 s Retry-After it must not wait out, even on a loaded machine.
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("took %v, want prompt return on cancel", elapsed)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want Canceled", err)
	}
	if srv.count() != 1 {
		t.Errorf("requests = %d, want 1", srv.count())
	}
}

func TestPerAttemptTimeout(t *testing.T) {
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // hang until the client gives up on this attempt
			return
		}
		writeJSON(w, 200, `{"version":"1"}`)
	})
	// Long enough that the second, answered attempt never times out on a
	// loaded machine; the first hangs until the timeout whatever it is.
	c := newTestClient(t, srv.URL, func(c *Config) { c.Timeout = time.Second })
	v, err := c.Version(context.Background())
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if v.Version != "1" || srv.count() != 2 {
		t.Errorf("version=%q requests=%d", v.Version, srv.count())
	}
}

func TestAPIErrorMessage(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := map[string]struct {
		status    int
		body      string
		want      []string
		maxLen    int
		notFound  bool
		conflict  bool
		retryable bool
	}{
		"conflict names method path status and body": {
			status: 409, body: `{"detail":"Order is not in executing state."}`,
			want:     []string{"waldur: POST /api/marketplace-orders/abc/set_state_done/: 409 Conflict: {\"detail\":\"Order is not in executing state.\"}"},
			conflict: true,
		},
		"not found": {status: 404, body: `{"detail":"Not found."}`, want: []string{"404 Not Found"}, notFound: true},
		"body truncated": {
			status: 400, body: long, want: []string{"400 Bad Request", "…(truncated)"}, maxLen: 2300,
		},
		"echoed token is redacted": {
			status: 400, body: `{"detail":"bad token ` + testToken + `"}`, want: []string{"[REDACTED]"},
		},
		"server error is retryable": {status: 500, body: "boom", want: []string{"500 Internal Server Error: boom"}, retryable: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, tc.status, tc.body) })
			c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxAttempts = 1 })
			err := c.SetOrderStateDone(context.Background(), "abc")
			if err == nil {
				t.Fatal("want error")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, testToken) {
				t.Errorf("error leaks the token: %q", msg)
			}
			if tc.maxLen > 0 && len(msg) > tc.maxLen {
				t.Errorf("error length %d > %d", len(msg), tc.maxLen)
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Method != "POST" || ae.Path != "/api/marketplace-orders/abc/set_state_done/" || ae.StatusCode != tc.status {
				t.Errorf("APIError = %+v", ae)
			}
			if IsNotFound(err) != tc.notFound || IsConflict(err) != tc.conflict || retryable(err) != tc.retryable {
				t.Errorf("IsNotFound=%v IsConflict=%v retried=%v", IsNotFound(err), IsConflict(err), retryable(err))
			}
		})
	}
}

func TestTokenNeverLogged(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			writeJSON(w, 503, `{}`)
			return
		}
		writeJSON(w, 200, `[]`)
	})
	c := newTestClient(t, srv.URL, func(c *Config) { c.Logger = logger })
	if _, err := c.ListOrders(context.Background(), OrderFilter{OfferingUUID: "off"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() == 0 {
		t.Fatal("expected debug logs")
	}
	if strings.Contains(buf.String(), testToken) {
		t.Fatalf("log leaks the token:\n%s", buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestNonJSONResponseIsExplained(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>frontend</html>")
	})
	c := newTestClient(t, srv.URL)
	_, err := c.Version(context.Background())
	if err == nil || !strings.Contains(err.Error(), "text/html") || !strings.Contains(err.Error(), "/api/version/") {
		t.Fatalf("err = %v", err)
	}
	if srv.count() != 1 {
		t.Errorf("decode errors must not be retried; requests = %d", srv.count())
	}
}

func TestEmptyUUIDRejectedWithoutRequest(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{}`) })
	c := newTestClient(t, srv.URL)
	if err := c.SetOrderStateDone(context.Background(), ""); err == nil {
		t.Fatal("want error for empty uuid")
	}
	if srv.count() != 0 {
		t.Errorf("requests = %d, want 0", srv.count())
	}
}

func TestTLSVerification(t *testing.T) {
	tests := map[string]struct {
		insecure bool
		wantErr  bool
	}{
		"verification on by default":  {wantErr: true},
		"insecure skip verify opt-in": {insecure: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, `{"version":"1"}`)
			}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // silence handshake errors
			srv.StartTLS()
			t.Cleanup(srv.Close)
			c := newTestClient(t, srv.URL, func(c *Config) { c.InsecureSkipVerify = tc.insecure })
			_, err := c.Version(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && (retryable(err) || !fault.IsTerminal(err) || !errors.Is(err, fault.Rejected)) {
				t.Errorf("certificate errors must be terminal refusals: %v", err)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		"empty":       {in: "", wantOK: false},
		"seconds":     {in: "5", want: 5 * time.Second, wantOK: true},
		"negative":    {in: "-1", wantOK: false},
		"past date":   {in: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		"future date": {in: now.Add(time.Minute).Format(http.TimeFormat), want: time.Minute, wantOK: true},
		"garbage":     {in: "later", wantOK: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := parseRetryAfter(tc.in, now)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("parseRetryAfter(%q) = %v,%v want %v,%v", tc.in, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestWaitPastDeadlineFailsFast(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "600")
		writeJSON(w, 503, `{"detail":"maintenance"}`)
	})
	c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxRetryAfter = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Version(ctx)
	// Failing at once takes one request; waiting would take the whole 30s.
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("took %v; a 600s wait cannot fit a 30s deadline, so it should fail at once", elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "maintenance") {
		t.Errorf("err = %v", err)
	}
}

func TestAnswersMapToFaultKinds(t *testing.T) {
	certErr := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	tests := []struct {
		name string
		err  error
		kind fault.Kind
		want fault.Decision
	}{
		{"a 404 is not found, retried unless the caller handles it", &APIError{StatusCode: 404}, fault.NotFound, fault.Decision{}},
		{"a 409 is a conflict, retried unless the caller handles it", &APIError{StatusCode: 409}, fault.Conflict, fault.Decision{}},
		{"a 429 is unavailable, retried", &APIError{StatusCode: 429}, fault.Unavailable, fault.Decision{}},
		{"a 500 is unavailable, retried", &APIError{StatusCode: 500}, fault.Unavailable, fault.Decision{}},
		{"a 503 is unavailable, retried", &APIError{StatusCode: 503}, fault.Unavailable, fault.Decision{}},
		{"a 400 is a terminal refusal", &APIError{StatusCode: 400}, fault.Rejected, fault.Decision{Terminal: true}},
		{"a 401 is a terminal refusal", &APIError{StatusCode: 401}, fault.Rejected, fault.Decision{Terminal: true}},
		{"a 403 is a terminal refusal", &APIError{StatusCode: 403}, fault.Rejected, fault.Decision{Terminal: true}},
		{"a 422 is a terminal refusal", &APIError{StatusCode: 422}, fault.Rejected, fault.Decision{Terminal: true}},
		{"no answer is unavailable, retried", &TransportError{Err: errors.New("connection refused")}, fault.Unavailable, fault.Decision{}},
		{"a certificate that does not verify is a terminal refusal", &TransportError{Err: fmt.Errorf("tls: %w", certErr)}, fault.Rejected, fault.Decision{Terminal: true}},
		{"a token endpoint that is down is unavailable, retried", &TokenError{Err: errors.New("502"), retryable: true}, fault.Unavailable, fault.Decision{}},
		{"a token endpoint that refuses the client is terminal", &TokenError{Err: errors.New("invalid_client")}, fault.Credentials, fault.Decision{Terminal: true}},
		{"a 429's Retry-After reaches the bus", retryAfter(&APIError{StatusCode: 429}, http.Header{"Retry-After": {"7"}}, &APIError{StatusCode: 429}),
			fault.Unavailable, fault.Decision{After: 7 * time.Second}},
		{"a 400's Retry-After is ignored", retryAfter(&APIError{StatusCode: 400}, http.Header{"Retry-After": {"7"}}, &APIError{StatusCode: 400}),
			fault.Rejected, fault.Decision{Terminal: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("approve order: %w", tt.err)
			if got := fault.KindOf(err); got != tt.kind {
				t.Errorf("kind %q, want %q", got, tt.kind)
			}
			if got := fault.Decide(err); got != tt.want {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestA429GivenUpCarriesRetryAfter(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 429, `{"detail":"slow down"}`)
	})
	c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxAttempts = 1 })
	err := c.ApproveOrderByProvider(context.Background(), "o1")
	if d := fault.Decide(err); d.Terminal || d.After != 30*time.Second || StatusCode(err) != 429 {
		t.Fatalf("err %v: decision %+v, status %d; want a retry after 30s of a 429", err, d, StatusCode(err))
	}
}
