package keycloak

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/fault"
)

const fuzzPassword = "kc-admin-S3CRET-password"

// keycloakAnswers logs the admin in (unless the login itself is what is
// fuzzed) and answers every other call with one status and body.
type keycloakAnswers struct {
	login  bool
	status int
	body   []byte
}

func (k keycloakAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	status, body := k.status, k.body
	if strings.HasSuffix(r.URL.Path, "/protocol/openid-connect/token") && !k.login {
		status, body = http.StatusOK, []byte(`{"access_token":"at","expires_in":300,"refresh_token":"rt","token_type":"Bearer"}`)
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// FuzzKeycloakErrorBody feeds the Keycloak client any failed answer, to
// the login or to an admin call: Keycloak's {"error":...,
// "error_description":...} and {"errorMessage":...}, an HTML page, any
// bytes; the body may echo the admin's password (PASSWORD stands for it).
// Every such call must end in an error of a fault kind, terminal exactly
// for the refusals no retry changes, that never quotes the password and
// is of bounded length.
func FuzzKeycloakErrorBody(f *testing.F) {
	f.Add(false, 404, []byte(`{"error":"Could not find group by id"}`))
	f.Add(false, 409, []byte(`{"errorMessage":"Top level group named 'c_x' already exists."}`))
	f.Add(false, 403, []byte(`{"error":"unknown_error"}`))
	f.Add(false, 500, []byte(`<html><body>Internal Server Error</body></html>`))
	f.Add(true, 401, []byte(`{"error":"invalid_grant","error_description":"Invalid user credentials"}`))
	f.Add(true, 400, []byte(`{"error":"invalid_request","error_description":"password PASSWORD rejected"}`))
	f.Add(true, 200, []byte(`not json`))
	f.Add(false, 200, []byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, login bool, status int, body []byte) {
		if status < 100 || status > 999 {
			return
		}
		orig := body
		body = bytes.ReplaceAll(body, []byte("PASSWORD"), []byte(fuzzPassword))
		c, err := New(Config{URL: "https://keycloak.example", Realm: "hpc", UserRealm: "master", ClientID: "admin-cli",
			Username: "waldur-agent", Password: fuzzPassword, MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler),
			WrapTransport: func(http.RoundTripper) http.RoundTripper { return keycloakAnswers{login, status, body} }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetGroup(context.Background(), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
		if err == nil {
			// GetGroup answers nil for a group that is not there.
			if status >= 300 && (status != http.StatusNotFound || login) {
				t.Fatalf("answer %d taken for a success", status)
			}
			return
		}
		if fault.KindOf(err) == "" {
			t.Fatalf("answer %d gave an error of no kind: %v", status, err)
		}
		if status >= 500 || status == http.StatusTooManyRequests {
			if fault.IsTerminal(err) && !login {
				t.Fatalf("Keycloak busy (%d) made terminal: %v", status, err)
			}
		}
		if strings.Contains(err.Error(), fuzzPassword) && !bytes.Contains(orig, []byte(fuzzPassword)) {
			t.Fatalf("the error quotes the password: %v", err)
		}
		// Keycloak's text at most maxMessage, plus the call and a hint.
		if n := len(err.Error()); n > 2*maxMessage {
			t.Fatalf("answer of %d bytes made an error of %d bytes", len(body), n)
		}
	})
}

// A login refused with a body that echoes the password (a proxy quoting
// the request, say) must not carry it into the error, which reaches logs
// and Waldur's order error.
func TestLoginErrorNeverQuotesThePassword(t *testing.T) {
	body := []byte(`{"error":"invalid_request","error_description":"password ` + fuzzPassword + ` rejected"}`)
	c, err := New(Config{URL: "https://keycloak.example", Realm: "hpc", UserRealm: "master", ClientID: "admin-cli",
		Username: "waldur-agent", Password: fuzzPassword, MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler),
		WrapTransport: func(http.RoundTripper) http.RoundTripper { return keycloakAnswers{true, http.StatusBadRequest, body} }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetGroup(t.Context(), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
	if err == nil || strings.Contains(err.Error(), fuzzPassword) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error = %v, want the password redacted", err)
	}
	if !errors.Is(err, ErrCredentials) {
		t.Fatalf("error %v is not ErrCredentials", err)
	}
}

// A failed answer with a huge error text (a broken Keycloak's, a proxy's)
// is quoted at most maxMessage long, with the password removed even where
// the cut would split it, and the login's hint after the cut text.
func TestALongErrorBodyIsQuotedShortenedAndRedacted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		login    bool
		status   int
		wantHint string
	}{
		{"an admin call answered 500", false, http.StatusInternalServerError, ""},
		{"a login answered 400", true, http.StatusBadRequest, "(check keycloak_username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The password straddles byte maxMessage of the message.
			text := strings.Repeat("x", maxMessage-len(fuzzPassword)/2) + fuzzPassword + strings.Repeat("y", 4<<10)
			body := []byte(`{"error":"` + text + `"}`)
			c, err := New(Config{URL: "https://keycloak.example", Realm: "hpc", UserRealm: "master", ClientID: "admin-cli",
				Username: "waldur-agent", Password: fuzzPassword, MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler),
				WrapTransport: func(http.RoundTripper) http.RoundTripper { return keycloakAnswers{tc.login, tc.status, body} }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.GetGroup(t.Context(), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
			if err == nil {
				t.Fatal("GetGroup succeeded")
			}
			msg := err.Error()
			if len(msg) > maxMessage+200 || !strings.Contains(msg, "…(truncated)") || !strings.Contains(msg, tc.wantHint) {
				t.Fatalf("error of %d bytes, want at most about %d, marked cut, with %q: %.200s…", len(msg), maxMessage, tc.wantHint, msg)
			}
			if strings.Contains(msg, fuzzPassword[:len(fuzzPassword)/2]) {
				t.Fatalf("the error quotes part of the password: %v", err)
			}
		})
	}
}

// gocloak takes any status below 400 for a success; a 3xx that net/http
// did not follow (a proxy's, without Location) must be an error, or an
// empty answer would pass for a group (or a token).
func TestAThreeHundredAnswerIsAnErrorNotAnEmptySuccess(t *testing.T) {
	for name, login := range map[string]bool{"to an admin call": false, "to the login": true} {
		t.Run(name, func(t *testing.T) {
			c, err := New(Config{URL: "https://keycloak.example", Realm: "hpc", UserRealm: "master", ClientID: "admin-cli",
				Username: "waldur-agent", Password: fuzzPassword, MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler),
				WrapTransport: func(http.RoundTripper) http.RoundTripper { return keycloakAnswers{login, 302, []byte(`{}`)} }})
			if err != nil {
				t.Fatal(err)
			}
			g, err := c.GetGroup(t.Context(), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
			if err == nil || fault.KindOf(err) == "" {
				t.Fatalf("GetGroup = %+v, %v; want an error of a fault kind", g, err)
			}
		})
	}
}

// A token endpoint that answers 404 (a wrong keycloak_url or user realm)
// fails the call as a refusal; before, its not-found kind let GetGroup
// read it as "no such group" and answer nil, a login failure passing for
// a success (found by FuzzKeycloakErrorBody).
func TestALoginAnswered404IsARefusalNotAMissingGroup(t *testing.T) {
	c, err := New(Config{URL: "https://keycloak.example", Realm: "hpc", UserRealm: "master", ClientID: "admin-cli",
		Username: "waldur-agent", Password: fuzzPassword, MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler),
		WrapTransport: func(http.RoundTripper) http.RoundTripper {
			return keycloakAnswers{true, http.StatusNotFound, []byte("{}")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.GetGroup(context.Background(), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
	if err == nil {
		t.Fatalf("GetGroup = %v, nil: the failed login passed for a success", g)
	}
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "keycloak_user_realm") {
		t.Fatalf("err = %v (kind %q), want a refusal naming keycloak_user_realm", err, fault.KindOf(err))
	}
}
