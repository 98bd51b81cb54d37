package keycloak

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/sitebus/sitebus/pkg/fault"
)

func TestClassify(t *testing.T) {
	apiErr := func(code int, msg string) error { return &gocloak.APIError{Code: code, Message: msg} }
	tests := []struct {
		name string
		err  error
		kind error
		// retried by the client's own loop; terminal by fault.IsTerminal.
		retried, terminal bool
	}{
		{"a transport error is retryable", apiErr(0, "could not get groups: dial tcp: connection refused"), ErrUnavailable, true, false},
		{"a 500 is retryable", apiErr(500, "500 Internal Server Error"), ErrUnavailable, true, false},
		{"a 503 is retryable", apiErr(503, "503 Service Unavailable"), ErrUnavailable, true, false},
		{"a 429 is retryable", apiErr(429, "429 Too Many Requests"), ErrUnavailable, true, false},
		{"a 401 is retryable", apiErr(401, "401 Unauthorized: HttpUnauthorizedException"), ErrUnauthorized, true, false},
		{"a 401 is of the unavailable kind", apiErr(401, "401 Unauthorized: HttpUnauthorizedException"), fault.Unavailable, true, false},
		{"a 404 is an answer the caller handles, retried if it does not", apiErr(404, "404 Not Found: Could not find group by id"), ErrNotFound, false, false},
		{"a 409 (a sibling group has the name) is an answer the caller handles", apiErr(409, "409 Conflict: Top level group named 'x' already exists."), ErrConflict, false, false},
		{"a 400 is terminal", apiErr(400, "400 Bad Request: Group name is missing"), ErrRejected, false, true},
		{"a 403 is terminal", apiErr(403, "403 Forbidden"), ErrRejected, false, true},
		{"a non-API error is a terminal bug", errors.New("could not get groups: json: bad"), ErrInvalid, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := classify(context.Background(), "op", tc.err)
			if !errors.Is(err, tc.kind) {
				t.Errorf("%v is not %v", err, tc.kind)
			}
			if retryable(err) != tc.retried || fault.IsTerminal(err) != tc.terminal {
				t.Errorf("retried %v terminal %v, want %v %v", retryable(err), fault.IsTerminal(err), tc.retried, tc.terminal)
			}
			if wrapped := fmt.Errorf("step: %w", err); retryable(wrapped) != tc.retried || fault.IsTerminal(wrapped) != tc.terminal {
				t.Error("classification lost through wrapping")
			}
		})
	}
}

func TestClassifySpecialCases(t *testing.T) {
	t.Run("a cancelled context is neither retryable nor terminal", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := classify(ctx, "op", &gocloak.APIError{Message: "context canceled"})
		if !errors.Is(err, context.Canceled) || retryable(err) || fault.IsTerminal(err) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("rejected credentials are terminal and say which keys to check", func(t *testing.T) {
		err := classifyLogin(context.Background(), &gocloak.APIError{Code: 401, Message: "401 Unauthorized: invalid_grant: Invalid user credentials"})
		if !errors.Is(err, ErrCredentials) || errors.Is(err, ErrUnauthorized) || !fault.IsTerminal(err) || retryable(err) {
			t.Errorf("got %v", err)
		}
		want := "keycloak: log in: HTTP 401: invalid_grant: Invalid user credentials (check keycloak_username"
		if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("message %q", got)
		}
	})
	t.Run("a token endpoint that is down stays retryable", func(t *testing.T) {
		err := classifyLogin(context.Background(), &gocloak.APIError{Code: 503, Message: "503 Service Unavailable"})
		if !retryable(err) || fault.IsTerminal(err) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("a group that is not ours is terminal", func(t *testing.T) {
		err := &Error{Op: "delete group x", Msg: "not ours", kind: ErrNotManaged}
		if !fault.IsTerminal(err) || !errors.Is(err, fault.NotManaged) {
			t.Error("not terminal")
		}
	})
	t.Run("the status prefix is not repeated", func(t *testing.T) {
		err := classify(context.Background(), "get group g", &gocloak.APIError{Code: 404, Message: "404 Not Found: Could not find group by id"})
		if got := err.Error(); got != "keycloak: get group g: HTTP 404: Could not find group by id" {
			t.Errorf("got %q", got)
		}
	})
}

func TestBackoff(t *testing.T) {
	c := &Client{cfg: Config{RetryBase: 100 * time.Millisecond, RetryMax: time.Second}}
	tests := []struct {
		name     string
		attempt  int
		min, max time.Duration
	}{
		{"the first wait is around the base", 1, 50 * time.Millisecond, 100 * time.Millisecond},
		{"waits double", 3, 200 * time.Millisecond, 400 * time.Millisecond},
		{"waits are capped", 10, 500 * time.Millisecond, time.Second},
		{"huge attempts do not overflow", 80, 500 * time.Millisecond, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				if d := c.backoff(tc.attempt); d < tc.min || d > tc.max {
					t.Fatalf("backoff(%d) = %v, want [%v, %v]", tc.attempt, d, tc.min, tc.max)
				}
			}
		})
	}
}

func TestTokenCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	logins := 0
	tc := &tokenCache{
		now: func() time.Time { return now },
		login: func(context.Context) (string, time.Duration, error) {
			logins++
			return fmt.Sprintf("t%d", logins), 60 * time.Second, nil
		},
	}
	get := func() string {
		tok, err := tc.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	steps := []struct {
		name    string
		advance time.Duration
		drop    string
		want    string
	}{
		{"the first call logs in", 0, "", "t1"},
		{"the token is reused while fresh", 40 * time.Second, "", "t1"},
		{"a token is renewed with a quarter of its life left", 6 * time.Second, "", "t2"},
		{"dropping an old token keeps the new one", 0, "t1", "t2"},
		{"dropping the current token forces a login", 0, "t2", "t3"},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.drop != "" {
			tc.drop(s.drop)
		}
		if got := get(); got != s.want {
			t.Errorf("%s: got %s, want %s", s.name, got, s.want)
		}
	}
}
