package keycloak

import (
	"context"
	"sync"
	"time"
)

// tokenCache holds the admin access token and renews it before it expires,
// so calls rarely meet a 401: at the latest when a quarter of its life (at
// most 30 s) is left.
type tokenCache struct {
	login func(context.Context) (string, time.Duration, error)
	now   func() time.Time

	mu      sync.Mutex // held during login, so concurrent callers share one
	token   string
	renewAt time.Time
}

func (t *tokenCache) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.renewAt) {
		return t.token, nil
	}
	tok, life, err := t.login(ctx)
	if err != nil {
		t.token = ""
		return "", err
	}
	t.token, t.renewAt = tok, t.now().Add(life-min(life/4, 30*time.Second))
	return tok, nil
}

// drop forgets tok (refused with a 401) unless it was replaced already.
func (t *tokenCache) drop(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == tok {
		t.token = ""
	}
}
