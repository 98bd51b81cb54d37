package httpbody

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadAllReadsUpToTheLimitAndRefusesMore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		limit   int64
		wantErr string
	}{
		{"a body under the limit is read whole", "abc", 4, ""},
		{"a body of exactly the limit is read whole", "abcd", 4, ""},
		{"a body past the limit is not read and names the limit", "abcde", 4, "answer larger than the 4 byte limit, not read"},
		{"a limit of whole MiB is named in MiB", strings.Repeat("x", 1<<20+1), 1 << 20, "answer larger than the 1 MiB limit, not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadAll(strings.NewReader(tc.body), tc.limit)
			checkRead(t, string(data), err, tc.body, tc.wantErr)
		})
	}
}

func TestLimitFailsTheReadPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		limit   int64
		wantErr string
	}{
		{"a body under the limit is read whole", "abc", 4, ""},
		{"a body of exactly the limit is read whole", "abcd", 4, ""},
		{"a body past the limit fails and names the limit", "abcde", 4, "answer larger than the 4 byte limit, not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := io.ReadAll(Limit(io.NopCloser(strings.NewReader(tc.body)), tc.limit))
			checkRead(t, string(data), err, tc.body, tc.wantErr)
		})
	}
}

func checkRead(t *testing.T, got string, err error, body, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil || got != body {
			t.Fatalf("got %q, %v; want %q", got, err, body)
		}
		return
	}
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != wantErr {
		t.Fatalf("got error %v; want a *TooLargeError %q", err, wantErr)
	}
}

func TestShortenCutsAtABoundaryOfValidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"a short text is kept", "abc", 3, "abc"},
		{"a long text is cut and marked", "abcdef", 3, "abc" + Truncated},
		{"a rune split by the cut is dropped", "aé", 2, "a" + Truncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Shorten(tc.s, tc.n)
			if got != tc.want || !utf8.ValidString(got) {
				t.Fatalf("Shorten(%q, %d) = %q; want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}
