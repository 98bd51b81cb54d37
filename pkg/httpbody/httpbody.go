// Package httpbody bounds what sitebus reads of an outside system's HTTP
// answer and what it quotes of one in an error. Every client of an outside
// system (Waldur, Keycloak, Rancher, OpenStack, Vault) meets the same
// hostile answers: a runaway body that would exhaust memory, and a proxy's
// error page that would flood logs, traces and Waldur's order error. One
// mechanism here keeps the limits, and the words that name them, alike.
package httpbody

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// TooLargeError is the read error of an answer longer than its limit.
// The answer is not read at all rather than cut: a cut answer would fail
// to decode with a message that hides why, where naming the limit tells
// the operator.
type TooLargeError struct {
	Limit int64 // bytes
}

func (e *TooLargeError) Error() string {
	if e.Limit >= 1<<20 && e.Limit%(1<<20) == 0 {
		return fmt.Sprintf("answer larger than the %d MiB limit, not read", e.Limit>>20)
	}
	return fmt.Sprintf("answer larger than the %d byte limit, not read", e.Limit)
}

// ReadAll reads r to its end, or fails with a *TooLargeError once more
// than limit bytes came.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return data, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return data, nil
}

// Limit returns body so that reading it fails with a *TooLargeError once
// more than limit bytes came, for a library that reads the body itself
// (resty under gocloak reads it whole).
func Limit(body io.ReadCloser, limit int64) io.ReadCloser {
	return &limited{ReadCloser: body, left: limit, limit: limit}
}

type limited struct {
	io.ReadCloser
	left, limit int64
}

func (b *limited) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n == 0 {
			return b.ReadCloser.Read(p) // io.EOF, or the transport's error
		}
		return 0, &TooLargeError{Limit: b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// Truncated marks where Shorten cut a text.
const Truncated = "…(truncated)"

// Shorten cuts s to at most n bytes of valid UTF-8, marking the cut with
// Truncated, for an outside system's text an error quotes.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + Truncated
}

// MaxBody is the default cap of one answer of an outside system: far
// above any list sitebus reads, far below what would exhaust memory.
const MaxBody = 64 << 20

// Guard is an http.RoundTripper for client libraries that read answers
// themselves (client-go, gophercloud, Vault's api): each reads a body
// whole and without a cap, and takes a 2xx answer for a result whatever
// it holds. Guard reads a 2xx body first, at most Limit bytes, and fails
// the round trip (an answer not got, which every client retries) when it
// is longer, of a media type the peer never sends (a proxy's sign-in
// page) or the peer's error object under a 2xx (a gateway's, or a peer
// gone wrong). Other answers are left to the client, with their bodies
// capped: the client's own error handling reads them.
type Guard struct {
	// Next does the round trip; nil is http.DefaultTransport.
	Next http.RoundTripper
	// Peer names the outside system in errors ("OpenStack").
	Peer string
	// Limit caps a body; 0 is MaxBody.
	Limit int64
	// MediaTypes, when set, are the media types a non-empty 2xx body may
	// have (parameters aside); any other fails.
	MediaTypes []string
	// ErrorObject, when set, reports whether a 2xx body is the peer's
	// error object rather than a result.
	ErrorObject func(body []byte) bool
	// Stream, when set, reports requests whose answers are streams (a
	// Kubernetes watch): their bodies are capped, never read ahead.
	Stream func(r *http.Request) bool
}

// AnswerError is a 2xx answer Guard refused: Cause says why.
type AnswerError struct {
	Peer   string
	Status int
	Cause  string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("%s's HTTP %d answer %s", e.Peer, e.Status, e.Cause)
}

// RoundTrip implements http.RoundTripper.
func (g *Guard) RoundTrip(r *http.Request) (*http.Response, error) {
	next := g.Next
	if next == nil {
		next = http.DefaultTransport
	}
	limit := g.Limit
	if limit <= 0 {
		limit = MaxBody
	}
	resp, err := next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 || (g.Stream != nil && g.Stream(r)) {
		resp.Body = Limit(resp.Body, limit)
		return resp, nil
	}
	if resp.ContentLength > limit {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", g.Peer, &TooLargeError{Limit: limit})
	}
	data, err := ReadAll(resp.Body, limit)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.Peer, err)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if len(g.MediaTypes) > 0 {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if !slices.Contains(g.MediaTypes, mt) {
				return nil, &AnswerError{Peer: g.Peer, Status: resp.StatusCode,
					Cause: fmt.Sprintf("of Content-Type %q is not %s's JSON (a proxy in between?)", Shorten(mt, 64), g.Peer)}
			}
		}
		if g.ErrorObject != nil && g.ErrorObject(data) {
			return nil, &AnswerError{Peer: g.Peer, Status: resp.StatusCode, Cause: "is its error object, not a result"}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// CloseIdleConnections passes the call on to Next, so a client's
// CloseIdleConnections reaches the transport under a Guard.
func (g *Guard) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := g.Next.(closer); ok {
		c.CloseIdleConnections()
	}
}
