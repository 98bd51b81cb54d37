package openstack

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/sitebus/sitebus/pkg/fault"
)

// maxErrorText bounds the text of an error made from a peer's answer: it
// reaches logs, traces and Waldur's order error, which a peer must not be
// able to flood.
const maxErrorText = 4096

// FuzzOpenStackErrorBody feeds the error decoding of every OpenStack
// service any failed answer: Neutron's {"NeutronError":{...}}, Nova's and
// Cinder's {"<kind>":{"code","message"}}, Keystone's {"error":{...}},
// Glance's plain text, a proxy's HTML, any bytes. The error must have a
// fault kind, be terminal exactly as Error's comment says (400, 401, 403,
// 404, 413, a quota, an address someone holds), and have bounded length.
func FuzzOpenStackErrorBody(f *testing.F) {
	f.Add(409, []byte(`{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['network'].", "detail": ""}}`))
	f.Add(409, []byte(`{"NeutronError": {"type": "IpAddressAlreadyAllocated", "message": "IP address 192.168.42.10 already allocated in subnet x", "detail": ""}}`))
	f.Add(403, []byte(`{"forbidden": {"code": 403, "message": "Quota exceeded for cores: Requested 8, but already used 20 of 20 cores"}}`))
	f.Add(404, []byte(`{"itemNotFound": {"code": 404, "message": "Instance could not be found."}}`))
	f.Add(401, []byte(`{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`))
	f.Add(413, []byte(`{"overLimit": {"code": 413, "message": "VolumeLimitExceeded"}}`))
	f.Add(503, []byte("<html><body><h1>503 Service Unavailable</h1></body></html>"))
	f.Add(502, bytes.Repeat([]byte("<p>proxy error page</p>"), 1000))
	f.Add(400, []byte(`{"message": "400 Bad Request\n\nInvalid image", "code": "400 Bad Request", "title": "Bad Request"}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 300 || status > 999 {
			return
		}
		err := classify("create network", "network os-tenant-x-int-net", gophercloud.ErrUnexpectedResponseCode{
			Method: http.MethodPost, URL: "https://neutron.example/v2.0/networks", Expected: []int{201}, Actual: status, Body: body})
		k := fault.KindOf(err)
		if k == "" {
			t.Fatalf("answer %d gave an error of no kind: %v", status, err)
		}
		busy := status >= 500 || status == http.StatusTooManyRequests
		if busy && fault.IsTerminal(err) && !IsQuota(err) {
			t.Fatalf("OpenStack busy (%d) made terminal: %v", status, err)
		}
		if refused := status == 400 || status == 401 || status == 403 || status == 404 || status == 413; refused && !fault.IsTerminal(err) {
			t.Fatalf("refusal %d made retryable: %v", status, err)
		}
		if n := len(err.Error()); n > maxErrorText {
			t.Fatalf("answer of %d bytes made an error of %d bytes", len(body), n)
		}
	})
}

func TestALongErrorBodyIsQuotedShortened(t *testing.T) {
	page := bytes.Repeat([]byte("<p>proxy error page</p>"), 1000)
	err := classify("create network", "network x", gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusBadGateway, Body: page})
	if n := len(err.Error()); n > maxMessage+200 || fault.KindOf(err) != fault.Unavailable {
		t.Fatalf("error of %d bytes (kind %q): want at most about %d and unavailable", n, fault.KindOf(err), maxMessage)
	}
}
