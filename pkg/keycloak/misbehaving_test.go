package keycloak

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// A Keycloak (or a proxy in front of it) that answers an admin call badly:
// the call fails retryable, naming the cause, never as an empty success,
// which gocloak would make of a non-JSON 200 or a 200 error object.
func TestABadAnswerIsARetryableErrorNotAnEmptySuccess(t *testing.T) {
	const password = "kc-admin-password-123"
	for _, tc := range []struct {
		name string
		ct   string
		body func(w io.Writer)
		want string
	}{
		{"a 200 sign-in page is not Keycloak's JSON", "text/html",
			func(w io.Writer) { _, _ = io.WriteString(w, `<html>sign in</html>`) }, `Content-Type "text/html" is not Keycloak's JSON`},
		{"a 200 with Keycloak's error object is no group", "application/json",
			func(w io.Writer) { _, _ = io.WriteString(w, `{"error":"unknown_error"}`) }, "error object"},
		{"an answer past the cap names the limit", "application/json",
			func(w io.Writer) {
				chunk := []byte(strings.Repeat(" ", 1<<20))
				for range httpbody.MaxBody>>20 + 1 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}, "64 MiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/protocol/openid-connect/token") {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"access_token":"tok","expires_in":300,"token_type":"Bearer"}`)
					return
				}
				w.Header().Set("Content-Type", tc.ct)
				tc.body(w)
			}))
			t.Cleanup(srv.Close)
			c, err := New(Config{URL: srv.URL + "/", Username: "admin", Password: password, MaxAttempts: 1,
				Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			g, err := c.GetGroup(t.Context(), "g1")
			if err == nil {
				t.Fatalf("GetGroup = %+v, want an error", g)
			}
			if !errors.Is(err, fault.Unavailable) || fault.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (kind %q), want a retryable error saying %q", err, fault.KindOf(err), tc.want)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("err shows the password: %v", err)
			}
		})
	}
}
