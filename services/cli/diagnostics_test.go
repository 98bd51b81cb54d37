package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeWaldur answers the calls diagnostics makes; only secretToken is valid.
func fakeWaldur(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/version/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"version":"7.7.0"}`) })
	authed := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Token "+secretToken {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"detail":"Invalid token."}`)
				return
			}
			_, _ = io.WriteString(w, body)
		}
	}
	mux.HandleFunc("GET /api/users/me/", authed(`{"uuid":"u1","username":"provider"}`))
	mux.HandleFunc("GET /api/marketplace-provider-offerings/{uuid}/", authed(`{"uuid":"o1","name":"K8s","state":"Active","customer_name":"Site","components":[]}`))
	mux.HandleFunc("GET /api/marketplace-site-agent-identities/", authed(`[]`))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// fakeRancher refuses every key as Rancher does.
func fakeRancher(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type":"error","status":"401","message":"must authenticate"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func diagConfig(t *testing.T, waldurURL, token, rancherURL string) string {
	t.Helper()
	return writeConfig(t,
		"offerings:",
		"  - name: rancher",
		"    waldur_api_url: "+waldurURL+"/api/",
		"    waldur_api_token: "+token,
		"    waldur_offering_uuid: 7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8",
		"    backend_type: rancher",
		"    order_processing_backend: rancher",
		"    backend_settings:",
		"      backend_url: "+rancherURL,
		"      username: token-abcde",
		"      password: "+secretOIDC,
		"      cluster_id: c-m-1234",
		"      keycloak_enabled: true",
		"      keycloak:",
		"        keycloak_url: http://127.0.0.1:1/auth/",
		"        keycloak_username: sitebus",
		"        keycloak_password: "+secretKeycloak,
		"sitebus:",
		"  data_dir: "+t.TempDir(),
	)
}

func runDiag(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := New("test")
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"diagnostics", "--timeout", "5s"}, args...))
	err := cmd.ExecuteContext(context.Background())
	s := out.String()
	if err != nil {
		s += err.Error()
	}
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("secret %q printed:\n%s", sec, s)
		}
	}
	return s, err
}

func TestDiagnosticsNamesEachProblem(t *testing.T) {
	waldurURL, rancherURL := fakeWaldur(t), fakeRancher(t)
	tests := map[string]struct {
		token string
		want  []string
	}{
		"a good token: Waldur passes, the Rancher key and Keycloak fail": {
			token: secretToken,
			want: []string{
				"ok   waldur token: token accepted: user provider",
				"ok   waldur offering: offering \"K8s\" of Site",
				"ok   agent identity: no identity agent-7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8 yet",
				"ok   nats: embedded NATS server",
				`FAIL backend rancher: Rancher refused access key "token-abcde" (401`,
				"fix: check backend_settings.username (the access key token-abcde) and password",
				"FAIL keycloak token: Keycloak at http://127.0.0.1:1/auth/ did not give a token",
			},
		},
		"a wrong token is named": {
			token: secretFileTok,
			want:  []string{"FAIL waldur token: Waldur refused the token (401 Unauthorized)", "fix: check waldur_api_token"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := runDiag(t, "-c", diagConfig(t, waldurURL, tc.token, rancherURL))
			if err == nil {
				t.Errorf("diagnostics passed:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDiagnosticsJSON(t *testing.T) {
	out, err := runDiag(t, "-c", diagConfig(t, fakeWaldur(t), secretToken, fakeRancher(t)), "--output", "json")
	if err == nil {
		t.Fatal("diagnostics passed")
	}
	var doc struct {
		OK     bool          `json:"ok"`
		Checks []checkResult `json:"checks"`
	}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	byCheck := map[string]checkResult{}
	for _, c := range doc.Checks {
		byCheck[c.Check] = c
	}
	if doc.OK || !byCheck["waldur token"].OK || byCheck["backend rancher"].OK || byCheck["backend rancher"].Fix == "" ||
		byCheck["backend rancher"].Offering != "rancher (7f3a1c2e9b4d4e8fa1b2c3d4e5f6a7b8)" {
		t.Errorf("checks: %+v", doc)
	}
}

func TestDiagnosticsRefusesABadConfigLikeRun(t *testing.T) {
	out, err := runDiag(t, "-c", writeConfig(t, withOffering("    verify_ssl: maybe")...))
	if err == nil || !strings.Contains(out, "verify_ssl") {
		t.Errorf("err %v:\n%s", err, out)
	}
}
