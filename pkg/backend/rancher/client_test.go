package rancher

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/fault"
)

const (
	testAccessKey = "token-abcde"
	testSecretKey = "very-secret-key-123"
)

// testBackend is a backend on srv, cluster c-test.
func testBackend(t *testing.T, srv *httptest.Server, verify bool) *Backend {
	t.Helper()
	return testBackendAt(t, srv.URL, verify)
}

func testBackendAt(t *testing.T, url string, verify bool) *Backend {
	t.Helper()
	s, err := DecodeSettings(map[string]any{"backend_url": url, "username": testAccessKey, "password": testSecretKey,
		"cluster_id": "c-test", "verify_cert": verify})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(s, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clusterServer answers GET /v3/clusters/c-test as Rancher does.
func clusterServer(t *testing.T, tls bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c-test","type":"cluster","name":"test","state":"active"}`)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestTLSVerification(t *testing.T) {
	srv := clusterServer(t, true) // a certificate no system root signs
	err := testBackend(t, srv, true).Ping(testCtx(t))
	if !errors.Is(err, fault.Rejected) || !fault.IsTerminal(err) || !strings.Contains(err.Error(), "verify_cert") {
		t.Errorf("Ping with verification on: err = %v, want a terminal certificate error naming verify_cert", err)
	}
	if err := testBackend(t, srv, false).Ping(testCtx(t)); err != nil {
		t.Errorf("Ping with verify_cert: false: %v", err)
	}
}

func TestRequestsCarryRanchersHeadersAndTheRawFilterQuery(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		_, _ = io.WriteString(w, `{"type":"collection","data":[]}`)
	}))
	t.Cleanup(srv.Close)
	b := testBackend(t, srv, true)
	if _, err := b.api.findBindings(testCtx(t), "workloads-manage", "c-test:p-abc", GroupPrincipalID("project_x_workloads-manage")); err != nil {
		t.Fatal(err)
	}
	want := "roleTemplateId=workloads-manage&projectId=c-test:p-abc&groupPrincipalId=keycloakoidc_group://project_x_workloads-manage"
	if got.URL.RawQuery != want || got.URL.Path != "/v3/projectroletemplatebindings" {
		t.Errorf("request %s?%s, want the query unencoded: %s", got.URL.Path, got.URL.RawQuery, want)
	}
	user, pass, ok := got.BasicAuth()
	if !ok || user != testAccessKey || pass != testSecretKey {
		t.Errorf("basic auth %q %v", user, ok)
	}
	if got.Header.Get("Accept") != "application/json" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", got.Header)
	}
}

func TestErrorClassification(t *testing.T) {
	tests := map[string]struct {
		status    int
		body      string
		kind      fault.Kind // fault.KindOf
		terminal  bool
		fragments []string
	}{
		"401 with Rancher's body is terminal and names the access key": {
			status: 401, body: `{"type":"error","status":"401","message":"must authenticate"}`,
			kind: fault.Credentials, terminal: true,
			fragments: []string{`Rancher refused access key "token-abcde"`, "401 Unauthorized: must authenticate", "backend_settings.username"},
		},
		"403 is a terminal refusal": {
			status: 403, body: `{"type":"error","status":403,"code":"Forbidden","message":"projects is forbidden"}`,
			kind: fault.Rejected, terminal: true, fragments: []string{"403 Forbidden Forbidden: projects is forbidden"},
		},
		"a body that echoes the secret key has it redacted": {
			status: 401, body: `{"type":"error","message":"bad key token-abcde:very-secret-key-123 (dG9rZW4tYWJjZGU6dmVyeS1zZWNyZXQta2V5LTEyMw==)"}`,
			kind: fault.Credentials, terminal: true, fragments: []string{"[redacted] ([redacted])"},
		},
		"404 is not found": {
			status: 404, body: `{"type":"error","status":404,"code":"NotFound","message":"projects.management.cattle.io \"p-x\" not found"}`,
			kind: fault.NotFound, fragments: []string{`404 Not Found NotFound: projects.management.cattle.io "p-x" not found`},
		},
		"409 is a retryable conflict": {
			status: 409, body: `{"type":"error","status":409,"code":"AlreadyExists","message":"exists"}`,
			kind: fault.Conflict, fragments: []string{"409 Conflict AlreadyExists: exists"},
		},
		"422 is invalid and terminal": {
			status: 422, body: `{"type":"error","status":422,"code":"MissingRequired","fieldName":"name"}`,
			kind: fault.Invalid, terminal: true, fragments: []string{"422 Unprocessable Entity MissingRequired"},
		},
		"an importYaml refused by the API server as invalid is terminal": {
			status: 400, body: `{"type":"importYamlOutput","message":"Error from server (Invalid): error when creating \"resourcequota/custom-resource-quota\": bad quantity\n"}`,
			kind: fault.Invalid, terminal: true, fragments: []string{"bad quantity"},
		},
		"an importYaml failing inside the API server is retryable": {
			status: 400, body: `{"type":"importYamlOutput","message":"Error from server (InternalError): error when creating \"resourcequota/custom-resource-quota\": etcd\n"}`,
			kind: fault.Unavailable, fragments: []string{"InternalError"},
		},
		"500 is retryable": {status: 500, kind: fault.Unavailable, body: `{"type":"error","status":500,"code":"ServerError","message":"boom"}`, fragments: []string{"500 Internal Server Error ServerError: boom"}},
		"503 from an ingress without a JSON body is retryable": {status: 503, kind: fault.Unavailable, body: "<html>upstream unavailable</html>", fragments: []string{"<html>upstream unavailable</html>"}},
		"429 is retryable": {status: 429, kind: fault.Unavailable, body: "", fragments: []string{"429 Too Many Requests"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			b := testBackend(t, srv, true)
			err := b.api.importYAML(testCtx(t), "waldur-x", "apiVersion: v1\n")
			if err == nil {
				t.Fatal("no error")
			}
			if got := fault.KindOf(err); got != tc.kind {
				t.Errorf("kind %q, want %q", got, tc.kind)
			}
			if fault.IsTerminal(err) != tc.terminal {
				t.Errorf("IsTerminal = %v", !tc.terminal)
			}
			for _, f := range tc.fragments {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q lacks %q", err, f)
				}
			}
			if strings.Contains(err.Error(), testSecretKey) {
				t.Errorf("the secret key is in %q", err)
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Status != tc.status {
				t.Errorf("%T %+v is no *APIError with status %d", err, apiErr, tc.status)
			}
		})
	}
}

func TestNoAnswerIsRetryable(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	// Port 1: nothing listens there, and no other test can take it.
	for name, url := range map[string]string{"a hanging server": hang.URL, "a closed port": "http://127.0.0.1:1"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
			defer cancel()
			err := testBackendAt(t, url, true).Ping(ctx)
			if err == nil || fault.IsTerminal(err) || errors.Is(err, backend.ErrNotFound) {
				t.Errorf("err = %v, want a retryable error", err)
			}
		})
	}
}
