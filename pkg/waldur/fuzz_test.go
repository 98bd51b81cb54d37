package waldur

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/fault"
)

const fuzzToken = "0123456789abcdef-waldur-token"

// answerTransport answers every request with one status, Link header and
// body, as a Waldur (or whatever sits at waldur_api_url) may; it records
// what was asked and stops a pagination that never ends after a few pages.
type answerTransport struct {
	status   int
	link     string
	body     []byte
	requests []*http.Request
}

func (a *answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	a.requests = append(a.requests, r)
	status, body := a.status, a.body
	if len(a.requests) > 20 {
		status, body = http.StatusServiceUnavailable, nil
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if a.link != "" {
		h.Set("Link", a.link)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// FuzzWaldurAnswer feeds the Waldur client any answer to a list (with its
// RFC 8288 Link pagination) and to a get: status, Link header, body; the
// body may quote the client's own token (the text TOKEN stands for it).
// Properties:
//   - every request, whatever the Link headers say, goes to the configured
//     scheme and host with no user info, so the token never leaves for
//     another host;
//   - a non-2xx answer is an error of a fault kind, retryable when Waldur
//     is busy (429, 5xx) or the answer is one callers handle (404, 409),
//     terminal for any other refusal;
//   - no error quotes the token.
func FuzzWaldurAnswer(f *testing.F) {
	order := `{"uuid":"0f1e2d3c4b5a69788796a5b4c3d2e1f0","type":"Create","state":"executing","resource_uuid":"11111111222233334444555555555555",` +
		`"offering_uuid":"0123456789abcdef0123456789abcdef","project_slug":"physics","customer_slug":"ut","limits":{"cpu":4},"attributes":{"name":"x"},` +
		`"created":"2026-11-26T10:00:00Z","modified":"2026-11-26T10:00:00Z"}`
	f.Add(200, ``, []byte(`[`+order+`]`))
	f.Add(200, `<https://waldur.example/api/marketplace-orders/?page=2&page_size=100>; rel="next"`, []byte(`[`+order+`]`))
	f.Add(200, `<https://evil.example/steal?page=2>; rel="next"`, []byte(`[]`))
	f.Add(200, `<//evil.example/x>; rel="next", <https://user:pw@waldur.example/api/x>; rel="next"`, []byte(`[]`))
	f.Add(200, `<a/>; rel="next"`, []byte(`[]`))
	f.Add(400, ``, []byte(`{"detail":"Invalid token TOKEN."}`))
	f.Add(401, ``, []byte(`{"detail":"Invalid token."}`))
	f.Add(404, ``, []byte(`{"detail":"Not found."}`))
	f.Add(429, ``, []byte(`{"detail":"Request was throttled."}`))
	f.Add(502, ``, []byte(`<html><body>Bad Gateway</body></html>`))
	f.Add(200, ``, []byte(`<html>login</html>`))
	f.Add(302, ``, []byte(``))
	f.Fuzz(func(t *testing.T, status int, link string, body []byte) {
		if status < 100 || status > 999 || strings.ContainsAny(link, "\r\n\x00") {
			return // net/http can carry neither
		}
		body = bytes.ReplaceAll(body, []byte("TOKEN"), []byte(fuzzToken))
		tr := &answerTransport{status: status, link: link, body: body}
		c, err := New(Config{APIURL: "https://waldur.example/api/", Token: fuzzToken,
			HTTPClient: &http.Client{Transport: tr}, Retry: RetryPolicy{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		_, lerr := c.ListOrders(ctx, OrderFilter{})
		_, gerr := c.GetOrder(ctx, "0f1e2d3c4b5a69788796a5b4c3d2e1f0")
		for _, r := range tr.requests {
			if r.URL.Scheme != "https" || r.URL.Host != "waldur.example" || r.URL.User != nil {
				t.Fatalf("a request went to %s", r.URL.Redacted())
			}
		}
		for _, err := range []error{lerr, gerr} {
			if err == nil {
				continue
			}
			if strings.Contains(err.Error(), fuzzToken) {
				t.Fatalf("the token is in the error: %v", err)
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				continue // a transport or decoding failure, or too many pages
			}
			k := fault.KindOf(err)
			busy := ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500
			// 404 and 409 are answers the caller handles, retried when
			// it does not (see package fault); any other status is a
			// refusal.
			answer := ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusConflict
			if k == "" || (busy || answer) == fault.IsTerminal(err) {
				t.Fatalf("answer %d became kind %q, terminal %v", ae.StatusCode, k, fault.IsTerminal(err))
			}
		}
		if status >= 300 && (lerr == nil || gerr == nil) {
			if len(tr.requests) <= 20 {
				t.Fatalf("answer %d was taken for a success", status)
			}
		}
	})
}
