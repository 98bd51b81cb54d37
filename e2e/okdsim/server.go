package okdsim

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/simkit/simkube"
)

// Defaults of Options.
const (
	DefaultToken = "sha256~okdsim-token-0001"
	DefaultUser  = "system:serviceaccount:waldur:site-agent"
)

// The OAuth client, refresh token and access token lifetime that the
// /oauth/token refresh_token grant takes and gives: fixed, not options.
const (
	OAuthClientID     = "sitebus"
	OAuthClientSecret = "okdsim-oauth-secret"
	RefreshToken      = "okdsim-refresh-token"
	OAuthTokenTTL     = 24 * time.Hour
)

// Options configure a simulator.
type Options struct {
	// Kube is the API server behind the simulator (required).
	Kube *rest.Config
	// TokenFile holds the valid bearer tokens, one per line ("token" or
	// "token user"; blank lines and # comments skipped). Empty: a file in
	// a temporary directory, removed by Close.
	TokenFile string
	// Token is written to TokenFile by New unless the file already exists.
	// Default DefaultToken.
	Token string
	// User is the user of a token line without one and of OAuth tokens:
	// the openshift.io/requester of requested projects. Default
	// DefaultUser.
	User string
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the simulator.
type Server struct {
	opts    Options
	log     *slog.Logger
	kube    *simkube.Client
	tempDir string // holds the default token file

	mu          sync.Mutex
	oauthTokens map[string]oauthToken // issued access tokens

	simkit.Base
}

// New builds a simulator; it does not listen (Start, NewTestServer, Handler).
func New(opts Options) (*Server, error) {
	if opts.Kube == nil {
		return nil, errors.New("okdsim: Options.Kube is required")
	}
	opts.Token = cmp.Or(opts.Token, DefaultToken)
	opts.User = cmp.Or(opts.User, DefaultUser)
	log := simkit.Defaults("okdsim", &opts.Now, &opts.Logger)
	k, err := simkube.New(opts.Kube, func(w http.ResponseWriter, err error) {
		writeErr(w, apierrors.NewServiceUnavailable("API server not available: "+err.Error()))
	})
	if err != nil {
		return nil, fmt.Errorf("okdsim: %w", err)
	}
	s := &Server{opts: opts, log: log, kube: k, oauthTokens: map[string]oauthToken{}}
	s.Faults = newFaults()
	if s.opts.TokenFile == "" {
		dir, err := os.MkdirTemp("", "okdsim-")
		if err != nil {
			return nil, fmt.Errorf("okdsim: token dir: %w", err)
		}
		s.tempDir = dir
		s.opts.TokenFile = filepath.Join(dir, "token")
	}
	if _, err := os.Stat(s.opts.TokenFile); errors.Is(err, os.ErrNotExist) {
		if err := s.RotateToken(s.opts.Token); err != nil {
			_ = os.RemoveAll(s.tempDir)
			return nil, fmt.Errorf("okdsim: %w", err)
		}
	}
	s.Init(s.routes(), s.log)
	return s, nil
}

// Options returns the effective options (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// Close stops serving, cutting requests held by a hanging fault, and
// removes the default token file.
func (s *Server) Close() error {
	err := s.Base.Close()
	_ = os.RemoveAll(s.tempDir) // "" (the caller's token file): nothing
	return err
}

// NewTestServer starts a simulator on 127.0.0.1 (an httptest server) closed
// by t.Cleanup.
func NewTestServer(t testing.TB, opts Options) *Server { return simkit.NewTestServer(t, New, opts) }

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

// Call is one logged request. Bodies are not kept (token requests carry
// secrets); TokenID names the bearer token sent, valid or not.
type Call struct {
	simkit.Call
	TokenID string
}

// Fault makes matching requests misbehave (see simkit.Fault); a Status
// without Body answers a Kubernetes Status body.
type Fault = simkit.Fault

func newFaults() *simkit.Faults {
	return simkit.NewFaults(simkit.FaultOptions{
		DownBody: "503 Service Unavailable", // the router in front of the API server while it restarts
		ErrorBody: func(status int) string {
			return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected fault","reason":"InternalError","code":%d}`, status)
		},
		Label: func(r *http.Request) string { return TokenID(bearer(r)) },
	})
}

// Calls returns a copy of the call log, oldest first.
func (s *Server) Calls() []Call {
	return simkit.Map(s.Faults.Calls(), func(c simkit.Call) Call {
		tok := c.Label
		c.Label = ""
		return Call{Call: c, TokenID: tok}
	})
}

var roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
