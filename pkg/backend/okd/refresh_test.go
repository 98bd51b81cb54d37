package okd

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/fault"
)

// The bodies the OpenShift API server sends with a refused token and with
// a token whose account lacks the permission (metav1.Status). The tests'
// tokens are all of one length, so a rotation keeps the file's size.
const (
	unauthorizedStatus = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	forbiddenStatus    = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"waldur-alloc-x\" is forbidden: User \"system:serviceaccount:waldur:agent\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"waldur-alloc-x\"","reason":"Forbidden","details":{"name":"waldur-alloc-x","kind":"namespaces"},"code":403}`
	namespaceBody      = `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"waldur-alloc-x","labels":{"app.kubernetes.io/managed-by":"sitebus"}}}`
)

// refusingServer is an OpenShift API server that answers every request
// carrying a token other than *valid with a refusal (status and Status
// body), and records the tokens it got.
type refusingServer struct {
	mu     sync.Mutex
	valid  string
	status int
	seen   []string
}

func (s *refusingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+s.valid {
		w.WriteHeader(s.status)
		body := unauthorizedStatus
		if s.status == http.StatusForbidden {
			body = forbiddenStatus
		}
		_, _ = w.Write([]byte(body))
		return
	}
	_, _ = w.Write([]byte(namespaceBody))
}

func (s *refusingServer) tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// A backend whose token file an external system rotates: the API server
// refuses the old token with a 401 or a 403 (the Python OKD plugin
// refreshes on both), the backend reads the file again and the call is
// sent once more; a second refusal is an error in sitebus's vocabulary.
func TestTokenRefusedIsRefreshedOnce(t *testing.T) {
	tests := map[string]struct {
		status     int
		fileHolds  string // the token file's content when the call is made
		wantTokens []string
		wantErr    string // "" = the call succeeds
	}{
		"a 401 reads the rotated token file and retries once": {
			status: http.StatusUnauthorized, fileHolds: "new-1",
			wantTokens: []string{"old-1", "new-1"},
		},
		"a 403 reads the rotated token file and retries once": {
			status: http.StatusForbidden, fileHolds: "new-1",
			wantTokens: []string{"old-1", "new-1"},
		},
		"a 401 again after the refresh is an error saying the token was refused": {
			status: http.StatusUnauthorized, fileHolds: "old-2",
			wantTokens: []string{"old-1", "old-2"}, wantErr: "the token was refused, also after a refresh",
		},
		"a 403 again after the refresh is an error saying it is forbidden": {
			status: http.StatusForbidden, fileHolds: "old-2",
			wantTokens: []string{"old-1", "old-2"}, wantErr: "forbidden, also after a refresh",
		},
		"an unchanged token file is not sent twice": {
			status: http.StatusForbidden, fileHolds: "old-1",
			wantTokens: []string{"old-1"}, wantErr: "forbidden, also after a refresh",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := &refusingServer{valid: "new-1", status: tc.status}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			path := filepath.Join(t.TempDir(), "token")
			writeToken(t, path, "old-1")
			s := DefaultSettings()
			s.APIURL, s.TokenType, s.TokenFilePath = ts.URL, TokenFile, path
			b, err := New(s, map[string]config.BackendComponent{"cpu": {}}, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			// Read the old token once, then rotate it behind the
			// backend's back, keeping size and time: only the refusal can
			// tell (see fileToken).
			if _, err := b.tokens.Token(t.Context()); err != nil {
				t.Fatal(err)
			}
			rewriteInPlace(t, path, tc.fileHolds)

			ok, err := b.Exists(t.Context(), "waldur-alloc-x")
			if got := srv.tokens(); strings.Join(got, ",") != strings.Join(tc.wantTokens, ",") {
				t.Errorf("tokens sent %v, want %v", got, tc.wantTokens)
			}
			if tc.wantErr == "" {
				if err != nil || !ok {
					t.Fatalf("Exists = %v, %v; want true after the refresh", ok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
			// As before the 403 counted: the API server's refusal is
			// retried later (a token file not rewritten yet, a grant not
			// given yet), never terminal at once.
			if !errors.Is(err, fault.Unavailable) || fault.IsTerminal(err) {
				t.Errorf("err kind %q, terminal %v; want unavailable, retried", fault.KindOf(err), fault.IsTerminal(err))
			}
			if strings.Contains(err.Error(), "old-2") || strings.Contains(err.Error(), "new-1") {
				t.Errorf("the error quotes a token: %v", err)
			}
		})
	}
}

// A status that is not a refusal of the token is returned at once.
func TestOtherStatusIsNotRetried(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(ts.Close)
	if got := post(t, client(&rotatingSource{}), ts.URL, ""); got != http.StatusInternalServerError {
		t.Errorf("status %d", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("%d requests, want 1", calls)
	}
}

// rewriteInPlace replaces the token file with tok of the same length,
// keeping its modification time, as a copy that keeps times does.
func rewriteInPlace(t *testing.T, path, tok string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	writeToken(t, path, tok)
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}
