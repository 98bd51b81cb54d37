package okdsim

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// The OAuth side follows RFC 6749 as OpenShift's OAuth server speaks it:
// a form-encoded POST to /oauth/token, client credentials as basic auth or
// form fields, errors as {"error":…,"error_description":…}. Only the
// refresh_token grant is served: it is what the seed's oauth token_config
// (client_id, client_secret, refresh_token, token_endpoint) can use.

type oauthToken struct {
	user    string
	expires time.Time
}

func (s *Server) oauthMetadata(w http.ResponseWriter, r *http.Request) {
	b := simkit.BaseURL(r)
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"issuer":                           b,
		"authorization_endpoint":           b + "/oauth/authorize",
		"token_endpoint":                   b + "/oauth/token",
		"grant_types_supported":            []string{"authorization_code", "implicit", "refresh_token"},
		"response_types_supported":         []string{"code", "token"},
		"code_challenge_methods_supported": []string{"plain", "S256"},
		"scopes_supported":                 []string{"user:check-access", "user:full", "user:info", "user:list-projects", "user:list-scoped-projects"},
	})
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
	if subtle.ConstantTimeCompare([]byte(id), []byte(s.opts.OAuthClientID)) != 1 ||
		subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.OAuthClientSecret)) != 1 {
		return nil, simkit.OAuthError(http.StatusUnauthorized, "unauthorized_client", "The client is not authorized to request a token using this method.")
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "refresh_token":
	case "":
		return nil, simkit.OAuthError(http.StatusBadRequest, "invalid_request", "The request is missing a required parameter: grant_type.")
	default:
		return nil, simkit.OAuthError(http.StatusBadRequest, "unsupported_grant_type", "The authorization grant type "+gt+" is not supported.")
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("refresh_token")), []byte(s.opts.RefreshToken)) != 1 {
		return nil, simkit.OAuthError(http.StatusBadRequest, "invalid_grant", "The provided authorization grant is invalid, expired, revoked, or was issued to another client.")
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	tok := "sha256~" + base64.RawURLEncoding.EncodeToString(raw)
	s.mu.Lock()
	s.oauthTokens[tok] = oauthToken{user: s.opts.User, expires: s.now().Add(s.opts.OAuthTokenTTL)}
	s.mu.Unlock()
	return map[string]any{
		"access_token":  tok,
		"token_type":    "Bearer",
		"expires_in":    int(s.opts.OAuthTokenTTL / time.Second),
		"refresh_token": s.opts.RefreshToken,
		"scope":         "user:full",
	}, nil
}
