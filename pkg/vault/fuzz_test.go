package vault

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"

	vaultapi "github.com/hashicorp/vault/api"

	"github.com/sitebus/sitebus/pkg/fault"
)

// maxErrorText bounds the text of an error made from a peer's answer: it
// reaches logs, traces and Waldur's order error, which a peer must not be
// able to flood.
const maxErrorText = 4096

// FuzzVaultErrorBody feeds Vault's error decoding (the vault/api client's
// own, as every call uses it) any failed answer: {"errors":[...]}, a
// sealed Vault's 503, an HTML page from a proxy, any bytes. The error must
// be of a fault kind, terminal exactly for 400, 401 and 403 (a token
// without the policy, a used secret-id), and of bounded length.
func FuzzVaultErrorBody(f *testing.F) {
	f.Add(403, []byte(`{"errors":["1 error occurred:\n\t* permission denied\n\n"]}`))
	f.Add(400, []byte(`{"errors":["invalid role or secret ID"]}`))
	f.Add(404, []byte(`{"errors":[]}`))
	f.Add(503, []byte(`{"errors":["Vault is sealed"]}`))
	f.Add(429, []byte(`{"errors":["request path \"secret/data/x\": rate limit quota exceeded"]}`))
	f.Add(502, []byte(`<html><body>Bad Gateway</body></html>`))
	f.Add(500, []byte(`{"errors":null}`))
	f.Add(502, bytes.Repeat([]byte("<p>proxy error page</p>"), 1000))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 400 || status > 999 {
			return // 2xx and 3xx are no error to the vault/api client
		}
		req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "vault.example", Path: "/v1/secret/data/rancher/cluster-x"}}
		resp := &vaultapi.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), Request: req}}
		err := classify("read secret", "secret/data/rancher/cluster-x", resp.Error())
		if err == nil {
			t.Fatalf("answer %d is no error", status)
		}
		k := fault.KindOf(err)
		if k == "" {
			t.Fatalf("answer %d gave an error of no kind: %v", status, err)
		}
		refused := status == 400 || status == 401 || status == 403
		if refused != fault.IsTerminal(err) {
			t.Fatalf("answer %d: kind %s, terminal %v", status, k, fault.IsTerminal(err))
		}
		if n := len(err.Error()); n > maxErrorText {
			t.Fatalf("answer of %d bytes made an error of %d bytes", len(body), n)
		}
	})
}

func TestALongErrorBodyIsQuotedShortened(t *testing.T) {
	page := bytes.Repeat([]byte("<p>proxy error page</p>"), 1000)
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "vault.example", Path: "/v1/sys/health"}}
	resp := &vaultapi.Response{Response: &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(page)), Request: req}}
	err := classify("read secret", "secret/data/x", resp.Error())
	if n := len(err.Error()); n > maxErrors+200 || fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("error of %d bytes (kind %q): want at most about %d and unavailable", n, fault.KindOf(err), maxErrors)
	}
}
