package httpbody

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// ReadAll and a Limit-ed body read alike: a body up to the limit whole,
// a longer one not at all, with an error that names the limit.
func TestReadAllAndLimitReadUpToTheLimitAndRefuseMore(t *testing.T) {
	readers := map[string]func(body string, limit int64) ([]byte, error){
		"ReadAll": func(body string, limit int64) ([]byte, error) { return ReadAll(strings.NewReader(body), limit) },
		"Limit": func(body string, limit int64) ([]byte, error) {
			return io.ReadAll(Limit(io.NopCloser(strings.NewReader(body)), limit))
		},
	}
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
		for name, read := range readers {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				data, err := read(tc.body, tc.limit)
				checkRead(t, string(data), err, tc.body, tc.wantErr)
			})
		}
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

// answer is a RoundTripper that answers every request with one response.
type answer struct {
	status int
	ctype  string
	body   string
}

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	h := http.Header{}
	if a.ctype != "" {
		h.Set("Content-Type", a.ctype)
	}
	return &http.Response{StatusCode: a.status, Header: h, ContentLength: -1,
		Body: io.NopCloser(strings.NewReader(a.body))}, nil
}

func TestGuardRefusesWhatAClientLibraryWouldTakeForAResult(t *testing.T) {
	isError := func(b []byte) bool { return strings.Contains(string(b), `"errors"`) }
	for _, tc := range []struct {
		name   string
		answer answer
		stream bool
		fails  string // "" passes the answer on whole
	}{
		{"a JSON result passes", answer{200, "application/json; charset=utf-8", `{"data": 1}`}, false, ""},
		{"an empty 204 passes whatever its type", answer{204, "text/html", ""}, false, ""},
		{"a sign-in page under 200 fails", answer{200, "text/html", "<html>sign in</html>"}, false, `Content-Type "text/html"`},
		{"the peer's error object under 200 fails", answer{200, "application/json", `{"errors": ["sealed"]}`}, false, "error object"},
		{"a body past the limit fails", answer{200, "application/json", `"` + strings.Repeat("x", 64) + `"`}, false, "64 byte limit"},
		{"an error status is left to the client", answer{503, "text/html", "<html>down</html>"}, false, ""},
		{"a stream is not read ahead", answer{200, "text/html", "<html>"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Guard{Next: tc.answer, Peer: "Vault", Limit: 64, MediaTypes: []string{"application/json"}, ErrorObject: isError,
				Stream: func(*http.Request) bool { return tc.stream }}
			resp, err := g.RoundTrip(httptest.NewRequest(http.MethodGet, "http://peer/x", nil))
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) || !strings.Contains(err.Error(), "Vault") {
					t.Fatalf("error %v, want one naming Vault and %q", err, tc.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || string(b) != tc.answer.body {
				t.Fatalf("body %q, %v; want %q", b, err, tc.answer.body)
			}
		})
	}
}

func TestGuardCapsTheBodyOfAnErrorStatus(t *testing.T) {
	g := &Guard{Next: answer{502, "text/html", strings.Repeat("x", 100)}, Peer: "OpenStack", Limit: 10}
	resp, err := g.RoundTrip(httptest.NewRequest(http.MethodGet, "http://peer/x", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tooLarge *TooLargeError
	if _, err := io.ReadAll(resp.Body); !errors.As(err, &tooLarge) {
		t.Fatalf("read error %v, want a *TooLargeError", err)
	}
}
