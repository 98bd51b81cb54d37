package statuspage

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Path is where the page is served.
const Path = "/status"

//go:embed page.html
var pageFS embed.FS

var page = template.Must(template.New("page.html").ParseFS(pageFS, "page.html"))

// HandlerConfig configures the page's handler.
type HandlerConfig struct {
	// Addr is the address the HTTP server listens on: it decides whether
	// the page needs a token (see Handler).
	Addr string
	// Token is the bearer token; "" turns the page off on a non-loopback
	// address.
	Token string
	// Load builds the view; it is given a bounded context.
	Load   func(ctx context.Context) View
	Logger *slog.Logger
}

// Handler serves the page. On a loopback address it is open, like the CLI
// tools on the same host. Elsewhere (the chart binds 0.0.0.0, so anything
// in the cluster reaches it) it answers only a request with the
// configured bearer token, and 404 when none is configured, as if there
// were no page.
func Handler(cfg HandlerConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	open := Loopback(cfg.Addr)
	want := sha256.Sum256([]byte(cfg.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !open {
			if cfg.Token == "" {
				http.NotFound(w, r)
				return
			}
			// Hashes of equal length, compared in constant time, so the
			// answer's timing says nothing of the token or its length.
			got, ok := bearer(r)
			sum := sha256.Sum256([]byte(got))
			if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sitebus status"`)
				http.Error(w, "the status page needs the bearer token of sitebus.status_page.token", http.StatusUnauthorized)
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		v := cfg.Load(ctx)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		// The page has no script: refuse any that an injected text could
		// bring, on top of html/template's escaping.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := page.Execute(w, v); err != nil {
			cfg.Logger.Warn("status page", "err", err)
		}
	})
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Loopback reports whether a listen address (host:port) accepts only
// connections from this host: localhost or a loopback IP. An empty host
// listens on every interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
