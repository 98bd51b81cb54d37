package okd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
)

// tokenServer accepts only the bearer token *valid and records every
// Authorization header and body it got.
type tokenServer struct {
	mu     sync.Mutex
	valid  string
	seen   []string
	bodies []string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	s.bodies = append(s.bodies, string(body))
	if r.Header.Get("Authorization") != "Bearer "+s.valid {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *tokenServer) set(tok string) { s.mu.Lock(); s.valid = tok; s.mu.Unlock() }
func (s *tokenServer) tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func newTokenServer(t *testing.T, valid string) (*tokenServer, string) {
	ts := &tokenServer{valid: valid}
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	return ts, srv.URL
}

func client(src tokenSource) *http.Client {
	return &http.Client{Transport: &authTransport{next: http.DefaultTransport, src: src, log: slog.New(slog.DiscardHandler)}}
}

func writeToken(t *testing.T, path, tok string) {
	t.Helper()
	// Written aside and renamed, as kubelet and rotating systems do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func post(t *testing.T, c *http.Client, url, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestAuthTransport(t *testing.T) {
	t.Run("static token: a 401 is returned without a pointless retry", func(t *testing.T) {
		ts, url := newTokenServer(t, "good")
		if got := post(t, client(staticToken("bad")), url, "x"); got != http.StatusUnauthorized {
			t.Errorf("status %d", got)
		}
		if got := ts.tokens(); len(got) != 1 {
			t.Errorf("requests %v, want one", got)
		}
	})

	t.Run("file token: rotated file is re-read on the 401 and the request retried once, body and all", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		writeToken(t, path, "one")
		ts, url := newTokenServer(t, "one")
		c := client(&fileToken{path: path, kind: TokenFile})
		if got := post(t, c, url, "first"); got != http.StatusOK {
			t.Fatalf("status %d", got)
		}
		// The server rotates first; the file keeps its size and may keep
		// its modification time, so only the 401 can tell.
		ts.set("two")
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		_, _ = f.WriteAt([]byte("two"), 0)
		_ = f.Close()
		_ = os.Chtimes(path, fi.ModTime(), fi.ModTime())
		if got := post(t, c, url, "second"); got != http.StatusOK {
			t.Fatalf("status after rotation %d", got)
		}
		if got, want := ts.tokens(), []string{"one", "one", "two"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("tokens sent %v, want %v", got, want)
		}
		if ts.bodies[2] != "second" {
			t.Errorf("retried body %q", ts.bodies[2])
		}
	})

	t.Run("file token: a changed file is read before any 401", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		writeToken(t, path, "one")
		ts, url := newTokenServer(t, "one")
		c := client(&fileToken{path: path, kind: TokenServiceAccount})
		post(t, c, url, "")
		writeToken(t, path, "second-token") // another size: the stat sees it
		ts.set("second-token")
		if got := post(t, c, url, ""); got != http.StatusOK {
			t.Fatalf("status %d", got)
		}
		if got := ts.tokens(); strings.Join(got, ",") != "one,second-token" {
			t.Errorf("tokens sent %v; want no 401 on the way", got)
		}
	})

	t.Run("retried once only", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		writeToken(t, path, "one")
		ts, url := newTokenServer(t, "never")
		src := &rotatingSource{}
		if got := post(t, client(src), url, ""); got != http.StatusUnauthorized {
			t.Errorf("status %d", got)
		}
		if got := ts.tokens(); len(got) != 2 {
			t.Errorf("requests %v, want the first and one retry", got)
		}
	})
}

// rotatingSource hands out a new token on every refresh.
type rotatingSource struct{ n int }

func (r *rotatingSource) Token(context.Context) (string, error) { return "t0", nil }
func (r *rotatingSource) Refresh(context.Context, string) (string, error) {
	r.n++
	return "t" + strings.Repeat("x", r.n), nil
}
func (r *rotatingSource) Kind() string { return "test" }

func TestOAuthRefreshToken(t *testing.T) {
	var mu sync.Mutex
	var grants []string
	issued := 0
	oauth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		grants = append(grants, r.PostForm.Get("grant_type")+":"+r.PostForm.Get("refresh_token")+":"+r.PostForm.Get("client_id"))
		if r.PostForm.Get("refresh_token") == "revoked" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		issued++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"access-` + string(rune('0'+issued)) + `","expires_in":3600,"refresh_token":"r` + string(rune('0'+issued)) + `"}`))
	}))
	t.Cleanup(oauth.Close)
	now := time.Unix(1_000_000, 0)
	src := &oauthToken{cfg: OAuth{ClientID: "cid", TokenEndpoint: oauth.URL}, client: oauth.Client(),
		now: func() time.Time { return now }, refresh: "r0"}
	ts, url := newTokenServer(t, "access-1")
	c := client(src)
	if got := post(t, c, url, ""); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	// The API server stops taking the access token: a 401 refreshes it.
	ts.set("access-2")
	if got := post(t, c, url, ""); got != http.StatusOK {
		t.Fatalf("status after the server dropped the token %d", got)
	}
	// Within 5 minutes of expiry the token is refreshed before use.
	now = now.Add(56 * time.Minute)
	ts.set("access-3")
	if got := post(t, c, url, ""); got != http.StatusOK {
		t.Fatalf("status near expiry %d", got)
	}
	want := []string{"refresh_token:r0:cid", "refresh_token:r1:cid", "refresh_token:r2:cid"}
	if strings.Join(grants, ",") != strings.Join(want, ",") {
		t.Errorf("grants %v, want %v (the rotated refresh token used)", grants, want)
	}
	if got := ts.tokens(); strings.Join(got, ",") != "access-1,access-1,access-2,access-3" {
		t.Errorf("tokens sent %v", got)
	}
	revoked := &oauthToken{cfg: OAuth{ClientID: "cid", TokenEndpoint: oauth.URL}, client: oauth.Client(), now: time.Now, refresh: "revoked"}
	_, err := revoked.Token(t.Context())
	if !errors.Is(err, fault.Credentials) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), "refused the refresh token") || strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked refresh token: err = %v", err)
	}
}
