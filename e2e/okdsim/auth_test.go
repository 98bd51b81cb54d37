package okdsim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/okdsim"
)

const unauthorized = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`

func TestAuth(t *testing.T) {
	paths := map[string]string{
		"a project route": api + "/projects",
		"the user API":    whoami,
		"a proxied route": "/api/v1/namespaces",
		"discovery":       "/apis",
		"an unknown path": "/no/such/path",
	}
	tokens := map[string]string{"no token": "", "an unknown token": "sha256~wrong"}
	e := newEnv(t, okdsim.Options{})
	for pdesc, path := range paths {
		for tdesc, tok := range tokens {
			t.Run(pdesc+" with "+tdesc+" is a 401 Status", func(t *testing.T) {
				c := *e.c
				c.token = tok
				r := c.do("GET", path, nil).want(t, http.StatusUnauthorized)
				eq(t, "body", strings.TrimSpace(r.raw), unauthorized)
			})
		}
	}

	t.Run("a rotated token file makes the old token a 401 and the new one work", func(t *testing.T) {
		old := e.c.token
		r := e.c.do("GET", whoami, nil).want(t, http.StatusOK)
		eq(t, "kind", r.str("kind"), "User")
		eq(t, "apiVersion", r.str("apiVersion"), "user.openshift.io/v1")
		eq(t, "user", r.str("metadata", "name"), okdsim.DefaultUser)
		if err := e.sim.RotateToken("sha256~rotated"); err != nil {
			t.Fatal(err)
		}
		e.c.do("GET", whoami, nil).want(t, http.StatusUnauthorized)
		eq(t, "Token()", e.sim.Token(), "sha256~rotated")
		c := *e.c
		c.token = "sha256~rotated"
		c.do("GET", whoami, nil).want(t, http.StatusOK)
		t.Cleanup(func() { _ = e.sim.RotateToken(old) })
	})

	t.Run("a file written by another process is read on the next request, with its user as requester", func(t *testing.T) {
		if err := os.WriteFile(e.sim.TokenFile(), []byte("# rotated by the operator\nsha256~other bob\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.sim.RotateToken(okdsim.DefaultToken) })
		c := *e.c
		c.token = "sha256~other"
		name := e.uniqueName(t, "bob")
		r := c.requestProject(name, "", "", nil).want(t, http.StatusCreated)
		eq(t, "requester", r.str("metadata", "annotations", okdsim.RequesterAnnotation), "bob")
		eq(t, "users/~", c.do("GET", whoami, nil).want(t, http.StatusOK).str("metadata", "name"), "bob")
	})

	t.Run("the call log names tokens by id, never by value", func(t *testing.T) {
		e.sim.ResetCalls()
		c := *e.c
		c.token = "sha256~secret-value"
		c.do("GET", api+"/projects?limit=5", nil).want(t, http.StatusUnauthorized)
		calls := e.sim.Calls()
		if len(calls) != 1 {
			t.Fatalf("calls %+v, want 1", calls)
		}
		got := calls[0]
		eq(t, "token id", got.TokenID, okdsim.TokenID("sha256~secret-value"))
		eq(t, "query", got.Query, "limit=5")
		eq(t, "status", got.Status, http.StatusUnauthorized)
		b, _ := json.Marshal(calls)
		if strings.Contains(string(b), "secret-value") {
			t.Errorf("call log reveals the token: %s", b)
		}
	})
}

func TestOAuth(t *testing.T) {
	// The simulator's clock, moved on to expire the tokens it issued.
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	e := newEnv(t, okdsim.Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	form := func(v url.Values, user, pass string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.sim.URL()+"/oauth/token", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	good := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {okdsim.RefreshToken},
		"client_id": {okdsim.OAuthClientID}, "client_secret": {okdsim.OAuthClientSecret}}

	t.Run("a refresh token grant issues an access token the API accepts until it expires", func(t *testing.T) {
		resp, out := form(good, "", "")
		eq(t, "status", resp.StatusCode, http.StatusOK)
		tok, _ := out["access_token"].(string)
		eq(t, "token_type", out["token_type"], any("Bearer"))
		if tok == "" {
			t.Fatalf("no access token: %v", out)
		}
		c := *e.c
		c.token = tok
		c.do("GET", whoami, nil).want(t, http.StatusOK)
		clock.Add(int64(okdsim.OAuthTokenTTL + time.Second))
		c.do("GET", whoami, nil).want(t, http.StatusUnauthorized)
	})

	t.Run("client credentials as basic auth work too", func(t *testing.T) {
		v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {okdsim.RefreshToken}}
		resp, _ := form(v, okdsim.OAuthClientID, okdsim.OAuthClientSecret)
		eq(t, "status", resp.StatusCode, http.StatusOK)
	})

	rejected := map[string]struct {
		change func(url.Values)
		status int
		code   string
	}{
		"a wrong refresh token is invalid_grant":       {func(v url.Values) { v.Set("refresh_token", "nope") }, http.StatusBadRequest, "invalid_grant"},
		"a wrong client secret is unauthorized_client": {func(v url.Values) { v.Set("client_secret", "nope") }, http.StatusUnauthorized, "unauthorized_client"},
		"another grant type is unsupported_grant_type": {func(v url.Values) { v.Set("grant_type", "password") }, http.StatusBadRequest, "unsupported_grant_type"},
	}
	for desc, tc := range rejected {
		t.Run(desc, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = append([]string(nil), vs...)
			}
			tc.change(v)
			resp, out := form(v, "", "")
			eq(t, "status", resp.StatusCode, tc.status)
			eq(t, "error", out["error"], any(tc.code))
		})
	}
}
