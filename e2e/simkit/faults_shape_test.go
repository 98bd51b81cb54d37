package simkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// ContentType, Size and Trickle shape a fault's answer into a broken
// peer's: the type it claims, a body of exactly Size bytes of Body over
// and over, and a body that still arrives whole when it drips.
func TestAFaultShapesItsAnswersTypeLengthAndPace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      Fault
		wantCT string
		want   string
	}{
		{"content type replaces the implied one", Fault{Status: 200, Body: `{"a":1}`, ContentType: "text/html"}, "text/html", `{"a":1}`},
		{"size repeats the body and cuts it", Fault{Status: 200, Body: "ab", Size: 5}, "text/plain; charset=utf-8", "ababa"},
		{"size with no body is spaces", Fault{Status: 200, Size: 3, ContentType: "application/json"}, "application/json", "   "},
		{"trickle still sends the whole body", Fault{Status: 200, Body: `{"x":1}`, Trickle: time.Millisecond}, "application/json", `{"x":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFaults(FaultOptions{})
			fs.AddFault(tc.f)
			srv := httptest.NewServer(fs.Middleware(http.NotFoundHandler()))
			t.Cleanup(srv.Close)
			resp, err := http.Get(srv.URL + "/x")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tc.wantCT || string(body) != tc.want {
				t.Errorf("got %q %q, want %q %q", ct, body, tc.wantCT, tc.want)
			}
		})
	}
}
