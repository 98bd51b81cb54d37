package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/keylock"
)

// Config configures a Bus. The zero value is usable: defaults are filled in
// by New.
type Config struct {
	// EventsMaxAge bounds how long events are kept for replay. Default 7 days.
	EventsMaxAge time.Duration
	// DuplicateWindow is the Nats-Msg-Id deduplication window of the events
	// stream. Default 15 minutes; at least 10, so a reconnect storm that
	// redelivers frames well after the first delivery still dedupes.
	DuplicateWindow time.Duration
	// DLQMaxAge bounds how long dead letters are kept. Default 30 days.
	DLQMaxAge time.Duration
	// Replicas of each stream and key-value bucket the bus creates, and of
	// those the services create through it (Bus.Replicas): 1 for a single
	// server, 3 on a three-node JetStream cluster. Applied on creation and
	// to existing streams, so changing it rescales them at the next start.
	Replicas int
	// Ordering of partitioned subscriptions (the events stream's): one
	// consumer per subscription, or one per slot so that replicas of a
	// service keep each key in order. Default: process.
	Ordering Ordering

	// Locker serialises handlers by ordering key across every consumer of
	// this Bus. Default: an in-process keylock.Local.
	Locker keylock.Locker

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

func (c *Config) setDefaults() {
	if c.EventsMaxAge == 0 {
		c.EventsMaxAge = 7 * 24 * time.Hour
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 15 * time.Minute
	}
	if c.DLQMaxAge == 0 {
		c.DLQMaxAge = 30 * 24 * time.Hour
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	c.Ordering.setDefaults()
	if c.Locker == nil {
		c.Locker = &keylock.Local{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
}

// Validate reports the first configuration value that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.DuplicateWindow < 10*time.Minute {
		errs = append(errs, fmt.Errorf("bus: duplicate window %s is shorter than 10m", c.DuplicateWindow))
	}
	if c.EventsMaxAge < c.DuplicateWindow {
		errs = append(errs, fmt.Errorf("bus: events max age %s is shorter than the duplicate window %s", c.EventsMaxAge, c.DuplicateWindow))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("bus: replicas %d not in 1..5", c.Replicas))
	}
	if err := c.Ordering.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Bus is a JetStream connection with sitebus's streams, publishing and
// consuming conventions.
type Bus struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	calls   callState
	locks   keylock.Locker
}

// New wraps an established NATS connection. It does not create streams; call
// EnsureStreams once at start-up.
func New(nc *nats.Conn, cfg Config) (*Bus, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Bus{
		nc:      nc,
		js:      js,
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: newMetrics(cfg.Registerer),
		tracer:  cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/pkg/bus"),
		prop:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		locks:   cfg.Locker,
	}, nil
}

// JetStream exposes the underlying JetStream context for tools (replay, dlq,
// tests) that need more than the bus offers.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Locker is the ordering-key lock shared by this Bus's consumers, for
// handlers that learn a further key while running (an order's resource).
func (b *Bus) Locker() keylock.Locker { return b.locks }

// Ordering is how partitioned subscriptions keep keys in order.
func (b *Bus) Ordering() Ordering { return b.cfg.Ordering }

// Replicas is the replica count for every stream and key-value bucket
// created on this bus, so that services creating their own apply the same.
func (b *Bus) Replicas() int { return b.cfg.Replicas }

// Conn is the underlying NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// Connected reports whether the NATS connection is up.
func (b *Bus) Connected() bool { return b.nc.IsConnected() }

// EnsureStreams creates or updates the events and dead-letter streams. It is
// idempotent, so every process runs it at start-up.
func (b *Bus) EnsureStreams(ctx context.Context) error {
	streams := []jetstream.StreamConfig{
		{
			Name:        EventsStream,
			Description: "Waldur events as received by sitebus; kept for replay",
			Subjects:    []string{EventsSubjects},
			// An event published without a partition (by a version from
			// before partitions, or by hand with `nats pub`) is stored
			// with the partition of an event that names nothing, so
			// consumers need no second filter for it; see consumerSpecs.
			SubjectTransform: &jetstream.SubjectTransformConfig{
				Source:      "waldur.*.*",
				Destination: "waldur.{{wildcard(1)}}.{{wildcard(2)}}." + PartitionToken(Partition("")),
			},
			Retention:  jetstream.LimitsPolicy,
			Storage:    jetstream.FileStorage,
			MaxAge:     b.cfg.EventsMaxAge,
			Duplicates: b.cfg.DuplicateWindow,
			Replicas:   b.cfg.Replicas,
			Discard:    jetstream.DiscardOld,
		},
		{
			Name:        DLQStream,
			Description: "Dead letters: messages no handler could process, with the reason",
			Subjects:    []string{DLQSubjects},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      b.cfg.DLQMaxAge,
			Duplicates:  b.cfg.DuplicateWindow,
			Replicas:    b.cfg.Replicas,
		},
	}
	for _, sc := range streams {
		if _, err := EnsureStream(ctx, b.js, sc); err != nil {
			return fmt.Errorf("bus: ensure stream %s: %w", sc.Name, err)
		}
	}
	return nil
}

// EnsureCommandStream creates or updates the work-queue stream that carries
// one service's commands. Work-queue retention deletes a command once it is
// acked, so a command is executed by exactly one consumer.
func (b *Bus) EnsureCommandStream(ctx context.Context, service string) error {
	if !ValidToken(service) {
		return fmt.Errorf("bus: invalid service name %q", service)
	}
	_, err := EnsureStream(ctx, b.js, jetstream.StreamConfig{
		Name:        CommandStream(service),
		Description: "Commands for the " + service + " service",
		Subjects:    []string{CommandSubjects(service)},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  b.cfg.DuplicateWindow,
		Replicas:    b.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("bus: ensure command stream for %s: %w", service, err)
	}
	return nil
}
