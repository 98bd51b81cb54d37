// Package waldur is a REST client for the parts of the Waldur marketplace API
// that a site agent needs: agent identity registration, offerings, orders,
// provider resources and usage reporting.
//
// It is wire-compatible with the Python waldur-site-agent (same paths, query
// parameters and bodies) but adds what that agent lacks: per-request
// deadlines, bounded retries with jittered backoff, typed errors and a
// correct base-URL normalisation.
package waldur

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/httpbody"
)

// Version is reported in the default User-Agent. Release builds set it with
// -ldflags "-X github.com/sitebus/sitebus/pkg/waldur.Version=1.2.3".
var Version = "dev"

// Defaults applied by Config.setDefaults.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxAttempts    = 5
	DefaultInitialBackoff = 200 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultMaxRetryAfter  = 60 * time.Second

	// pageSize matches the Python SDK's sync_all, so Waldur sees the same load.
	pageSize = 100
	// maxErrorBody bounds APIError.Body so a HTML error page does not flood logs.
	maxErrorBody = 2048
	// maxResponseBody guards memory against a misbehaving server.
	maxResponseBody = 64 << 20
)

// Config configures a Client. The zero value of every optional field selects
// a sensible default; APIURL and one of Token or OIDC are required.
type Config struct {
	// APIURL is the offering's waldur_api_url, e.g. https://waldur.example.com/api/.
	APIURL string
	// Token is a static Waldur API token, sent as "Authorization: Token <t>".
	// When both Token and OIDC are set, Token wins (as in the Python agent).
	Token string
	// OIDC selects the client_credentials grant when Token is empty.
	OIDC OIDCConfig
	// InsecureSkipVerify disables TLS certificate verification. It is meant
	// for test installations only and cannot be combined with HTTPClient.
	InsecureSkipVerify bool
	// UserAgent defaults to "sitebus/<Version>".
	UserAgent string
	// HTTPClient is used for all requests, including OIDC token requests.
	// Its Timeout should be zero; per-request deadlines come from Timeout.
	HTTPClient *http.Client
	// Timeout bounds each HTTP attempt (not the whole retried call; use the
	// ctx deadline for that). Default 30 s.
	Timeout time.Duration
	// Retry controls retries of transient failures.
	Retry RetryPolicy
	// Logger receives debug logs of requests. It never sees the token.
	Logger *slog.Logger
	// Proxy is an HTTP(S) proxy URL for Waldur calls (global_proxy).
	Proxy string
	// WrapTransport, when set, wraps the HTTP transport (tracing, metrics).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// OIDCConfig holds client_credentials settings (oidc_token_url,
// oidc_client_id, oidc_client_secret in the agent config).
type OIDCConfig struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
}

func (o OIDCConfig) isZero() bool { return o == OIDCConfig{} }

// RetryPolicy controls retries of HTTP 5xx, 429 and transport errors.
// Delays use exponential backoff with full jitter: a random duration in
// [0, min(MaxBackoff, InitialBackoff*2^n)).
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts including the first. Default 5;
	// set 1 to disable retries.
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxRetryAfter caps a server-provided Retry-After delay. Default 60 s.
	MaxRetryAfter time.Duration
}

func (c *Config) setDefaults() {
	if c.UserAgent == "" {
		c.UserAgent = "sitebus/" + Version
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = DefaultMaxAttempts
	}
	if c.Retry.InitialBackoff == 0 {
		c.Retry.InitialBackoff = DefaultInitialBackoff
	}
	if c.Retry.MaxBackoff == 0 {
		c.Retry.MaxBackoff = DefaultMaxBackoff
	}
	if c.Retry.MaxRetryAfter == 0 {
		c.Retry.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every configuration problem at once so an operator can fix
// the config in one go. It never includes secrets in its message.
func (c *Config) Validate() error {
	var errs []error
	if c.APIURL == "" {
		errs = append(errs, errors.New("waldur_api_url is required"))
	} else if _, err := normalizeBaseURL(c.APIURL); err != nil {
		errs = append(errs, err)
	}
	if c.Token == "" {
		var missing []string
		if c.OIDC.TokenURL == "" {
			missing = append(missing, "oidc_token_url")
		}
		if c.OIDC.ClientID == "" {
			missing = append(missing, "oidc_client_id")
		}
		if c.OIDC.ClientSecret == "" {
			missing = append(missing, "oidc_client_secret")
		}
		switch {
		case c.OIDC.isZero():
			errs = append(errs, errors.New("either waldur_api_token or oidc_token_url, oidc_client_id and oidc_client_secret are required"))
		case len(missing) > 0:
			errs = append(errs, fmt.Errorf("OIDC authentication needs %s", strings.Join(missing, ", ")))
		default:
			if u, err := url.Parse(c.OIDC.TokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, errors.New("oidc_token_url must be an absolute http(s) URL"))
			}
		}
	}
	if c.InsecureSkipVerify && c.HTTPClient != nil {
		errs = append(errs, errors.New("InsecureSkipVerify cannot be combined with a custom HTTPClient; configure TLS on its transport instead"))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("timeout must not be negative"))
	}
	r := c.Retry
	if r.MaxAttempts < 0 || r.InitialBackoff < 0 || r.MaxBackoff < 0 || r.MaxRetryAfter < 0 {
		errs = append(errs, errors.New("retry settings must not be negative"))
	}
	if r.MaxBackoff > 0 && r.InitialBackoff > r.MaxBackoff {
		errs = append(errs, errors.New("retry initial backoff must not exceed max backoff"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("waldur: invalid config: %w", errors.Join(errs...))
}

// normalizeBaseURL turns waldur_api_url into the root that "/api/..." paths
// are appended to.
//
// Deliberate fix: the Python agent does api_url.rstrip("/api"), which strips
// any trailing run of the characters '/', 'a', 'p', 'i' and so mangles e.g.
// https://x.example/wapi. Here exactly one trailing "/api" path segment (with
// or without a trailing slash) is removed; any other path prefix is kept so
// Waldur can live under a sub-path.
func normalizeBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("waldur_api_url %q is not a URL: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("waldur_api_url %q must start with http:// or https://", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("waldur_api_url %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("waldur_api_url %q must not contain credentials, a query or a fragment", raw)
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/api")
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}, nil
}

// Client talks to one Waldur instance. It is safe for concurrent use.
type Client struct {
	base      *url.URL // scheme://host[/prefix], no trailing slash
	http      *http.Client
	auth      authenticator
	userAgent string
	timeout   time.Duration
	retry     RetryPolicy
	log       *slog.Logger
	secret    string // static token, redacted from error bodies

	// sleep waits between attempts; tests replace it to avoid real delays.
	sleep func(ctx context.Context, d time.Duration) error
}

// New validates cfg, applies defaults and returns a ready Client. It does not
// contact Waldur.
func New(cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, _ := normalizeBaseURL(cfg.APIURL) // validated above

	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.InsecureSkipVerify {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // explicit operator opt-in
		}
		if cfg.Proxy != "" {
			pu, err := url.Parse(cfg.Proxy)
			if err != nil {
				// Not the URL itself: it may carry the proxy's password.
				return nil, errors.New("waldur: global_proxy is not a valid URL")
			}
			tr.Proxy = http.ProxyURL(pu)
		}
		hc = &http.Client{Transport: tr}
	}
	if cfg.WrapTransport != nil {
		inner := hc.Transport
		if inner == nil {
			inner = http.DefaultTransport
		}
		wrapped := *hc
		wrapped.Transport = cfg.WrapTransport(inner)
		hc = &wrapped
	}

	c := &Client{
		base:      base,
		http:      hc,
		userAgent: cfg.UserAgent,
		timeout:   cfg.Timeout,
		retry:     cfg.Retry,
		log:       cfg.Logger,
		sleep:     sleepCtx,
	}
	if cfg.Token != "" {
		c.auth = staticToken(cfg.Token)
		c.secret = cfg.Token
	} else {
		c.auth = newOIDCSource(cfg.OIDC, hc)
	}
	return c, nil
}

// BaseURL returns the normalised root URL (without the /api suffix).
func (c *Client) BaseURL() string { return c.base.String() }

// APIError is a non-2xx answer from Waldur. It is of the kind of package
// fault its status says (Kind), so that errors.Is(err, fault.NotFound) and
// fault.IsTerminal read it.
type APIError struct {
	Method     string
	Path       string
	StatusCode int
	// Body is the response body, truncated to about 2 KB.
	Body string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("waldur: %s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Kind classifies Waldur's answer: 404 and 409 are answers a caller
// handles (an order that is gone, a state transition done already), 429
// and 5xx are Waldur busy or restarting, and any other status (400, 401,
// 403, ...) is a refusal a retry does not change: a wrong token or a
// request Waldur's validation rejects stays wrong.
func (e *APIError) Kind() fault.Kind {
	switch {
	case e.StatusCode == http.StatusNotFound:
		return fault.NotFound
	case e.StatusCode == http.StatusConflict:
		return fault.Conflict
	case e.StatusCode == http.StatusTooManyRequests, e.StatusCode >= 500:
		return fault.Unavailable
	}
	return fault.Rejected
}

// Is matches e's Kind.
func (e *APIError) Is(target error) bool { return target == e.Kind() }

// TransportError is a failure to get any HTTP answer (DNS, connect, TLS,
// timeout of a single attempt, truncated body). It is fault.Unavailable,
// except a server certificate that does not verify, which is
// fault.Rejected: it will not fix itself (waldur_api_url or the CA must
// change).
type TransportError struct {
	Method string
	Path   string
	Err    error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("waldur: %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Is matches fault.Rejected for a certificate that does not verify, and
// fault.Unavailable for any other failure to get an answer.
func (e *TransportError) Is(target error) bool {
	var cv *tls.CertificateVerificationError
	if errors.As(e.Err, &cv) {
		return target == fault.Rejected
	}
	return target == fault.Unavailable
}

// IsNotFound reports whether err is a 404 (errors.Is(err, fault.NotFound)).
func IsNotFound(err error) bool { return errors.Is(err, fault.NotFound) }

// IsConflict reports whether err is a 409 (errors.Is(err, fault.Conflict)).
func IsConflict(err error) bool { return errors.Is(err, fault.Conflict) }

// StatusCode returns the HTTP status of an *APIError in err's chain, or 0.
func StatusCode(err error) int { return statusOf(err) }

func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

// retryable reports whether the client's own loop repeats a call: Waldur
// answered 5xx or 429, gave no answer, or the OIDC token endpoint failed
// for a passing reason (fault.Unavailable). Errors caused by the caller's
// context ending are not retried (the loop checks the context first).
func retryable(err error) bool { return errors.Is(err, fault.Unavailable) }

// call is one logical API call; the retry loop turns it into HTTP attempts.
type call struct {
	method string
	u      *url.URL
	body   []byte // nil: no body
}

// do performs method on path (relative to the base, starting with /api/),
// encoding in as JSON when non-nil and decoding the response into out when
// non-nil.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	u := c.url(path, q)
	_, err := c.doURL(ctx, method, u, in, out)
	return err
}

func (c *Client) url(path string, q url.Values) *url.URL {
	u := *c.base
	u.Path = c.base.Path + path
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return &u
}

// doURL runs the retry loop and returns the headers of the successful
// response (pagination needs the Link header).
//
// POSTs are retried too: Waldur's provider actions (approve, set_state_done,
// set_backend_id, set_usage, ...) are idempotent state transitions, so a
// repeat after a lost response is harmless, while giving up would leave an
// order stuck.
func (c *Client) doURL(ctx context.Context, method string, u *url.URL, in, out any) (http.Header, error) {
	cl := call{method: method, u: u}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("waldur: %s %s: encode request: %w", method, u.Path, err)
		}
		cl.body = b
	}

	var lastErr error
	for attempt := 1; ; attempt++ {
		hdr, data, err := c.attempt(ctx, cl)
		if err == nil {
			if out != nil && method == http.MethodGet && drfError(data) {
				// Waldur (Django REST framework) errs as {"detail": ...};
				// as the answer to a read it is a proxy's or a broken
				// Waldur's, and would decode into an empty object.
				// (Actions such as approve_by_provider succeed with a
				// detail, so only reads are checked.) Retryable, as an
				// unreadable answer is (below).
				return nil, fault.Errorf(fault.Unavailable, "waldur: %s %s: HTTP 2xx answer is an error object, not a result: %s",
					method, u.Path, c.errorBody(data))
			}
			if out != nil && len(bytes.TrimSpace(data)) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					// Retryable (fault.Unavailable), not terminal: an
					// unreadable 2xx is a proxy's maintenance page or a
					// half-deployed Waldur far more often than a lasting
					// fault, and the bus's bounded redeliveries end it if
					// it lasts. It is not retried here, where a retry
					// would only repeat the same page at once.
					return nil, fault.Mark(fmt.Errorf("waldur: %s %s: decode response (Content-Type %q; is waldur_api_url the API root?): %w",
						method, u.Path, hdr.Get("Content-Type"), err), fault.Unavailable)
				}
			}
			return hdr, nil
		}
		if ctx.Err() != nil {
			// The deadline cut this attempt short: quote what Waldur said
			// last, which is what an operator can act on.
			if lastErr == nil {
				lastErr = err
			}
			return nil, c.aborted(ctx, cl, attempt, lastErr)
		}
		lastErr = err
		var ae *APIError
		if errors.As(err, &ae) && ae.StatusCode == http.StatusUnauthorized {
			c.auth.reset() // a revoked or expired OIDC token: fetch a new one next call
		}
		if !retryable(err) || attempt >= c.retry.MaxAttempts {
			return nil, retryAfter(err, hdr, ae)
		}
		wait := c.backoff(attempt, hdr, ae)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// Sleeping past the deadline is pointless; fail now with the real cause.
			return nil, c.aborted(ctx, cl, attempt, lastErr)
		}
		c.log.LogAttrs(ctx, slog.LevelDebug, "waldur: retrying",
			slog.String("method", method), slog.String("path", u.Path),
			slog.Int("attempt", attempt), slog.Duration("wait", wait), slog.String("error", err.Error()))
		if err := c.sleep(ctx, wait); err != nil {
			return nil, c.aborted(ctx, cl, attempt, lastErr)
		}
	}
}

// aborted builds the error returned when the caller's context ends. It wraps
// ctx's error (so errors.Is(err, context.DeadlineExceeded) works and
// it is not retried here) and quotes the last failure for the operator.
func (c *Client) aborted(ctx context.Context, cl call, attempts int, last error) error {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.DeadlineExceeded // deadline would pass during backoff
	}
	return fmt.Errorf("waldur: %s %s: gave up after %d attempt(s): %w (last error: %v)",
		cl.method, cl.u.Path, attempts, cause, last)
}

// attempt performs a single HTTP exchange bounded by c.timeout.
func (c *Client) attempt(ctx context.Context, cl call) (http.Header, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	authz, err := c.auth.authorization(actx)
	if err != nil {
		return nil, nil, err
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(actx, cl.method, cl.u.String(), body)
	if err != nil {
		return nil, nil, fmt.Errorf("waldur: %s %s: build request: %w", cl.method, cl.u.Path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Authorization", authz)
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, &TransportError{Method: cl.method, Path: cl.u.Path, Err: err}
	}
	defer resp.Body.Close()
	data, err := httpbody.ReadAll(resp.Body, maxResponseBody)
	if err != nil {
		return resp.Header, nil, &TransportError{Method: cl.method, Path: cl.u.Path, Err: fmt.Errorf("read response: %w", err)}
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "waldur: request",
		slog.String("method", cl.method), slog.String("url", cl.u.Redacted()),
		slog.Int("status", resp.StatusCode), slog.Duration("duration", time.Since(start)))

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.Header, nil, &APIError{
			Method:     cl.method,
			Path:       cl.u.Path,
			StatusCode: resp.StatusCode,
			Body:       c.errorBody(data),
		}
	}
	return resp.Header, data, nil
}

// drfError reports whether data is Django REST framework's error object,
// {"detail": "..."} and nothing else, which no Waldur resource is.
func drfError(data []byte) bool {
	if !bytes.Contains(data, []byte(`"detail"`)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || len(m) != 1 {
		return false
	}
	_, ok := m["detail"]
	return ok
}

// errorBody trims, redacts and truncates a response body for APIError.
func (c *Client) errorBody(data []byte) string {
	s := strings.TrimSpace(string(data))
	if c.secret != "" {
		s = strings.ReplaceAll(s, c.secret, "[REDACTED]")
	}
	return httpbody.Shorten(s, maxErrorBody)
}

// backoff returns the wait before attempt+1: Retry-After when the server
// sent one on a 429/503 (capped), otherwise full-jitter exponential backoff.
func (c *Client) backoff(attempt int, hdr http.Header, ae *APIError) time.Duration {
	if ae != nil && hdr != nil {
		if d, ok := parseRetryAfter(hdr.Get("Retry-After"), time.Now()); ok {
			return min(d, c.retry.MaxRetryAfter)
		}
	}
	ceil := c.retry.InitialBackoff
	for i := 1; i < attempt && ceil < c.retry.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.retry.MaxBackoff)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}

// retryAfter gives the error the loop gives up with the delay Waldur asked
// for (a 429's or 503's Retry-After), as fault.RetryAfter, so that the
// message bus redelivers no sooner.
func retryAfter(err error, hdr http.Header, ae *APIError) error {
	if ae == nil || hdr == nil || ae.Kind() != fault.Unavailable {
		return err
	}
	if d, ok := parseRetryAfter(hdr.Get("Retry-After"), time.Now()); ok && d > 0 {
		return fault.RetryAfter(err, d)
	}
	return err
}

// parseRetryAfter accepts delta-seconds or an HTTP date (RFC 9110 §10.2.3).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// objectPath builds "/api/<collection>/<id>/[<action>/]". The id is escaped
// but otherwise sent as given (hex or dashed UUID). An empty id is rejected
// because it would silently address the collection instead of an object.
func objectPath(collection, id, action string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("waldur: %s: empty UUID", collection)
	}
	p := "/api/" + collection + "/" + url.PathEscape(id) + "/"
	if action != "" {
		p += action + "/"
	}
	return p, nil
}

// post is a convenience for object actions: POST /api/<collection>/<id>/<action>/.
func (c *Client) post(ctx context.Context, collection, id, action string, in, out any) error {
	p, err := objectPath(collection, id, action)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p, nil, in, out)
}

// get is a convenience for GET /api/<collection>/<id>/ with optional field= filters.
func (c *Client) get(ctx context.Context, collection, id string, fields []string, out any) error {
	p, err := objectPath(collection, id, "")
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodGet, p, fieldsQuery(nil, fields), nil, out)
}

// fieldsQuery adds repeated field= keys, Waldur's sparse-fieldset syntax.
func fieldsQuery(q url.Values, fields []string) url.Values {
	if len(fields) == 0 {
		return q
	}
	if q == nil {
		q = url.Values{}
	}
	for _, f := range fields {
		q.Add("field", f)
	}
	return q
}
