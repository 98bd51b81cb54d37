package rancher

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/fault"
)

// A Rancher (or a proxy in front of it) that answers badly: the call
// fails retryable, naming the cause, never as an empty success.
func TestABadAnswerIsARetryableErrorNotAnEmptyResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		ct   string
		body func(w io.Writer)
		want string
	}{
		{"a 200 with Rancher's error object is no cluster", "application/json",
			func(w io.Writer) {
				_, _ = io.WriteString(w, `{"type":"error","status":500,"code":"ServerError","message":"boom `+testSecretKey+`"}`)
			}, "error object (ServerError: boom [redacted]"},
		{"invalid JSON names the content type", "text/html",
			func(w io.Writer) { _, _ = io.WriteString(w, `<html>sign in</html>`) }, `Content-Type "text/html"`},
		{"an answer past the cap names the limit, not a cut body", "application/json",
			func(w io.Writer) {
				chunk := []byte(strings.Repeat(" ", 1<<20))
				for range maxBody>>20 + 1 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}, "64 MiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				tc.body(w)
			}))
			t.Cleanup(srv.Close)
			err := testBackend(t, srv, true).Ping(testCtx(t))
			if err == nil {
				t.Fatal("Ping succeeded")
			}
			if !errors.Is(err, fault.Unavailable) || fault.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (kind %q), want a retryable error saying %q", err, fault.KindOf(err), tc.want)
			}
			if strings.Contains(err.Error(), testSecretKey) {
				t.Errorf("err shows the secret key: %v", err)
			}
		})
	}
}
