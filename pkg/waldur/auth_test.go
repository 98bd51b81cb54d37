package waldur

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
)

const testClientSecret = "client-s3cret"

// tokenServer is a fake OIDC token endpoint issuing jwt-1, jwt-2, ...
type tokenServer struct {
	*recorder
	issued atomic.Int32
}

// newTokenServer answers with statuses in order (the last repeats); 200
// responses carry expiresIn when non-empty.
func newTokenServer(t *testing.T, expiresIn string, statuses ...int) *tokenServer {
	t.Helper()
	if len(statuses) == 0 {
		statuses = []int{200}
	}
	ts := &tokenServer{}
	var n atomic.Int32
	ts.recorder = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		st := statuses[min(int(n.Add(1))-1, len(statuses)-1)]
		if err := r.ParseForm(); err != nil ||
			r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_id") != "agent" ||
			r.PostForm.Get("client_secret") != testClientSecret {
			writeJSON(w, 400, `{"error":"invalid_request"}`)
			return
		}
		if st != 200 {
			writeJSON(w, st, `{"error":"invalid_client","error_description":"nope"}`)
			return
		}
		body := fmt.Sprintf(`{"access_token":"jwt-%d","token_type":"Bearer"`, ts.issued.Add(1))
		if expiresIn != "" {
			body += `,"expires_in":` + expiresIn
		}
		writeJSON(w, 200, body+"}")
	})
	return ts
}

func newOIDCClient(t *testing.T, apiURL, tokenURL string) (*Client, *fakeClock) {
	t.Helper()
	c := newTestClient(t, apiURL, func(c *Config) {
		c.Token = ""
		c.OIDC = OIDCConfig{TokenURL: tokenURL, ClientID: "agent", ClientSecret: testClientSecret}
	})
	clk := &fakeClock{t: time.Now()}
	c.auth.(*oidcSource).now = clk.Now
	return c, clk
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) Set(base time.Time, d time.Duration) {
	f.mu.Lock()
	f.t = base.Add(d)
	f.mu.Unlock()
}

func TestOIDCTokenCaching(t *testing.T) {
	type step struct {
		at          time.Duration // fake time since the first call
		wantFetches int
		wantAuth    string
	}
	tests := map[string]struct {
		expiresIn string
		steps     []step
	}{
		"cached until 30s before expires_in": {
			expiresIn: "3600",
			steps: []step{
				{at: 0, wantFetches: 1, wantAuth: "Bearer jwt-1"},
				{at: time.Minute, wantFetches: 1, wantAuth: "Bearer jwt-1"},
				{at: 3600*time.Second - 31*time.Second, wantFetches: 1, wantAuth: "Bearer jwt-1"},
				{at: 3600*time.Second - 29*time.Second, wantFetches: 2, wantAuth: "Bearer jwt-2"},
			},
		},
		"missing expires_in falls back to 300s": {
			steps: []step{
				{at: 0, wantFetches: 1, wantAuth: "Bearer jwt-1"},
				{at: 269 * time.Second, wantFetches: 1, wantAuth: "Bearer jwt-1"},
				{at: 271 * time.Second, wantFetches: 2, wantAuth: "Bearer jwt-2"},
				{at: 300 * time.Second, wantFetches: 2, wantAuth: "Bearer jwt-2"},
				{at: 542 * time.Second, wantFetches: 3, wantAuth: "Bearer jwt-3"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTokenServer(t, tc.expiresIn)
			api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"uuid":"me"}`) })
			c, clk := newOIDCClient(t, api.URL, ts.URL+"/token")
			base := clk.Now()
			for i, s := range tc.steps {
				clk.Set(base, s.at)
				if _, err := c.Me(context.Background()); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := ts.count(); got != s.wantFetches {
					t.Errorf("step %d (+%v): token fetches = %d, want %d", i, s.at, got, s.wantFetches)
				}
				reqs := api.requests()
				if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != s.wantAuth {
					t.Errorf("step %d: Authorization = %q, want %q", i, got, s.wantAuth)
				}
			}
		})
	}
}

func TestOIDCConcurrentCallersShareOneFetch(t *testing.T) {
	ts := newTokenServer(t, "3600")
	api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{}`) })
	c, _ := newOIDCClient(t, api.URL, ts.URL+"/token")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Me(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := ts.count(); got != 1 {
		t.Errorf("token fetches = %d, want 1", got)
	}
}

func TestOIDCTokenEndpointFailures(t *testing.T) {
	tests := map[string]struct {
		statuses      []int
		wantErr       bool
		wantFetches   int
		wantAPICalls  int
		wantRetryable bool
	}{
		"invalid client is not retried": {statuses: []int{401}, wantErr: true, wantFetches: 1},
		"token endpoint 503 is retried": {statuses: []int{503, 200}, wantFetches: 2, wantAPICalls: 1},
		"token endpoint down exhausts attempts": {
			statuses: []int{502}, wantErr: true, wantFetches: 5, wantRetryable: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTokenServer(t, "60", tc.statuses...)
			api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{}`) })
			c, _ := newOIDCClient(t, api.URL, ts.URL+"/token")
			_, err := c.Me(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if ts.count() != tc.wantFetches || api.count() != tc.wantAPICalls {
				t.Errorf("fetches=%d api=%d, want %d and %d", ts.count(), api.count(), tc.wantFetches, tc.wantAPICalls)
			}
			if err == nil {
				return
			}
			var te *TokenError
			if !errors.As(err, &te) {
				t.Errorf("err = %T %v, want *TokenError", err, err)
			}
			if retryable(err) != tc.wantRetryable || fault.IsTerminal(err) == tc.wantRetryable {
				t.Errorf("retried %v, terminal %v; want retried %v", retryable(err), fault.IsTerminal(err), tc.wantRetryable)
			}
			if strings.Contains(err.Error(), testClientSecret) {
				t.Errorf("error leaks the client secret: %v", err)
			}
		})
	}
}

func TestOIDC401FromWaldurDropsCachedToken(t *testing.T) {
	ts := newTokenServer(t, "3600")
	var n atomic.Int32
	api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			writeJSON(w, 401, `{"detail":"Invalid token."}`)
			return
		}
		writeJSON(w, 200, `{}`)
	})
	c, _ := newOIDCClient(t, api.URL, ts.URL+"/token")
	if _, err := c.Me(context.Background()); StatusCode(err) != 401 {
		t.Fatalf("first call err = %v, want 401", err)
	}
	if _, err := c.Me(context.Background()); err != nil {
		t.Fatalf("second call: %v", err)
	}
	reqs := api.requests()
	if got := reqs[1].Header.Get("Authorization"); got != "Bearer jwt-2" {
		t.Errorf("second call Authorization = %q, want a fresh token", got)
	}
}
