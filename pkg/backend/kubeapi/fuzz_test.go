package kubeapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/fault"
)

const fuzzBearer = "eyJhbGciOiJSUzI1NiJ9.fuzz-service-account-token"

// maxErrorText bounds the text of an error made from a peer's answer: it
// reaches logs, traces and Waldur's order error, which a peer must not be
// able to flood.
const maxErrorText = 4096

// statusTransport answers every request with one status, content type and
// body.
type statusTransport struct {
	status      int
	contentType string
	body        []byte
}

func (s statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: s.status, Header: http.Header{"Content-Type": {s.contentType}},
		Body: io.NopCloser(bytes.NewReader(s.body)), Request: r}, nil
}

// FuzzKubernetesErrorBody feeds client-go's answer decoding, and Kind on
// top of it, any failed answer of an API server (or of a proxy in front
// of one): a metav1.Status of any reason and code, an HTML page, any
// bytes, as JSON or not. Whatever comes back, a failed call has a fault
// kind (Kind never leaves one unclassified), a 5xx is terminal only when
// its Status body gives a request-is-wrong reason, and the message is of
// bounded length. (client-go quotes a non-Status body as it came; the
// service account's token is not known where the message is made, so a
// proxy echoing it is not defended here: see the threat model.)
func FuzzKubernetesErrorBody(f *testing.F) {
	f.Add(404, "application/json", []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"waldur-x\" not found","reason":"NotFound","details":{"name":"waldur-x","kind":"namespaces"},"code":404}`))
	f.Add(409, "application/json", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Operation cannot be fulfilled","reason":"Conflict","code":409}`))
	f.Add(422, "application/json", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"ResourceQuota \"q\" is invalid","reason":"Invalid","code":422}`))
	f.Add(403, "application/json", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"system:serviceaccount:x\" cannot get","reason":"Forbidden","code":403}`))
	f.Add(500, "text/html", []byte(`<html><body>Bad Gateway</body></html>`))
	f.Add(200, "application/json", []byte(`{"kind":"Status","status":"Failure","reason":"NotFound","code":500}`))
	f.Add(200, "application/json", []byte(`not json`))
	f.Add(401, "application/json", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		if status < 200 || status > 999 || strings.ContainsAny(contentType, "\r\n") {
			return
		}
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://kube.example", BearerToken: fuzzBearer,
			Transport: statusTransport{status, contentType, body}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Namespaces().Get(context.Background(), "waldur-x", metav1.GetOptions{})
		if err == nil {
			return // a 2xx that decodes as a namespace
		}
		k := Kind(err)
		if k == "" {
			t.Fatalf("answer %d gave no kind: %v", status, err)
		}
		if k.Terminal() && status >= 500 && status != 501 {
			// 5xx is the server's trouble; only a Status body that says
			// otherwise in its reason may make it terminal.
			if !bytes.Contains(body, []byte(`"reason"`)) && !bytes.Contains(body, []byte("reason")) {
				t.Fatalf("answer %d without a reason made terminal (%s): %v", status, k, err)
			}
		}
		wrapped := &Error{Kind: k, Msg: "Failed to get ManagedNamespace waldur-x: " + err.Error(), Err: err}
		if fault.KindOf(wrapped) != k {
			t.Fatalf("wrapping lost the kind %s", k)
		}
		if n := len(err.Error()); n > maxErrorText {
			t.Fatalf("answer of %d bytes made an error of %d bytes", len(body), n)
		}
	})
}
