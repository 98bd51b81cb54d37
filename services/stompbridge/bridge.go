// Package stompbridge is the STOMP bridge service: it takes Waldur's events
// from its RabbitMQ broker and stores them in the JetStream events stream,
// acking each frame only once JetStream has it, so nothing is lost between
// the two. It also runs the order reconciler, which polls Waldur for pending
// orders so that a frame the broker never delivered cannot lose an order.
package stompbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Name is the service name used by --only.
const Name = "stomp-bridge"

// Offering is one configured offering with its Waldur client.
type Offering struct {
	Config *config.Offering
	Waldur *waldur.Client
}

// Config configures the bridge.
type Config struct {
	Offerings []Offering
	Stomp     config.StompSettings
	// OrderPollPeriod is how often the reconciler lists pending orders.
	OrderPollPeriod time.Duration
	// AgentVersion is reported in the agent identity.
	AgentVersion string

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

func (c *Config) setDefaults() {
	if c.OrderPollPeriod == 0 {
		c.OrderPollPeriod = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.Stomp.PrefetchCount == 0 {
		c.Stomp.PrefetchCount = config.DefaultPrefetchCount
	}
	if c.Stomp.Heartbeat == 0 {
		c.Stomp.Heartbeat = 10 * time.Second
	}
	if c.Stomp.ReconnectMax == 0 {
		c.Stomp.ReconnectMax = 120 * time.Second
	}
	if c.Stomp.Transport == "" {
		c.Stomp.Transport = "websocket"
	}
	if c.Stomp.MaxFrameBody == 0 {
		c.Stomp.MaxFrameBody = 1 << 20
	}
}

// payloadHeadroom is what an event adds to its frame's body (the
// protobuf envelope, the headers) with room to spare.
const payloadHeadroom = 64 << 10

// maxFrameBody is the configured limit, lowered to what the NATS server
// takes in one message: a body the bus cannot store would otherwise be
// retried for ever, holding its prefetch slot.
func (br *Bridge) maxFrameBody() int {
	limit := br.cfg.Stomp.MaxFrameBody
	if mp := int(br.bus.Conn().MaxPayload()); mp > payloadHeadroom {
		limit = min(limit, mp-payloadHeadroom)
	}
	return limit
}

// Validate reports settings the bridge cannot run with.
func (c *Config) Validate() error {
	var errs []error
	for _, o := range c.Offerings {
		if o.Config == nil || o.Waldur == nil {
			errs = append(errs, errors.New("stompbridge: offering without config or Waldur client"))
		}
	}
	if c.Stomp.Transport != "websocket" && c.Stomp.Transport != "tcp" {
		errs = append(errs, fmt.Errorf("stompbridge: transport %q is neither websocket nor tcp", c.Stomp.Transport))
	}
	if c.Stomp.MaxFrameBody < 0 {
		errs = append(errs, fmt.Errorf("stompbridge: max frame body %d is negative", c.Stomp.MaxFrameBody))
	}
	if c.OrderPollPeriod < time.Second {
		errs = append(errs, fmt.Errorf("stompbridge: order poll period %s is under a second", c.OrderPollPeriod))
	}
	return errors.Join(errs...)
}

// Bridge is the running service.
type Bridge struct {
	bus     *bus.Bus
	cfg     Config
	log     *slog.Logger
	tracer  trace.Tracer
	metrics *metrics

	mu   sync.Mutex
	subs []*subscription
	// resync asks an offering's reconciler for a pass now: Waldur drops
	// the events it publishes before a queue exists, so an order made
	// while the bridge was still registering is found by polling.
	resync map[*config.Offering]chan struct{}
}

// New builds the bridge; Run starts it.
func New(b *bus.Bus, cfg Config) (*Bridge, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Bridge{
		bus: b, cfg: cfg, log: cfg.Logger.With("service", Name),
		tracer:  cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/services/stompbridge"),
		metrics: newMetrics(cfg.Registerer),
	}, nil
}

// Name implements the service interface.
func (br *Bridge) Name() string { return Name }

// Run registers with Waldur, consumes every subscription and runs the order
// reconciler until ctx ends. An offering that cannot register yet (Waldur
// down) is retried with backoff; the others go on.
func (br *Bridge) Run(ctx context.Context) error {
	store, err := newSubscriptionStore(ctx, br.bus.JetStream(), br.bus.Replicas())
	if err != nil {
		return err
	}
	br.resync = map[*config.Offering]chan struct{}{}
	for _, o := range br.cfg.Offerings {
		if o.Config.OrderProcessingBackend != "" {
			br.resync[o.Config] = make(chan struct{}, 1)
		}
	}
	var wg sync.WaitGroup
	for _, o := range br.cfg.Offerings {
		if kick := br.resync[o.Config]; kick != nil {
			wg.Go(func() { br.reconcileLoop(ctx, o, kick) })
		}
		if !o.Config.StompEnabled {
			continue
		}
		wg.Go(func() {
			subs, err := br.registerWithRetry(ctx, o, store)
			if err != nil {
				return // ctx ended
			}
			br.mu.Lock()
			br.subs = append(br.subs, subs...)
			br.mu.Unlock()
			var inner sync.WaitGroup
			for _, s := range subs {
				inner.Go(func() { br.consume(ctx, s) })
			}
			inner.Wait()
		})
	}
	wg.Wait()
	return nil
}

// Ready reports whether the bus is usable; the bridge itself is ready as soon
// as it runs, since its loops retry on their own. STOMP session state is
// exported as the sitebus_stomp_connected metric.
func (br *Bridge) Ready(context.Context) error {
	if !br.bus.Connected() {
		return errors.New("NATS is not connected")
	}
	return nil
}

// Sessions returns the state of every registered subscription; an
// offering still registering with Waldur has none yet.
func (br *Bridge) Sessions() []contract.StompSession {
	br.mu.Lock()
	defer br.mu.Unlock()
	out := make([]contract.StompSession, 0, len(br.subs))
	for _, s := range br.subs {
		ss := contract.StompSession{OfferingUUID: s.offeringHex, ObjectType: s.objectType, Connected: s.connected.Load()}
		if ns := s.lastFrame.Load(); ns != 0 {
			ss.LastFrame = time.Unix(0, ns).UTC()
		}
		out = append(out, ss)
	}
	return out
}

func (br *Bridge) registerWithRetry(ctx context.Context, o Offering, store *subscriptionStore) ([]*subscription, error) {
	for attempt := 1; ; attempt++ {
		subs, err := br.register(ctx, o, store)
		if err == nil {
			return subs, nil
		}
		delay := reconnectDelay(attempt, br.cfg.Stomp.ReconnectMax)
		br.log.Error("registering event subscriptions with Waldur failed; will retry",
			"offering", o.Config.Name, "err", err, "retry_in", delay.Round(time.Millisecond))
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

var _ = jetstream.KeyValue(nil)
