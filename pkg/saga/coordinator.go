package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/bus"
)

// Names that are part of sitebus's on-disk contract.
const (
	// DefaultBucket is the key-value bucket holding saga state.
	DefaultBucket = "sitebus_sagas"
	// Stream keeps saga outcomes: saga.<outcome>.<definition>.
	Stream = "SITEBUS_SAGAS"
	// Subjects is the subject space of Stream.
	Subjects = "saga.>"
)

// OutcomeSubject is where a saga's outcome is published, e.g.
// saga.parked.namespace-create.
func OutcomeSubject(outcome Status, definition string) string {
	return "saga." + string(outcome) + "." + definition
}

// Config configures a Coordinator. The zero value is usable.
type Config struct {
	// Bucket is the key-value bucket of saga state. Default "sitebus_sagas".
	Bucket string
	// Replicas of the bucket and the outcome stream, on creation and (by
	// Start and Run) on an existing bucket or stream whose count differs.
	// Every process that starts sagas must use the same. Default 1.
	Replicas int
	// Owner identifies this coordinator in leases. It must be unique among
	// the processes that run at the same time. A process that keeps it
	// across restarts (sitebus keeps it in its data dir) resumes its own
	// sagas at once after a crash instead of waiting for their leases.
	// Default hostname-<random>.
	Owner string
	// LeaseTTL is how long a saga stays with its coordinator without a
	// renewal; another coordinator takes over a crashed one's sagas after
	// it. Leases are renewed every LeaseTTL/3, so a short TTL costs a few
	// key-value writes per running saga. Default 6s.
	LeaseTTL time.Duration
	// Concurrency is how many sagas one coordinator drives at once.
	// Default 16.
	Concurrency int
	// ShutdownGrace is how long a stopping coordinator waits for in-flight
	// activities before it leaves their sagas to lease expiry. Default 10s.
	ShutdownGrace time.Duration
	// OutcomeMaxAge bounds how long outcome messages are kept. Default 30 days.
	OutcomeMaxAge time.Duration
	// Retention is how long a finished saga (succeeded, compensated or
	// failed) stays in the bucket after its last change; Run then removes
	// it. It is kept so that a redelivered or replayed order finds its saga
	// and does not run it again (Start is a no-op for an existing ID), so it
	// must outlast every way an order event can come back: sitebus sets it
	// no shorter than the events stream's max age. Parked sagas are never
	// removed: they wait for an operator. Without it the bucket, and every
	// List (the status page, `sitebus sagas`), grows with every order ever
	// served. Default 30 days.
	Retention time.Duration

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

func (c *Config) setDefaults() {
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "coordinator"
		}
		c.Owner = host + "-" + nuid.Next()
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 6 * time.Second
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.OutcomeMaxAge == 0 {
		c.OutcomeMaxAge = 30 * 24 * time.Hour
	}
	if c.Retention == 0 {
		c.Retention = 30 * 24 * time.Hour
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
}

// Validate reports configuration that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.LeaseTTL < 300*time.Millisecond {
		errs = append(errs, fmt.Errorf("saga: lease TTL %s < 300ms", c.LeaseTTL))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("saga: concurrency %d < 1", c.Concurrency))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("saga: retention %s is negative", c.Retention))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("saga: replicas %d not in 1..5", c.Replicas))
	}
	return errors.Join(errs...)
}

// Coordinator starts sagas, drives them and answers questions about them.
// Register definitions and activities before Run.
type Coordinator struct {
	js      jetstream.JetStream
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator

	mu         sync.Mutex
	defs       map[string]Definition
	activities map[string]Activity
	kv         jetstream.KeyValue
	kvEnsured  bool // kv's config (replicas) was applied, not only opened
	streamOK   bool
	active     map[string]bool
}

// New returns a coordinator on js. It touches no server state until used.
func New(js jetstream.JetStream, cfg Config) (*Coordinator, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{
		js:         js,
		cfg:        cfg,
		log:        cfg.Logger.With("component", "saga", "owner", cfg.Owner),
		metrics:    newMetrics(cfg.Registerer),
		tracer:     cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/pkg/saga"),
		prop:       propagation.TraceContext{},
		defs:       map[string]Definition{},
		activities: map[string]Activity{},
		active:     map[string]bool{},
	}, nil
}

// Owner is this coordinator's lease identity.
func (c *Coordinator) Owner() string { return c.cfg.Owner }

// Register adds a definition. Registering a name twice replaces it.
func (c *Coordinator) Register(def Definition) error {
	if err := def.Validate(); err != nil {
		return err
	}
	def.Steps = slices.Clone(def.Steps)
	for i := range def.Steps {
		def.Steps[i].setDefaults()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.defs[def.Name] = def
	return nil
}

// RegisterActivity makes fn callable as an action or compensation by name.
func (c *Coordinator) RegisterActivity(name string, fn Activity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.activities[name] = fn
}

func (c *Coordinator) definition(name string) (Definition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.defs[name]
	return d, ok
}

func (c *Coordinator) activity(name string) (Activity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.activities[name]
	return a, ok
}

// checkActivities reports actions and compensations that no activity is
// registered for.
func (c *Coordinator) checkActivities() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, d := range c.defs {
		for _, s := range d.Steps {
			for _, name := range []string{s.Action, s.Compensation} {
				if _, ok := c.activities[name]; name != "" && !ok {
					errs = append(errs, fmt.Errorf("saga: definition %s step %s: activity %q is not registered", d.Name, s.Name, name))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// bucket opens the saga bucket. Start and Run create it if it is missing
// and apply the configuration (the replica count) to an existing one; the
// read-only calls (and Retry) only open it, so a CLI pointed at the wrong
// server creates or rescales nothing there.
func (c *Coordinator) bucket(ctx context.Context, create bool) (jetstream.KeyValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kv != nil && (c.kvEnsured || !create) {
		return c.kv, nil
	}
	var kv jetstream.KeyValue
	var err error
	if create {
		kv, err = bus.EnsureKeyValue(ctx, c.js, jetstream.KeyValueConfig{
			Bucket:      c.cfg.Bucket,
			Description: "sitebus saga state, one key per saga",
			History:     8,
			Storage:     jetstream.FileStorage,
			Replicas:    c.cfg.Replicas,
		})
	} else {
		kv, err = bus.OpenKeyValue(ctx, c.js, c.cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%w: bucket %s does not exist (no saga was ever started)", ErrNotFound, c.cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("saga: open bucket %s: %w", c.cfg.Bucket, err)
	}
	c.kv, c.kvEnsured = kv, create
	return kv, nil
}

// ensureStream creates or updates the outcome stream once per coordinator.
// EnsureStream creates the outcomes stream, for consumers of saga outcomes
// that may start before any coordinator ran.
func (c *Coordinator) EnsureStream(ctx context.Context) error { return c.ensureStream(ctx) }

func (c *Coordinator) ensureStream(ctx context.Context) error {
	c.mu.Lock()
	ok := c.streamOK
	c.mu.Unlock()
	if ok {
		return nil
	}
	_, err := bus.EnsureStream(ctx, c.js, jetstream.StreamConfig{
		Name:        Stream,
		Description: "Saga outcomes: saga.<succeeded|compensated|failed|parked>.<definition>",
		Subjects:    []string{Subjects},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      c.cfg.OutcomeMaxAge,
		Duplicates:  15 * time.Minute,
		Replicas:    c.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("saga: ensure stream %s: %w", Stream, err)
	}
	c.mu.Lock()
	c.streamOK = true
	c.mu.Unlock()
	return nil
}

func decode(e jetstream.KeyValueEntry) (Saga, error) {
	var s Saga
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return Saga{}, fmt.Errorf("saga: decode %s rev %d: %w", e.Key(), e.Revision(), err)
	}
	s.Revision = e.Revision()
	return s, nil
}

// Start creates saga id of definition def with input (JSON-encoded unless it
// is already a json.RawMessage or []byte) and returns it. Starting an ID that
// exists is a no-op that returns the existing saga, so a redelivered order
// starts its saga once; if that saga belongs to another definition the error
// is ErrConflict. The trace context of ctx is stored with the saga. A running
// coordinator (Run) picks the saga up.
func (c *Coordinator) Start(ctx context.Context, def, id string, input any) (Saga, error) {
	d, ok := c.definition(def)
	if !ok {
		return Saga{}, fmt.Errorf("%w: %s", ErrUnknownDefinition, def)
	}
	if !bus.ValidToken(id) {
		return Saga{}, fmt.Errorf("saga: id %q must be letters, digits, '-' or '_'", id)
	}
	var raw json.RawMessage
	switch v := input.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	case nil:
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return Saga{}, fmt.Errorf("saga: encode input of %s: %w", id, err)
		}
		raw = b
	}
	if len(raw) > 0 && !json.Valid(raw) {
		return Saga{}, fmt.Errorf("saga: input of %s is not valid JSON", id)
	}
	kv, err := c.bucket(ctx, true)
	if err != nil {
		return Saga{}, err
	}
	now := time.Now().UTC()
	s := Saga{ID: id, Definition: def, Input: raw, Status: StatusRunning, Created: now, Updated: now}
	for _, st := range d.Steps {
		s.Steps = append(s.Steps, StepState{Name: st.Name, Status: StepPending})
	}
	carrier := propagation.MapCarrier{}
	c.prop.Inject(ctx, carrier)
	s.TraceParent, s.TraceState = carrier.Get("traceparent"), carrier.Get("tracestate")
	data, err := json.Marshal(s)
	if err != nil {
		return Saga{}, err
	}
	// Each attempt bounded: a create sent while the bucket's leader
	// restarts is never answered. Repeating it is safe: if the first made
	// the key, the next finds it (ErrKeyExists) and returns it.
	var rev uint64
	err = bus.RetryUnanswered(ctx, func(actx context.Context) (err error) {
		rev, err = kv.Create(actx, id, data)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyExists) {
		existing, gerr := c.Get(ctx, id)
		if gerr != nil {
			return Saga{}, gerr
		}
		if existing.Definition != def {
			return existing, fmt.Errorf("%w: %s is a %s saga, not %s", ErrConflict, id, existing.Definition, def)
		}
		return existing, nil
	}
	if err != nil {
		return Saga{}, fmt.Errorf("saga: create %s: %w", id, err)
	}
	s.Revision = rev
	c.metrics.started.WithLabelValues(def).Inc()
	c.log.Info("saga started", "saga", id, "definition", def)
	return s, nil
}

// Get returns saga id; ErrNotFound if there is none.
func (c *Coordinator) Get(ctx context.Context, id string) (Saga, error) {
	kv, err := c.bucket(ctx, false)
	if err != nil {
		return Saga{}, err
	}
	if !bus.ValidToken(id) {
		return Saga{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e, err := kv.Get(ctx, id) // bounded: bus.EnsureKeyValue, bus.OpenKeyValue
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Saga{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Saga{}, fmt.Errorf("saga: get %s: %w", id, err)
	}
	return decode(e)
}

// Filter selects sagas in List. Zero fields match everything.
type Filter struct {
	// Status keeps sagas in any of these statuses.
	Status []Status
	// Definition keeps sagas of this definition.
	Definition string
}

func (f Filter) match(s Saga) bool {
	if f.Definition != "" && s.Definition != f.Definition {
		return false
	}
	return len(f.Status) == 0 || slices.Contains(f.Status, s.Status)
}

// List returns the sagas that match f, oldest first.
func (c *Coordinator) List(ctx context.Context, f Filter) ([]Saga, error) {
	kv, err := c.bucket(ctx, false)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("saga: list: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var out []Saga
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("saga: list: watcher closed")
			}
			if e == nil {
				sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
				return out, nil
			}
			s, err := decode(e)
			if err != nil {
				c.log.Warn("skipping undecodable saga", "err", err)
				continue
			}
			if f.match(s) {
				out = append(out, s)
			}
		}
	}
}

// Wait blocks until saga id reaches a terminal status (succeeded,
// compensated, failed or parked) and returns it.
func (c *Coordinator) Wait(ctx context.Context, id string) (Saga, error) {
	kv, err := c.bucket(ctx, false)
	if err != nil {
		return Saga{}, err
	}
	if !bus.ValidToken(id) {
		return Saga{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	w, err := kv.Watch(ctx, id)
	if err != nil {
		return Saga{}, fmt.Errorf("saga: watch %s: %w", id, err)
	}
	defer func() { _ = w.Stop() }()
	seen := false
	for {
		select {
		case <-ctx.Done():
			return Saga{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return Saga{}, fmt.Errorf("saga: watch %s: watcher closed", id)
			}
			if e == nil {
				if !seen {
					return Saga{}, fmt.Errorf("%w: %s", ErrNotFound, id)
				}
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				return Saga{}, fmt.Errorf("%w: %s was deleted", ErrNotFound, id)
			}
			seen = true
			s, err := decode(e)
			if err != nil {
				return Saga{}, err
			}
			if s.Status.Terminal() {
				return s, nil
			}
		}
	}
}

// Retry resumes a parked saga: the failing compensation gets a fresh attempt
// budget and any coordinator running the saga's definition picks it up.
func (c *Coordinator) Retry(ctx context.Context, id string) (Saga, error) {
	kv, err := c.bucket(ctx, false)
	if err != nil {
		return Saga{}, err
	}
	for {
		s, err := c.Get(ctx, id)
		if err != nil {
			return Saga{}, err
		}
		if s.Status != StatusParked {
			return s, fmt.Errorf("%w: %s is %s", ErrNotParked, id, s.Status)
		}
		s.Status = s.ParkedIn
		if s.Status == "" {
			s.Status = StatusCompensating
		}
		now := time.Now().UTC()
		for i := range s.Steps {
			st := &s.Steps[i]
			switch {
			case s.Status == StatusCompensating && st.Status == StepCompensating:
				st.CompensationAttempts, st.Interrupted, st.RetryAt, st.InFlight = 0, 0, time.Time{}, false
				st.UpdatedAt = now
			case s.Status == StatusRunning && st.Status == StepRunning:
				st.Attempts, st.Interrupted, st.RetryAt, st.InFlight = 0, 0, time.Time{}, false
				st.UpdatedAt = now
			}
		}
		s.ParkReason, s.ParkedIn, s.Owner, s.LeaseUntil, s.Updated = "", "", "", time.Time{}, now
		data, err := json.Marshal(s)
		if err != nil {
			return Saga{}, err
		}
		rev, err := kv.Update(ctx, id, data, s.Revision)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return Saga{}, fmt.Errorf("saga: retry %s: %w", id, err)
		}
		s.Revision = rev
		c.log.Info("parked saga resumed", "saga", id, "status", s.Status)
		return s, nil
	}
}
