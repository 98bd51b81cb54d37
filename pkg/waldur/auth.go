package waldur

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/sitebus/sitebus/pkg/fault"
)

const (
	// oidcFallbackTTL is used when the token endpoint omits expires_in,
	// matching the Python agent.
	oidcFallbackTTL = 300 * time.Second
	// oidcRefreshEarly renews a token this long before it expires so a
	// request never leaves with a token that dies in flight.
	oidcRefreshEarly = 30 * time.Second
)

// authenticator yields the Authorization header value for one request.
type authenticator interface {
	authorization(ctx context.Context) (string, error)
	// reset drops any cached credential after Waldur answered 401.
	reset()
}

// staticToken is the waldur_api_token case.
type staticToken string

func (t staticToken) authorization(context.Context) (string, error) { return "Token " + string(t), nil }
func (staticToken) reset()                                          {}

// TokenError is a failure to obtain an OIDC access token.
type TokenError struct {
	TokenURL string
	Err      error

	retryable bool
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("waldur: fetch OIDC token from %s: %v", e.TokenURL, e.Err)
}

func (e *TokenError) Unwrap() error { return e.Err }

// Is matches fault.Unavailable when the token endpoint failed for a
// passing reason (no answer, 5xx, 429), and fault.Credentials when it
// refused the configured client id and secret.
func (e *TokenError) Is(target error) bool {
	if e.retryable {
		return target == fault.Unavailable
	}
	return target == fault.Credentials
}

// oidcSource caches a client_credentials token.
//
// x/oauth2 performs the grant (form encoding, error parsing), but its
// ReuseTokenSource is not used for caching: it binds one context at
// construction (so the per-request deadline would not apply to token
// fetches) and treats a token without expires_in as valid forever, whereas
// the Python agent falls back to a 300 s TTL. The mutex also makes
// concurrent callers share one fetch.
type oidcSource struct {
	cfg  clientcredentials.Config
	http *http.Client
	now  func() time.Time // replaced in tests

	mu      sync.Mutex
	token   string
	refresh time.Time // when to fetch a new token
}

func newOIDCSource(o OIDCConfig, hc *http.Client) *oidcSource {
	return &oidcSource{
		cfg: clientcredentials.Config{
			ClientID:     o.ClientID,
			ClientSecret: o.ClientSecret,
			TokenURL:     o.TokenURL,
			// The Python agent posts client_id/client_secret as form fields;
			// auto-detection would try HTTP Basic first and cost a round trip.
			AuthStyle: oauth2.AuthStyleInParams,
		},
		http: hc,
		now:  time.Now,
	}
}

func (s *oidcSource) authorization(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token != "" && now.Before(s.refresh) {
		return "Bearer " + s.token, nil
	}
	tok, err := s.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, s.http))
	if err != nil {
		return "", &TokenError{TokenURL: s.cfg.TokenURL, Err: err, retryable: tokenErrRetryable(ctx, err)}
	}
	if tok.AccessToken == "" {
		return "", &TokenError{TokenURL: s.cfg.TokenURL, Err: errors.New("response has no access_token")}
	}
	expiry := tok.Expiry
	if expiry.IsZero() {
		expiry = now.Add(oidcFallbackTTL)
	}
	s.token = tok.AccessToken
	s.refresh = expiry.Add(-oidcRefreshEarly)
	return "Bearer " + s.token, nil
}

func (s *oidcSource) reset() {
	s.mu.Lock()
	s.token = ""
	s.mu.Unlock()
}

// tokenErrRetryable: the token endpoint's 5xx/429 and network failures are
// transient; a 4xx (bad client secret) is not.
func tokenErrRetryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true // the per-attempt timeout fired; the loop checks the caller's ctx
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.Response == nil {
			return true
		}
		sc := re.Response.StatusCode
		return sc >= 500 || sc == http.StatusTooManyRequests
	}
	return true
}
