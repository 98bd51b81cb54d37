package vault_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/vault"
)

func TestErrorsAreClassifiedByStatus(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		terminal bool
		notFound bool
	}{
		{"permission denied is terminal", http.StatusForbidden, true, false},
		{"a bad request is terminal", http.StatusBadRequest, true, false},
		{"unauthorized is terminal", http.StatusUnauthorized, true, false},
		{"a sealed vault is retryable", http.StatusServiceUnavailable, false, false},
		{"an internal error is retryable", http.StatusInternalServerError, false, false},
		{"too many requests is retryable", http.StatusTooManyRequests, false, false},
		{"not found is ErrNotFound", http.StatusNotFound, false, true},
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
			if got := backend.IsTerminal(err); got != tt.terminal {
				t.Fatalf("terminal = %v, want %v: %v", got, tt.terminal, err)
			}
			if got := errors.Is(err, backend.ErrNotFound); got != tt.notFound {
				t.Fatalf("not found = %v, want %v: %v", got, tt.notFound, err)
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
	if err == nil || backend.IsTerminal(err) {
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
	if err := c.EnsurePolicy(context.Background(), cl); !backend.IsTerminal(err) || !strings.Contains(err.Error(), "vault_ca_file") {
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
