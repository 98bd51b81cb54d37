package waldur

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxPages stops a server that keeps sending rel="next" from looping forever
// (1,000,000 objects at page_size=100).
const maxPages = 10000

// list GETs every page of a Waldur list endpoint. Waldur list endpoints return
// a JSON array per page and advertise the next page in an RFC 8288 (RFC 5988)
// Link header. The next URL is used as given, except that its scheme and host
// are forced to the configured base: the Authorization header must never go
// to another host, and a Waldur behind a TLS-terminating proxy often emits
// http:// links.
func list[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, error) {
	pq := url.Values{}
	for k, v := range q {
		pq[k] = append([]string(nil), v...)
	}
	if pq.Get("page_size") == "" {
		pq.Set("page_size", strconv.Itoa(pageSize))
	}
	u := c.url(path, pq)

	var all []T
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("waldur: GET %s: more than %d pages", path, maxPages)
		}
		seen[u.String()] = true
		var items []T
		hdr, err := c.doURL(ctx, http.MethodGet, u, nil, &items)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)

		next := nextLink(hdr)
		if next == "" {
			return all, nil
		}
		nu, err := u.Parse(next) // resolves relative links too
		if err == nil && nu.Opaque != "" {
			// "a0:0" parses as an opaque URL of scheme a0: its path is not
			// a path of Waldur's, whatever scheme and host it is given.
			err = errors.New("not a hierarchical URL")
		}
		if err != nil {
			return nil, fmt.Errorf("waldur: GET %s: bad Link rel=next %q: %w", path, next, err)
		}
		if nu.Scheme != c.base.Scheme || nu.Host != c.base.Host {
			c.log.DebugContext(ctx, "waldur: pagination link points at another host; using the configured one",
				"link_host", nu.Host, "base_host", c.base.Host)
			nu.Scheme, nu.Host = c.base.Scheme, c.base.Host
		}
		nu.User = nil
		if seen[nu.String()] {
			return nil, fmt.Errorf("waldur: GET %s: pagination loops back to %s", path, nu.Redacted())
		}
		u = nu
	}
}

// nextLink returns the target of the rel="next" entry of the Link headers,
// or "" if there is none.
func nextLink(h http.Header) string {
	if h == nil {
		return ""
	}
	for _, v := range h.Values("Link") {
		for {
			start := strings.IndexByte(v, '<')
			if start < 0 {
				break
			}
			end := strings.IndexByte(v[start:], '>')
			if end < 0 {
				break
			}
			end += start
			target := v[start+1 : end]
			v = v[end+1:]
			params := v
			if i := strings.IndexByte(v, '<'); i >= 0 {
				params = v[:i]
			}
			if hasRelNext(params) {
				return strings.TrimSpace(target)
			}
		}
	}
	return ""
}

// hasRelNext parses `; rel="next"; title=...,` parameters. rel may hold
// several space-separated relation types.
func hasRelNext(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, val, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
			continue
		}
		val = strings.Trim(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(val), ",")), `"`)
		for _, r := range strings.Fields(val) {
			if strings.EqualFold(r, "next") {
				return true
			}
		}
	}
	return false
}
