package statuspage

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
)

func TestHandlerAccess(t *testing.T) {
	tests := map[string]struct {
		addr, token, auth string
		want              int
	}{
		"loopback is open without a token":          {addr: "127.0.0.1:9090", want: http.StatusOK},
		"IPv6 loopback is open":                     {addr: "[::1]:9090", want: http.StatusOK},
		"localhost is open":                         {addr: "localhost:9090", want: http.StatusOK},
		"loopback ignores a configured token":       {addr: "127.0.0.1:9090", token: "s3cret", want: http.StatusOK},
		"every interface without a token is off":    {addr: "0.0.0.0:9090", auth: "Bearer anything", want: http.StatusNotFound},
		"an empty host is every interface":          {addr: ":9090", want: http.StatusNotFound},
		"a token is needed when one is configured":  {addr: "0.0.0.0:9090", token: "s3cret", want: http.StatusUnauthorized},
		"a wrong token is refused":                  {addr: "0.0.0.0:9090", token: "s3cret", auth: "Bearer s3cre", want: http.StatusUnauthorized},
		"a longer token is refused":                 {addr: "0.0.0.0:9090", token: "s3cret", auth: "Bearer s3cret2", want: http.StatusUnauthorized},
		"the token as a password is refused":        {addr: "10.0.0.1:9090", token: "s3cret", auth: "Basic czNjcmV0", want: http.StatusUnauthorized},
		"the right bearer token is accepted":        {addr: "0.0.0.0:9090", token: "s3cret", auth: "Bearer s3cret", want: http.StatusOK},
		"the scheme is case-insensitive (RFC 7235)": {addr: "0.0.0.0:9090", token: "s3cret", auth: "bearer s3cret", want: http.StatusOK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := Handler(HandlerConfig{Addr: tc.addr, Token: tc.token, Load: func(context.Context) View { return View{Refresh: 15} }})
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+Path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.token != "" && strings.Contains(string(body), tc.token) {
				t.Errorf("the answer shows the token: %s", body)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// What peers and stores wrote reaches the page redacted and escaped.
func TestPageRedactsAndEscapes(t *testing.T) {
	const secret = "waldur-t0ken"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	parked := saga.Saga{ID: "order-0123", Definition: "rancher-project-create", Status: saga.StatusParked,
		Created: now.Add(-time.Minute), Updated: now,
		Error:      "step groups failed: Keycloak said <script>alert(1)</script> with token " + secret,
		ParkReason: "compensation of step object failed (not retryable): 403 for " + secret,
		Steps:      []saga.StepState{{Name: "object", Status: saga.StepFailed, Attempts: 1, CompensationError: "403 " + secret}}}
	h := Health{OfferingUUID: "abc", Checked: now.Add(-10 * time.Second), Published: now.Add(-2 * time.Second), Publisher: "sitebus-1",
		Checks: []Check{{Name: "waldur token", OK: false, Detail: "Waldur refused " + secret}},
		Stomp:  []contract.StompSession{{OfferingUUID: "abc", ObjectType: "order", Connected: true, LastFrame: now.Add(-90 * time.Second)}}}
	d := contract.DriftReport{OfferingUUID: "abc", Checked: now, Publisher: "sitebus-1", Findings: []contract.DriftFinding{
		{Kind: contract.DriftLimits, Resource: "r-1", Object: "ns-alpha", Want: "cpu=4", Have: "cpu=40", Repaired: true},
		{Kind: contract.DriftMembers, Resource: "r-1", Object: "ns_alpha_admin", Want: "alice is a member", Have: "alice is not", RepairError: "no bus " + secret}}}
	v := View{Generated: now, Refresh: 15, Offerings: []OfferingView{{Name: "k8s", UUID: "abc",
		Health: healthView(h, redact, 5*time.Second, now), Parked: []SagaView{sagaView(parked, redact, now)}, Drift: driftView(d, redact)}}}
	srv := httptest.NewServer(Handler(HandlerConfig{Addr: "127.0.0.1:0", Load: func(context.Context) View { return v }}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	page := string(b)
	for _, want := range []string{"order-0123", "compensation of step object failed", "&lt;script&gt;", "last frame 1m30s ago", "needs attention:",
		"needs attention", `content="15"`, `href="/metrics"`,
		"<h3>Drift</h3>", "1 not repaired", "cpu=40", "ns_alpha_admin", "no bus [REDACTED]"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{secret, "<script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}
