package waldursim

import (
	"cmp"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Config configures a simulator.
type Config struct {
	// Fixture seeds the state; nil means empty (no users: every API call 401s).
	Fixture *Fixture
	// Rabbit is the broker events go to; nil disables the broker side
	// (subscriptions and queues are then only recorded).
	Rabbit *RabbitConfig
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Version is what /api/version/ reports.
	Version string
	// Now defaults to time.Now; tests may pin it.
	Now func() time.Time
	// Latency delays every /api/ answer, as a Waldur across a WAN or under
	// load would: throughput measured against an instant Waldur flatters.
	Latency time.Duration
}

// RabbitConfig says how to reach RabbitMQ the way Mastermind does: the
// management API to create vhosts, users and queues, and plain STOMP with
// the admin user to publish.
type RabbitConfig struct {
	MgmtURL              string // http://127.0.0.1:15672
	STOMPAddr            string // 127.0.0.1:61613
	AdminUser, AdminPass string
}

// Server is the simulator. Its state lives in memory behind one mutex.
type Server struct {
	cfg Config
	log *slog.Logger
	pub *publisher

	mu sync.Mutex
	st *state

	simkit.Base
}

// New builds a simulator from cfg; it does not listen (see Start, Handler).
func New(cfg Config) (*Server, error) {
	log := simkit.Defaults("waldursim", &cfg.Now, &cfg.Logger)
	cfg.Version = cmp.Or(cfg.Version, "7.7.0")
	if cfg.Fixture == nil {
		cfg.Fixture = &Fixture{}
	}
	s := &Server{cfg: cfg, log: log}
	s.Faults = simkit.NewFaults(simkit.FaultOptions{
		DownBody:  `{"detail": "Service temporarily unavailable, try again later."}`, // DRF's 503
		ErrorBody: func(int) string { return `{"detail": "Injected fault."}` },
		KeepBody:  func(*http.Request) bool { return true },
		Label:     func(r *http.Request) string { return r.UserAgent() },
	})
	st, err := newState(cfg.Fixture, s.now)
	if err != nil {
		return nil, err
	}
	s.st = st
	if cfg.Rabbit != nil {
		s.pub = newPublisher(*cfg.Rabbit, s.log)
	}
	s.InitGraceful(s.routes(), s.log, 5*time.Second)
	return s, nil
}

func (s *Server) now() string { return s.cfg.Now().UTC().Format("2006-01-02T15:04:05.000000Z") }

// Close stops serving and drops the broker connections.
func (s *Server) Close() error {
	err := s.Base.Close()
	if s.pub != nil {
		s.pub.close()
	}
	return err
}

// NewTestServer starts a simulator on an httptest server closed by
// t.Cleanup.
func NewTestServer(t testing.TB, cfg Config) *Server { return simkit.NewTestServer(t, New, cfg) }

// Admin returns an AdminClient for this server (after Start/NewTestServer).
func (s *Server) Admin() *AdminClient { return NewAdminClient(s.URL()) }
