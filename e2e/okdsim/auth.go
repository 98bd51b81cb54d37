package okdsim

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// TokenID names a token in the call log without revealing it: the first
// 12 hex digits of its SHA-256. Empty for no token.
func TokenID(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

func bearer(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(tok)
}

// TokenFile is the path of the token file.
func (s *Server) TokenFile() string { return s.opts.TokenFile }

// Token is the first token in the token file (empty if none).
func (s *Server) Token() string {
	toks, err := readTokenFile(s.opts.TokenFile, s.opts.User)
	if err != nil || len(toks) == 0 {
		return ""
	}
	return toks[0].token
}

// RotateToken replaces every token in the token file with tok: from the
// next request on, the old tokens get 401. It writes a temporary file
// (mode 0600) and renames it over the token file, so a reader never sees
// half a file.
func (s *Server) RotateToken(tok string) error {
	path := s.opts.TokenFile
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	_, err = tmp.WriteString(tok + "\n")
	if err = cmp.Or(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

type fileToken struct{ token, user string }

// readTokenFile is read on every request rather than watched: the file is
// a few bytes, and a watcher's delay would let an old token through once.
func readTokenFile(path, defaultUser string) ([]fileToken, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []fileToken
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		f = append(f, defaultUser) // the user, unless the line names one
		out = append(out, fileToken{token: f[0], user: f[1]})
	}
	return out, nil
}

// user returns the user tok authenticates, if it is valid.
func (s *Server) user(tok string) (string, bool) {
	if tok == "" {
		return "", false
	}
	toks, err := readTokenFile(s.opts.TokenFile, s.opts.User)
	if err != nil {
		s.log.Error("read token file", "path", s.opts.TokenFile, "err", err)
	}
	for _, t := range toks {
		if subtle.ConstantTimeCompare([]byte(t.token), []byte(tok)) == 1 {
			return t.user, true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ot, ok := s.oauthTokens[tok]; ok {
		if s.now().Before(ot.expires) {
			return ot.user, true
		}
		delete(s.oauthTokens, tok)
	}
	return "", false
}

type userKey struct{}

func userFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// authed rejects requests without a valid token before routing, as the
// API server's authentication filter does: an unknown path with a bad
// token is a 401 (a Status with reason Unauthorized), not a 404.
func (s *Server) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := s.user(bearer(r))
		if !ok {
			writeErr(w, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// The OAuth side follows RFC 6749 as OpenShift's OAuth server speaks it:
// a form-encoded POST to /oauth/token, client credentials as basic auth or
// form fields, errors as {"error":…,"error_description":…}. Only the
// refresh_token grant is served: it is what the seed's oauth token_config
// (client_id, client_secret, refresh_token, token_endpoint) can use.

type oauthToken struct {
	user    string
	expires time.Time
}

// oauthToken is POST /oauth/token; routes adds Cache-Control: no-store
// to every answer (RFC 6749 section 5.1).
func (s *Server) oauthToken(r *http.Request, _ struct{}) (any, error) {
	if err := r.ParseForm(); err != nil {
		return nil, simkit.OAuthError(http.StatusBadRequest, "invalid_request", "malformed form body")
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	badClient := subtle.ConstantTimeCompare([]byte(id), []byte(OAuthClientID)) != 1 ||
		subtle.ConstantTimeCompare([]byte(secret), []byte(OAuthClientSecret)) != 1
	gt := r.PostForm.Get("grant_type")
	if e := cmp.Or(
		simkit.Refuse(badClient, simkit.OAuthError(http.StatusUnauthorized, "unauthorized_client", "The client is not authorized to request a token using this method.")),
		simkit.Refuse(gt == "", simkit.OAuthError(http.StatusBadRequest, "invalid_request", "The request is missing a required parameter: grant_type.")),
		simkit.Refuse(gt != "refresh_token", simkit.OAuthError(http.StatusBadRequest, "unsupported_grant_type", "The authorization grant type "+gt+" is not supported.")),
		simkit.Refuse(subtle.ConstantTimeCompare([]byte(r.PostForm.Get("refresh_token")), []byte(RefreshToken)) != 1,
			simkit.OAuthError(http.StatusBadRequest, "invalid_grant", "The provided authorization grant is invalid, expired, revoked, or was issued to another client.")),
	); e != nil {
		return nil, e
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	tok := "sha256~" + base64.RawURLEncoding.EncodeToString(raw)
	s.mu.Lock()
	s.oauthTokens[tok] = oauthToken{user: s.opts.User, expires: s.now().Add(OAuthTokenTTL)}
	s.mu.Unlock()
	return map[string]any{
		"access_token":  tok,
		"token_type":    "Bearer",
		"expires_in":    int(OAuthTokenTTL / time.Second),
		"refresh_token": RefreshToken,
		"scope":         "user:full",
	}, nil
}
