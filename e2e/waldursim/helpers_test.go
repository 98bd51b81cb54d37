package waldursim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }

// Fixture identifiers (testdata/fixture.yaml).
const (
	token       = "7d2f0c4b9e8a41d3a6b5c4d3e2f1a0b9"
	userUUID    = "3f1c2b7e9a4d4c8e8f0a1b2c3d4e5f60"
	offering    = "d1a2b3c4e5f64a7b8c9d0e1f2a3b4c5d"
	project     = "5e4d3c2b1a0948f7a6e5d4c3b2a19087"
	resAlpha    = "a0000000000040008000000000000001"
	resBeta     = "a0000000000040008000000000000002"
	pendingOrd  = "b0000000000040008000000000000001"
	otherToken  = "0123456789abcdef0123456789abcdef"
	otherUserID = "e0000000000040008000000000000009"
)

func loadFixture(t *testing.T) *waldursim.Fixture {
	t.Helper()
	fx, err := waldursim.LoadFixture("testdata/fixture.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A second user, to check subscriptions are private.
	fx.Users = append(fx.Users, waldursim.User{UUID: otherUserID, Username: "other", Token: otherToken})
	return fx
}

func newSim(t *testing.T, cfg waldursim.Config) *waldursim.Server {
	t.Helper()
	if cfg.Fixture == nil {
		cfg.Fixture = loadFixture(t)
	}
	return waldursim.NewTestServer(t, cfg)
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

// call performs an API request authenticated with tok ("" for none).
func call(t *testing.T, s *waldursim.Server, method, path, tok, body string) response {
	t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = s.URL() + path
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Token "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(data)}
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}
