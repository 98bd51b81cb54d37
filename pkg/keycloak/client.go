package keycloak

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Nerzal/gocloak/v13"
	"github.com/go-resty/resty/v2"

	"github.com/sitebus/sitebus/pkg/httpbody"
)

// Client talks to one Keycloak realm. It is safe for concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	gc     *gocloak.GoCloak
	tokens *tokenCache
}

// New builds a Client from cfg (defaults filled in, then validated). It
// makes no call; see Ping.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rt, err := transport(cfg)
	if err != nil {
		return nil, err
	}
	gc := gocloak.NewClient(cfg.URL)
	gc.RestyClient().
		SetTransport(rt).
		SetTimeout(cfg.Timeout).
		SetLogger(restyLogger{cfg.Logger}).
		SetRetryCount(0). // retries are ours: they renew tokens and classify
		// gocloak takes any status below 400 for a success; a 3xx that
		// net/http did not follow (no Location, or not a redirect at
		// all) is no answer of Keycloak's, so it is an error here.
		OnAfterResponse(func(_ *resty.Client, r *resty.Response) error {
			if s := r.StatusCode(); s >= 300 && s < 400 {
				return fmt.Errorf("HTTP %d from %s is no Keycloak answer (a proxy in between?)", s, r.Request.URL)
			}
			return nil
		})
	c := &Client{cfg: cfg, log: cfg.Logger.With("component", "keycloak", "realm", cfg.Realm), gc: gc}
	c.tokens = &tokenCache{login: c.login, now: time.Now}
	return c, nil
}

func transport(cfg Config) (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.InsecureSkipVerify {
		tc.InsecureSkipVerify = true // the operator asked for it (keycloak_ssl_verify: false)
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%skeycloak_ssl_verify: %w", settingsPrefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%skeycloak_ssl_verify: %s holds no PEM certificate", settingsPrefix, cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	t.TLSClientConfig = tc
	rt := guardAnswers(t)
	if cfg.WrapTransport != nil {
		rt = cfg.WrapTransport(rt)
	}
	return rt, nil
}

// guardAnswers guards what gocloak reads (httpbody.Guard): every body
// fails past 64 MiB (resty under gocloak reads a body whole, so a runaway
// answer would exhaust memory; a realm's group list is far smaller), and
// a 2xx answer that is not JSON (a proxy's sign-in page) or is Keycloak's
// error object fails too. gocloak would take either for an empty success:
// resty decodes only a JSON content type, and a 200 with {"error": ...}
// decodes into a group with no id. Such failures reach classify as answers
// not got, so they are retried (ErrUnavailable): a proxy or a restarting
// Keycloak passes.
func guardAnswers(next http.RoundTripper) http.RoundTripper {
	return &httpbody.Guard{Next: next, Peer: "Keycloak", MediaTypes: []string{"application/json"}, ErrorObject: isErrorObject}
}

// isErrorObject tells Keycloak's error answer ({"error": ...} or
// {"errorMessage": ...}) from a result.
func isErrorObject(data []byte) bool {
	var e struct {
		Error        *string `json:"error"`
		ErrorMessage *string `json:"errorMessage"`
	}
	return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && json.Unmarshal(data, &e) == nil && (e.Error != nil || e.ErrorMessage != nil)
}

// Realm is the realm the client manages.
func (c *Client) Realm() string { return c.cfg.Realm }

// Ping checks that Keycloak answers and the credentials work.
func (c *Client) Ping(ctx context.Context) error {
	return c.do(ctx, "get realm", func(ctx context.Context, tok string) error {
		r, err := c.gc.GetRealm(ctx, tok, c.cfg.Realm)
		if err == nil && gocloak.PString(r.Realm) != c.cfg.Realm {
			return &gocloak.APIError{Code: http.StatusNotFound, Message: "no realm in the answer"}
		}
		return err
	})
}

// do runs call with a token, renewing the token once right away on a 401
// and retrying retryable failures with jittered exponential backoff, at
// most MaxAttempts times and never past ctx.
func (c *Client) do(ctx context.Context, op string, call func(ctx context.Context, token string) error) error {
	renewed := false
	for attempt := 1; ; attempt++ {
		tok, err := c.tokens.get(ctx)
		if err == nil {
			err = classify(ctx, op, call(ctx, tok), c.cfg.Password.Reveal(), tok)
			if err == nil {
				return nil
			}
			if statusOf(err) == http.StatusUnauthorized {
				c.tokens.drop(tok)
				if !renewed {
					renewed = true
					attempt--
					continue
				}
			}
		}
		if !retryable(err) || attempt >= c.cfg.MaxAttempts {
			return err
		}
		wait := c.backoff(attempt)
		c.log.Warn("keycloak call failed, retrying", "op", op, "attempt", attempt, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// backoff is RetryBase·2^(attempt-1), capped at RetryMax, with "equal
// jitter": half fixed, half random, so that processes that failed together
// do not retry together.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.RetryBase << min(attempt-1, 20)
	if d <= 0 || d > c.cfg.RetryMax {
		d = c.cfg.RetryMax
	}
	return d/2 + rand.N(d/2+1)
}

// login gets an admin token with the password grant.
func (c *Client) login(ctx context.Context) (string, time.Duration, error) {
	jwt, err := c.gc.GetToken(ctx, c.cfg.UserRealm, gocloak.TokenOptions{
		ClientID:  gocloak.StringP(c.cfg.ClientID),
		GrantType: gocloak.StringP("password"),
		Username:  gocloak.StringP(c.cfg.Username),
		Password:  gocloak.StringP(c.cfg.Password.Reveal()),
	})
	if err != nil {
		return "", 0, classifyLogin(ctx, err, c.cfg.Password.Reveal())
	}
	if jwt.AccessToken == "" {
		return "", 0, &Error{Op: "log in", Status: http.StatusOK, Msg: "no access_token in the answer", kind: ErrRejected}
	}
	c.log.Debug("keycloak token obtained", "user_realm", c.cfg.UserRealm, "expires_in", jwt.ExpiresIn)
	return jwt.AccessToken, time.Duration(jwt.ExpiresIn) * time.Second, nil
}

// adminURL is an admin REST URL of the managed realm; parts are escaped.
func (c *Client) adminURL(parts ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(c.cfg.URL, "/"))
	b.WriteString("/admin/realms/")
	b.WriteString(url.PathEscape(c.cfg.Realm))
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

// get is a GET gocloak has no method for, answered in gocloak's error
// shape so classify treats it alike.
func (c *Client) get(ctx context.Context, token, u string, query map[string]string, out any) error {
	resp, err := c.gc.GetRequestWithBearerAuth(ctx, token).SetQueryParams(query).SetResult(out).Get(u)
	if err != nil {
		return &gocloak.APIError{Message: err.Error()}
	}
	if resp.IsError() {
		msg := resp.Status()
		if e, ok := resp.Error().(*gocloak.HTTPErrorResponse); ok && e.NotEmpty() {
			msg += ": " + e.String()
		}
		return &gocloak.APIError{Code: resp.StatusCode(), Message: msg}
	}
	return nil
}

// restyLogger sends resty's own messages to debug; resty never logs
// requests unless its debug mode is on, which sitebus never turns on.
type restyLogger struct{ l *slog.Logger }

func (r restyLogger) Errorf(format string, v ...any) { r.debug(format, v) }
func (r restyLogger) Warnf(format string, v ...any)  { r.debug(format, v) }
func (r restyLogger) Debugf(format string, v ...any) { r.debug(format, v) }

func (r restyLogger) debug(format string, v []any) { r.l.Debug("resty: " + fmt.Sprintf(format, v...)) }

// esc escapes an id for gocloak, which puts path parts in URLs as they
// are; Keycloak ids are UUIDs, but a user id comes from Waldur.
func esc(id string) string { return url.PathEscape(id) }
