// Package httpbody bounds what sitebus reads of an outside system's HTTP
// answer and what it quotes of one in an error. Every client of an outside
// system (Waldur, Keycloak, Rancher, OpenStack, Vault) meets the same
// hostile answers: a runaway body that would exhaust memory, and a proxy's
// error page that would flood logs, traces and Waldur's order error. One
// mechanism here keeps the limits, and the words that name them, alike.
package httpbody

import (
	"fmt"
	"io"
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
