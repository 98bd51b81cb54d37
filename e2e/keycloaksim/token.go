package keycloaksim

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// ssoSessionIdle is Keycloak's default SSO Session Idle, how long a
// refresh token lives.
const ssoSessionIdle = 30 * time.Minute

// session is what an access token stands for.
type session struct {
	realm, userID, username, clientID string
	expires                           time.Time
}

// tokenResponse is the OAuth2 token response Keycloak sends. The password
// grant also answers a refresh token (sitebus does not use it: it logs in
// again), valid for the realm's SSO Session Idle, 30 minutes by default.
type tokenResponse struct {
	AccessToken      string `json:"access_token"`
	ExpiresIn        int    `json:"expires_in"`
	RefreshToken     string `json:"refresh_token"`
	RefreshExpiresIn int    `json:"refresh_expires_in"`
	TokenType        string `json:"token_type"`
	NotBeforePolicy  int    `json:"not-before-policy"`
	SessionState     string `json:"session_state"`
	Scope            string `json:"scope"`
}

// token serves POST /realms/{realm}/protocol/openid-connect/token for the
// password grant of the admin-cli public client.
func (s *Server) token(r *http.Request, _ struct{}) (any, error) {
	if err := r.ParseForm(); err != nil {
		return nil, simkit.OAuthError(http.StatusBadRequest, "invalid_request", "Could not parse form")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.realms[r.PathValue("realm")]
	if rm == nil {
		return nil, errorCode(http.StatusNotFound, "Realm does not exist")
	}
	form := r.PostForm.Get
	grant, clientID, u := form("grant_type"), form("client_id"), rm.userByName(form("username"))
	badPassword := u == nil || u.Password == "" || u.Password != form("password")
	if e := cmp.Or(
		simkit.Refuse(grant == "", simkit.OAuthError(http.StatusBadRequest, "invalid_request", "Missing form parameter: grant_type")),
		simkit.Refuse(clientID != clientIDAdminCLI, simkit.OAuthError(http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")),
		simkit.Refuse(grant != "password", simkit.OAuthError(http.StatusBadRequest, "unsupported_grant_type", "Unsupported grant_type")),
		simkit.Refuse(badPassword, simkit.OAuthError(http.StatusUnauthorized, "invalid_grant", "Invalid user credentials")),
		simkit.Refuse(!badPassword && u.Disabled, simkit.OAuthError(http.StatusBadRequest, "invalid_grant", "Account disabled")),
	); e != nil {
		return nil, e
	}
	now := s.now()
	access := session{realm: rm.name, userID: u.ID, username: u.Username, clientID: clientID, expires: now.Add(s.cfg.TokenLifespan)}
	at := s.jwt(r, access, now, "Bearer")
	s.tokens[at] = access
	// The refresh token is not kept: it must not authorize admin calls.
	refresh := access
	refresh.expires = now.Add(ssoSessionIdle)
	return tokenResponse{
		AccessToken: at, ExpiresIn: int(s.cfg.TokenLifespan / time.Second),
		RefreshToken: s.jwt(r, refresh, now, "Refresh"), RefreshExpiresIn: int(ssoSessionIdle / time.Second),
		TokenType: "Bearer", SessionState: simkit.NewUUID(), Scope: "profile email",
	}, nil
}

// jwt makes a JWT-shaped token whose claims tell the truth (exp, iss,
// preferred_username), so clients that peek at it work; the signature is
// random, as nothing verifies it but this server.
func (s *Server) jwt(r *http.Request, ss session, now time.Time, typ string) string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"exp": ss.expires.Unix(), "iat": now.Unix(), "jti": simkit.NewUUID(),
		"iss": simkit.BaseURL(r) + "/realms/" + ss.realm, "sub": ss.userID, "typ": typ,
		"azp": ss.clientID, "preferred_username": ss.username,
	})
	sig := make([]byte, 32)
	_, _ = rand.Read(sig)
	return enc.EncodeToString(header) + "." + enc.EncodeToString(claims) + "." + enc.EncodeToString(sig)
}

// authorize checks the bearer token of an admin request for realmName:
// missing, unknown or expired tokens are 401; a token of another realm, or
// of a user who is not the admin, is 403. Callers hold s.mu.
func (s *Server) authorize(r *http.Request, realmName string) *apiError {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	ss, ok := s.tokens[strings.TrimSpace(tok)]
	if !strings.EqualFold(scheme, "Bearer") || tok == "" || !ok || !s.now().Before(ss.expires) {
		return errUnauthorized
	}
	if ss.realm == adminRealm && ss.username == strings.ToLower(s.cfg.AdminUsername) {
		return nil
	}
	return errForbidden
}
