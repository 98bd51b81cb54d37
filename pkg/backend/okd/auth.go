package okd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// tokenSource supplies the bearer token. Token returns the current one
// (cheaply: it is called for every request); Refresh is called after a
// 401 or 403 with the token that was refused, and returns a new one, or the same
// when it has no other (a static token), so the caller can tell whether a
// retry can help.
type tokenSource interface {
	Token(ctx context.Context) (string, error)
	Refresh(ctx context.Context, refused string) (string, error)
	// Kind names the source for logs (never the token).
	Kind() string
}

// staticToken is backend_settings.token.
type staticToken string

func (s staticToken) Token(context.Context) (string, error)           { return string(s), nil }
func (s staticToken) Refresh(context.Context, string) (string, error) { return string(s), nil }
func (staticToken) Kind() string                                      { return TokenStatic }

// fileToken reads a token file (a service account's, or one an external
// system rotates). It re-reads the file when its size or modification
// time changed, checked on every request with one stat, and always after
// a 401 (a rotation within the file system's timestamp granularity keeps
// both).
type fileToken struct {
	path, kind string

	mu    sync.Mutex
	token string
	stamp fileStamp
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func (f *fileToken) Kind() string { return f.kind }

func (f *fileToken) Token(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err != nil {
		if f.token != "" {
			// Mid-rotation (removed, then written): the last token may
			// still be good, and a 401 will read the file again.
			return f.token, nil
		}
		return "", f.fail(err)
	}
	if st := (fileStamp{fi.Size(), fi.ModTime()}); f.token == "" || st != f.stamp {
		return f.readLocked()
	}
	return f.token, nil
}

func (f *fileToken) Refresh(context.Context, string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readLocked()
}

func (f *fileToken) readLocked() (string, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return "", f.fail(err)
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return "", f.fail(err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", f.fail(errors.New("the file is empty"))
	}
	f.token, f.stamp = tok, fileStamp{fi.Size(), fi.ModTime()}
	return tok, nil
}

// fail names the file, never its content. A missing or unreadable token
// file is retryable: the mount or the rotating system may catch up.
func (f *fileToken) fail(err error) error {
	return fmt.Errorf("okd: %s token file %s: %w", f.kind, f.path, err)
}

// oauthToken is the refresh-token grant (RFC 6749 §6) against the OAuth
// server's token endpoint. The access token is kept until 5 minutes
// before it expires (the seed's buffer), then refreshed; a rotated refresh
// token from the answer replaces the configured one.
type oauthToken struct {
	cfg    OAuth
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	refresh string
	access  string
	expires time.Time // zero: no expiry given
}

// oauthBuffer is how long before expiry the access token is refreshed.
const oauthBuffer = 5 * time.Minute

func (o *oauthToken) Kind() string { return TokenOAuth }

func (o *oauthToken) Token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.access != "" && (o.expires.IsZero() || o.now().Before(o.expires.Add(-oauthBuffer))) {
		return o.access, nil
	}
	return o.grantLocked(ctx)
}

func (o *oauthToken) Refresh(ctx context.Context, refused string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.access != "" && o.access != refused {
		return o.access, nil // another request refreshed it meanwhile
	}
	return o.grantLocked(ctx)
}

func (o *oauthToken) grantLocked(ctx context.Context) (string, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {o.refresh},
		"client_id":     {o.cfg.ClientID},
	}
	if o.cfg.ClientSecret != "" {
		form.Set("client_secret", o.cfg.ClientSecret.Reveal())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fault.Errorf(fault.Invalid, "okd: OAuth token endpoint %s: %v", o.cfg.TokenEndpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("okd: OAuth token refresh at %s: %w", o.cfg.TokenEndpoint, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := httpbody.ReadAll(resp.Body, 1<<20)
	if err != nil {
		return "", fmt.Errorf("okd: OAuth token refresh at %s: %w", o.cfg.TokenEndpoint, err)
	}
	var ans struct {
		AccessToken  string  `json:"access_token"`
		RefreshToken string  `json:"refresh_token"`
		ExpiresIn    float64 `json:"expires_in"`
		Error        string  `json:"error"`
	}
	_ = json.Unmarshal(body, &ans) // a body that is no JSON leaves the fields empty
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized:
		// invalid_grant, invalid_client: the configuration is wrong or the
		// refresh token revoked; no retry fixes that.
		return "", fault.Errorf(fault.Credentials, "okd: OAuth token endpoint %s refused the refresh token (%d %s): "+
			"check backend_settings.token_config.oauth_config", o.cfg.TokenEndpoint, resp.StatusCode, ans.Error)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("okd: OAuth token refresh at %s: %s", o.cfg.TokenEndpoint, resp.Status)
	case ans.AccessToken == "":
		return "", fmt.Errorf("okd: OAuth token endpoint %s answered without access_token", o.cfg.TokenEndpoint)
	}
	o.access = ans.AccessToken
	o.expires = time.Time{}
	if ans.ExpiresIn > 0 {
		o.expires = o.now().Add(time.Duration(ans.ExpiresIn * float64(time.Second)))
	}
	if ans.RefreshToken != "" {
		o.refresh = ans.RefreshToken
	}
	return o.access, nil
}

// authTransport sets the bearer token of every request and, on a 401 or a
// 403, refreshes the token and sends the request once more. A 403 counts
// too because the Python OKD plugin refreshes on both (any error whose
// text holds 401 or 403), so a site whose rotated token fixes a 403 keeps
// working after the switch. A source with nothing new (a static token, an
// unchanged file) costs no second request. A second refusal is returned
// to the caller as it is. It never logs or quotes a token.
type authTransport struct {
	next http.RoundTripper
	src  tokenSource
	log  *slog.Logger
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := a.src.Token(req.Context())
	if err != nil {
		return nil, err
	}
	resp, err := a.next.RoundTrip(withToken(req, tok))
	if err != nil || !refusesToken(resp.StatusCode) {
		return resp, err
	}
	// A body already sent can be sent again only if the request can
	// rewind it; client-go's requests can (bytes readers).
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil
	}
	fresh, err := a.src.Refresh(req.Context(), tok)
	if err != nil {
		a.log.Warn("OpenShift API refused the token and refreshing it failed", "status", resp.StatusCode, "token_source", a.src.Kind(), "error", err)
		return resp, nil // the refusal tells the caller more than the refresh error
	}
	if fresh == tok {
		return resp, nil // nothing new to try
	}
	retry := withToken(req, fresh)
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	drain(resp)
	a.log.Info("OpenShift API refused the token; retrying once with a refreshed one",
		"status", resp.StatusCode, "token_source", a.src.Kind(), "method", req.Method, "path", req.URL.Path)
	return a.next.RoundTrip(retry)
}

// refusesToken reports whether status is one the Python OKD plugin answers
// by refreshing its token: 401 Unauthorized and 403 Forbidden.
func refusesToken(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// withToken clones req (RoundTrippers must not change theirs) with the
// bearer token set.
func withToken(req *http.Request, tok string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// drain reads a little of a discarded response so its connection can be
// reused, then closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// newTokenSource builds the settings' token source; oauthClient reaches
// the token endpoint (with the settings' TLS verification).
func newTokenSource(s Settings, oauthClient *http.Client) tokenSource {
	switch s.TokenType {
	case TokenServiceAccount, TokenFile:
		return &fileToken{path: s.tokenFile(), kind: s.TokenType}
	case TokenOAuth:
		return &oauthToken{cfg: s.OAuth, client: oauthClient, now: time.Now, refresh: s.OAuth.RefreshToken.Reveal()}
	}
	return staticToken(s.Token.Reveal())
}
