// Package coordinator is the saga coordinator service (the service around
// the saga library pkg/saga; the definitions it runs are in pkg/contract): it runs the multi-step
// operations that span services (Keycloak groups, the platform object, the
// team, Waldur) and undoes what a failed one did. Each step is a command to
// the service that owns it (bus.Call), keyed by saga, step and phase, so a
// coordinator that crashed and resumed gets the stored answer of a command
// that already ran instead of running it again.
package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
)

// Name is the service name used by --only.
const Name = contract.Coordinator

// Config configures the service.
type Config struct {
	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
	// StepTimeout bounds one command of a step. Default 2 minutes.
	StepTimeout time.Duration
	// LeaseTTL is how long a coordinator owns a saga (see saga.Config).
	LeaseTTL time.Duration
	// Owner is the coordinator's lease identity (see saga.Config): the
	// process identity, kept across restarts.
	Owner string
	// Retention is how long a finished saga is kept (see saga.Config).
	Retention time.Duration
}

// Service runs the coordinator with sitebus's saga definitions.
type Service struct {
	coord *saga.Coordinator
	ready chan struct{}
}

// New registers the definitions and their activities.
func New(b *bus.Bus, cfg Config) (*Service, error) {
	if cfg.StepTimeout == 0 {
		cfg.StepTimeout = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	coord, err := saga.New(b.JetStream(), saga.Config{Logger: cfg.Logger.With("service", Name), Registerer: cfg.Registerer, TracerProvider: cfg.TracerProvider, LeaseTTL: cfg.LeaseTTL, Owner: cfg.Owner, Retention: cfg.Retention, Replicas: b.Replicas()})
	if err != nil {
		return nil, err
	}
	a := activities{bus: b}
	for name, fn := range a.all() {
		coord.RegisterActivity(name, fn)
	}
	for _, def := range contract.Definitions(cfg.StepTimeout) {
		if err := coord.Register(def); err != nil {
			return nil, err
		}
	}
	return &Service{coord: coord, ready: make(chan struct{})}, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Run drives sagas until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	close(s.ready)
	return s.coord.Run(ctx)
}

// Ready reports whether the coordinator runs.
func (s *Service) Ready(context.Context) error {
	select {
	case <-s.ready:
		return nil
	default:
		return errors.New("saga coordinator not started")
	}
}
