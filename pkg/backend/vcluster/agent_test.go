package vcluster

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/httpbody"
)

// A manifest past the limit fails the fetch whole: cut at the limit, its
// first objects would be applied and the rest silently dropped.
func TestFetchManifestPastTheLimitFailsWholeAndNeverQuotesTheURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.Copy(w, io.LimitReader(strings.NewReader(strings.Repeat("apiVersion: v1\n", 600_000)), 9<<20))
	}))
	defer srv.Close()
	url := srv.URL + "/v3/import/secret-token_c-m-x.yaml"
	body, err := FetchManifest(context.Background(), srv.Client(), url, false)
	var tooLarge *httpbody.TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("FetchManifest = %d bytes, %v; want a too-large error", len(body), err)
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("the error quotes the registration token: %v", err)
	}
}
