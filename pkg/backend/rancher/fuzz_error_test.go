package rancher

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/fault"
)

// bodyTransport answers every request with one status and body.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

// FuzzRancherErrorBody feeds the Rancher client any error answer: norman's
// {"type":"error","code":...,"message":...}, the cluster proxy's
// Kubernetes Status, an HTML page, anything; the body may echo the secret
// key (SECRET stands for it) or the basic credentials (BASIC). A non-2xx
// answer must be an error of a fault kind (so the bus knows whether to
// retry it) that quotes neither the secret key nor the credentials.
func FuzzRancherErrorBody(f *testing.F) {
	f.Add(401, []byte(`{"type":"error","status":"401","message":"must authenticate"}`))
	f.Add(403, []byte(`{"type":"error","status":403,"code":"PermissionDenied","message":"projects.management.cattle.io is forbidden"}`))
	f.Add(404, []byte(`{"type":"error","status":404,"code":"NotFound","message":"projects \"c-test:p-x\" not found"}`))
	f.Add(409, []byte(`{"type":"error","status":409,"code":"AlreadyExists","message":"already exists"}`))
	f.Add(422, []byte(`{"type":"error","status":422,"code":"InvalidBodyContent","message":"SECRET"}`))
	f.Add(400, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Error from server (InternalError): x","reason":"BadRequest","code":400}`))
	f.Add(500, []byte(`{"type":"error","code":"SECRET","message":"Basic BASIC"}`))
	f.Add(502, []byte("<html>"+strings.Repeat("x", 500)+"SECRET</html>"))
	f.Add(503, []byte(``))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 300 || status > 999 {
			return
		}
		orig := body
		body = bytes.ReplaceAll(body, []byte("SECRET"), []byte(testSecretKey))
		basic := base64.StdEncoding.EncodeToString([]byte(testAccessKey + ":" + testSecretKey))
		body = bytes.ReplaceAll(body, []byte("BASIC"), []byte(basic))
		c := newAPIClient("https://rancher.example", testAccessKey, testSecretKey, true,
			func(http.RoundTripper) http.RoundTripper { return bodyTransport{status, body} }, slog.New(slog.DiscardHandler))
		var out map[string]any
		err := c.do(context.Background(), http.MethodGet, "/v3/projects/c-test:p-x", "", nil, &out)
		if err == nil {
			t.Fatalf("answer %d taken for a success", status)
		}
		if fault.KindOf(err) == "" {
			t.Fatalf("answer %d gave an error of no kind: %v", status, err)
		}
		msg := err.Error()
		for _, leak := range []string{testSecretKey, basic, testSecretKey[:len(testSecretKey)/2], testSecretKey[len(testSecretKey)/2:]} {
			// A fragment the fuzzer wrote itself is no leak.
			if strings.Contains(msg, leak) && !bytes.Contains(orig, []byte(leak)) {
				t.Fatalf("the error quotes the secret key or part of it: %v", msg)
			}
		}
	})
}

// Rancher (or a proxy) may echo the secret key in any field of its error
// body, or past the point where a long body is cut: the error holds none
// of it.
func TestErrorBodyEchoingTheSecretKeyIsRedacted(t *testing.T) {
	for name, body := range map[string]string{
		"in the code":             `{"type":"error","code":"` + testSecretKey + `","message":"x"}`,
		"across the cut at 512":   "<html>" + strings.Repeat("x", 500) + testSecretKey + "</html>",
		"in the message":          `{"type":"error","code":"Invalid","message":"key ` + testSecretKey + `"}`,
		"as the basic credential": "Basic " + base64.StdEncoding.EncodeToString([]byte(testAccessKey+":"+testSecretKey)),
	} {
		t.Run(name, func(t *testing.T) {
			c := newAPIClient("https://rancher.example", testAccessKey, testSecretKey, true,
				func(http.RoundTripper) http.RoundTripper {
					return bodyTransport{http.StatusInternalServerError, []byte(body)}
				}, slog.New(slog.DiscardHandler))
			err := c.do(t.Context(), http.MethodGet, "/v3/projects", "", nil, nil)
			if err == nil || strings.Contains(err.Error(), testSecretKey[:8]) || strings.Contains(err.Error(), testSecretKey[len(testSecretKey)-8:]) {
				t.Fatalf("error = %v, want no part of the secret key", err)
			}
		})
	}
}
