package vault_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/vault"
)

func TestErrorsAreClassifiedByStatus(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		kind     fault.Kind
		terminal bool
	}{
		{"permission denied is a terminal refusal", http.StatusForbidden, fault.Rejected, true},
		{"a bad request is a terminal refusal", http.StatusBadRequest, fault.Rejected, true},
		{"unauthorized is a terminal refusal", http.StatusUnauthorized, fault.Rejected, true},
		{"a sealed vault is unavailable, retried", http.StatusServiceUnavailable, fault.Unavailable, false},
		{"an internal error is unavailable, retried", http.StatusInternalServerError, fault.Unavailable, false},
		{"too many requests is unavailable, retried", http.StatusTooManyRequests, fault.Unavailable, false},
		{"not found is retried unless the caller handles it", http.StatusNotFound, fault.NotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(`{"errors":["some reason"]}`))
			}))
			t.Cleanup(srv.Close)
			s := vault.DefaultSettings()
			s.Host, s.Token = srv.URL, config.Secret("s.secrettoken")
			c, err := vault.New(s)
			if err != nil {
				t.Fatal(err)
			}
			cl, _ := vault.ParseCluster(clusterA)
			err = c.EnsurePolicy(context.Background(), cl)
			if err == nil {
				t.Fatal("no error")
			}
			if got := fault.IsTerminal(err); got != tt.terminal {
				t.Fatalf("terminal = %v, want %v: %v", got, tt.terminal, err)
			}
			if got := fault.KindOf(err); got != tt.kind {
				t.Fatalf("kind = %q, want %q: %v", got, tt.kind, err)
			}
			if !strings.Contains(err.Error(), "some reason") || strings.Contains(err.Error(), "s.secrettoken") {
				t.Fatalf("message %q: want Vault's reason and never the token", err)
			}
		})
	}
}

func TestNoAnswerIsRetryable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	s := vault.DefaultSettings()
	s.Host, s.Token = "http://"+addr, "t"
	c, err := vault.New(s)
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := vault.ParseCluster(clusterA)
	err = c.EnsureRole(context.Background(), cl)
	if err == nil || fault.IsTerminal(err) || !errors.Is(err, fault.Unavailable) {
		t.Fatalf("refused connection: %v; want a retryable error", err)
	}
}

func TestAnUnverifiedCertificateIsTerminal(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	cl, _ := vault.ParseCluster(clusterA)
	s := vault.DefaultSettings()
	s.Host, s.Token = srv.URL, "t"
	c, err := vault.New(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePolicy(context.Background(), cl); !fault.IsTerminal(err) || !strings.Contains(err.Error(), "vault_ca_file") {
		t.Fatalf("self-signed certificate with vault_tls_verify on: %v; want terminal, naming vault_ca_file", err)
	}
	s.TLSVerify = false
	c, err = vault.New(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePolicy(context.Background(), cl); err != nil {
		t.Fatalf("vault_tls_verify: false: %v", err)
	}
}

// A 200 that is not a result (Vault's error object, a proxy's page, a
// runaway body) must not read as an empty secret, which RoleID reports as
// a missing role: it is an answer not got, retried.
func TestAnswersThatAreNotResultsAreRetriedNotReadAsEmpty(t *testing.T) {
	for _, tt := range []struct {
		name, ctype, body, cause string
	}{
		{"Vault's error object under a 200", "application/json", `{"errors":["local node not active"]}`, "error object"},
		{"a proxy's sign-in page under a 200", "text/html", "<html>sign in</html>", `Content-Type "text/html"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			s := vault.DefaultSettings()
			s.Host, s.Token = srv.URL, config.Secret("s.secrettoken")
			c, err := vault.New(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.CloseIdleConnections)
			cl, _ := vault.ParseCluster(clusterA)
			_, err = c.RoleID(context.Background(), cl)
			if err == nil {
				t.Fatal("no error")
			}
			if got := fault.KindOf(err); got != fault.Unavailable {
				t.Fatalf("kind = %q, want %q: %v", got, fault.Unavailable, err)
			}
			if !strings.Contains(err.Error(), tt.cause) || strings.Contains(err.Error(), "s.secrettoken") {
				t.Fatalf("message %q: want the cause %q and never the token", err, tt.cause)
			}
		})
	}
}
