package simkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestCall sends a test client's request to a simulator: method on
// base+path, body (nil: none) as JSON under contentType, Accept JSON, and
// auth (nil: none) adding the client's credentials. It returns the status
// and body; failing to send or read fails t.
func TestCall(ctx context.Context, t testing.TB, hc *http.Client, method, base, path, contentType string, body any, auth func(*http.Request)) (status int, raw []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != nil {
		auth(req)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}
