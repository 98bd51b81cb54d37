package waldur

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/fault"
)

// A Waldur (or a proxy in front of it) that answers a read badly: the
// call fails retryable, naming the cause, never as an empty success.
func TestABadAnswerToAReadIsARetryableErrorNotAnEmptyResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		ct   string
		body func(w io.Writer)
		want string
	}{
		{"a 200 with Waldur's error object is no order", "application/json",
			func(w io.Writer) { _, _ = io.WriteString(w, `{"detail": "Server error."}`) }, "error object"},
		{"invalid JSON names the content type", "text/html",
			func(w io.Writer) { _, _ = io.WriteString(w, `<html>sign in</html>`) }, `Content-Type "text/html"`},
		{"an answer past the cap names the limit, not a cut body", "application/json",
			func(w io.Writer) {
				chunk := []byte(strings.Repeat(" ", 1<<20))
				for range maxResponseBody>>20 + 1 {
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
			c := newTestClient(t, srv.URL, func(c *Config) { c.Retry.MaxAttempts = 1 })
			o, err := c.GetOrder(t.Context(), "o1")
			if err == nil {
				t.Fatalf("GetOrder = %+v, want an error", o)
			}
			if !errors.Is(err, fault.Unavailable) || fault.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (kind %q), want a retryable error saying %q", err, fault.KindOf(err), tc.want)
			}
		})
	}
}

// Waldur's actions (approve_by_provider, set_state_done) succeed with a
// {"detail": ...} of their own; only reads refuse one.
func TestAnActionAnsweredWithADetailSucceeds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, `{"detail": "Order has been approved."}`)
	}))
	t.Cleanup(srv.Close)
	if err := newTestClient(t, srv.URL).ApproveOrderByProvider(t.Context(), "o1"); err != nil {
		t.Fatal(err)
	}
}
