package keycloaksim_test

import (
	"context"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"
)

func TestToken(t *testing.T) {
	ctx := context.Background()
	runScenarios(t, newEnv, []scenario[*env]{
		{"password grant gives a working 60 s bearer token", func(t *testing.T, e *env) {
			jwt, err := e.gc.LoginAdmin(ctx, "admin", "admin", "master")
			must(t, err)
			eq(t, "expires_in", jwt.ExpiresIn, 60)
			eq(t, "token_type", jwt.TokenType, "Bearer")
			r, err := e.gc.GetRealm(ctx, jwt.AccessToken, "waldur")
			must(t, err)
			eq(t, "realm", gocloak.PString(r.Realm), "waldur")
		}},
		{"password grant also answers a 30 min refresh token that is no bearer token", func(t *testing.T, e *env) {
			jwt, err := e.gc.LoginAdmin(ctx, "admin", "admin", "master")
			must(t, err)
			eq(t, "refresh_expires_in", jwt.RefreshExpiresIn, 1800)
			if jwt.RefreshToken == "" || jwt.RefreshToken == jwt.AccessToken {
				t.Fatalf("refresh_token = %q, want a token of its own", jwt.RefreshToken)
			}
			_, err = e.gc.GetRealm(ctx, jwt.RefreshToken, "waldur")
			apiErr(t, err, 401, "HttpUnauthorizedException: HTTP 401 Unauthorized")
		}},
		{"a wrong password is a 401 invalid_grant", func(t *testing.T, e *env) {
			_, err := e.gc.LoginAdmin(ctx, "admin", "nope", "master")
			apiErr(t, err, 401, "invalid_grant: Invalid user credentials")
		}},
		{"an unknown client is a 401 invalid_client", func(t *testing.T, e *env) {
			_, err := e.gc.Login(ctx, "other-cli", "", "master", "admin", "admin")
			apiErr(t, err, 401, "invalid_client")
		}},
		{"an unknown realm is a 404", func(t *testing.T, e *env) {
			_, err := e.gc.LoginAdmin(ctx, "admin", "admin", "nowhere")
			apiErr(t, err, 404, "Realm does not exist")
		}},
		{"an expired token is a 401 with Keycloak's body", func(t *testing.T, e *env) {
			e.clock.Advance(61 * time.Second)
			_, err := e.gc.GetRealm(ctx, e.token, "waldur")
			apiErr(t, err, 401, "HttpUnauthorizedException: HTTP 401 Unauthorized")
		}},
		{"a token is still good just before expiry", func(t *testing.T, e *env) {
			e.clock.Advance(59 * time.Second)
			_, err := e.gc.GetRealm(ctx, e.token, "waldur")
			must(t, err)
		}},
		{"ExpireTokens invalidates tokens already handed out", func(t *testing.T, e *env) {
			e.sim.ExpireTokens()
			_, err := e.gc.GetRealm(ctx, e.token, "waldur")
			apiErr(t, err, 401, "HTTP 401 Unauthorized")
		}},
		{"a missing or made-up token is a 401", func(t *testing.T, e *env) {
			_, err := e.gc.GetRealm(ctx, "", "waldur")
			apiErr(t, err, 401, "HttpUnauthorizedException")
			_, err = e.gc.GetRealm(ctx, "made.up.token", "waldur")
			apiErr(t, err, 401, "HttpUnauthorizedException")
		}},
		{"a realm user's token is a 403 on admin endpoints", func(t *testing.T, e *env) {
			jwt, err := e.gc.Login(ctx, "admin-cli", "", "waldur", "alice", "alice-pw")
			must(t, err)
			_, err = e.gc.GetGroups(ctx, jwt.AccessToken, "waldur", gocloak.GetGroupsParams{})
			apiErr(t, err, 403, "Forbidden")
		}},
		{"an unknown admin realm is a 404 once authenticated", func(t *testing.T, e *env) {
			_, err := e.gc.GetRealm(ctx, e.token, "nowhere")
			apiErr(t, err, 404, "Realm not found.")
		}},
	})
}
