// Package statuspage serves the operator's status page: per offering its
// health, the sagas in flight and parked, recent orders and dead letters.
//
// The page reads only from NATS (the saga bucket, the dead-letter stream
// and the health snapshots in the status bucket), so every replica of a
// site split with --only serves the same page. The health checks call
// Waldur, the backends and Keycloak; they run in the process holding the
// STOMP connection every check period (Publisher) and are stored in the
// status bucket, so loading the page never calls a peer.
package statuspage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/contract"
)

// Bucket is the key-value bucket holding the health snapshots, one per
// offering under "health.<offering UUID without dashes>".
const Bucket = contract.StatusBucket

// Check is one health check, as `sitebus diagnostics` reports it.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Health is an offering's health snapshot as the publisher stores it.
type Health struct {
	// OfferingUUID is without dashes.
	OfferingUUID string `json:"offering_uuid"`
	// Checked is when Checks ran; zero before the first run ends.
	Checked time.Time `json:"checked,omitzero"`
	Checks  []Check   `json:"checks,omitempty"`
	// Stomp is the state of the offering's STOMP subscriptions at
	// Published.
	Stomp     []contract.StompSession `json:"stomp,omitempty"`
	Published time.Time               `json:"published"`
	// Publisher is the identity of the process that published it.
	Publisher string `json:"publisher"`
}

func healthKey(offeringHex string) string { return "health." + offeringHex }

// Offering names an offering of the configuration.
type Offering struct {
	// UUID is without dashes.
	UUID string
	Name string
}

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	Offerings []Offering
	// Checks runs the health checks of offering i; nil runs none (only the
	// STOMP state is published).
	Checks func(ctx context.Context, i int) []Check
	// Sessions returns the STOMP subscriptions' state (the bridge's).
	Sessions func() []contract.StompSession
	// CheckPeriod is how often Checks run.
	CheckPeriod time.Duration
	// PublishPeriod is how often the snapshot (with the STOMP state) is
	// written; default 5s.
	PublishPeriod time.Duration
	// Redact cleans every text a check reports before it is stored.
	Redact   func(string) string
	Identity string
	Replicas int
	Logger   *slog.Logger
}

// Publisher runs the health checks and writes the snapshots.
type Publisher struct {
	js  jetstream.JetStream
	cfg PublisherConfig

	mu      sync.Mutex
	checked []time.Time
	checks  [][]Check
}

// NewPublisher checks cfg; Run publishes.
func NewPublisher(js jetstream.JetStream, cfg PublisherConfig) (*Publisher, error) {
	if cfg.PublishPeriod == 0 {
		cfg.PublishPeriod = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Redact == nil {
		cfg.Redact = func(s string) string { return s }
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.CheckPeriod <= 0 {
		return nil, fmt.Errorf("statuspage: check period %s must be positive", cfg.CheckPeriod)
	}
	n := len(cfg.Offerings)
	return &Publisher{js: js, cfg: cfg, checked: make([]time.Time, n), checks: make([][]Check, n)}, nil
}

// Run publishes until ctx ends. The checks run at once and then every
// CheckPeriod, each offering's on its own, so a slow peer delays only its
// offering; the snapshot is written every PublishPeriod.
func (p *Publisher) Run(ctx context.Context) {
	log := p.cfg.Logger.With("component", "status-page")
	var kv jetstream.KeyValue
	var wg sync.WaitGroup
	defer wg.Wait()
	if p.cfg.Checks != nil {
		for i := range p.cfg.Offerings {
			wg.Go(func() { p.checkLoop(ctx, i) })
		}
	}
	t := time.NewTicker(p.cfg.PublishPeriod)
	defer t.Stop()
	for {
		if kv == nil {
			var err error
			kv, err = contract.EnsureStatusBucket(ctx, p.js, p.cfg.Replicas)
			if err != nil && ctx.Err() == nil {
				log.Warn("status bucket not available yet", "err", err)
			}
		}
		if kv != nil {
			for i := range p.cfg.Offerings {
				if err := p.publish(ctx, kv, i); err != nil && ctx.Err() == nil {
					log.Warn("publishing the health snapshot failed", "offering", p.cfg.Offerings[i].Name, "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Publisher) checkLoop(ctx context.Context, i int) {
	for {
		checks := p.cfg.Checks(ctx, i)
		if ctx.Err() != nil {
			return
		}
		for j := range checks {
			checks[j].Detail, checks[j].Fix = p.cfg.Redact(checks[j].Detail), p.cfg.Redact(checks[j].Fix)
		}
		p.mu.Lock()
		p.checks[i], p.checked[i] = checks, time.Now().UTC()
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.cfg.CheckPeriod):
		}
	}
}

func (p *Publisher) publish(ctx context.Context, kv jetstream.KeyValue, i int) error {
	o := p.cfg.Offerings[i]
	h := Health{OfferingUUID: o.UUID, Published: time.Now().UTC(), Publisher: p.cfg.Identity}
	p.mu.Lock()
	h.Checked, h.Checks = p.checked[i], p.checks[i]
	p.mu.Unlock()
	if p.cfg.Sessions != nil {
		for _, s := range p.cfg.Sessions() {
			if s.OfferingUUID == o.UUID {
				h.Stomp = append(h.Stomp, s)
			}
		}
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = kv.Put(cctx, healthKey(o.UUID), b)
	return err
}

// stored is what the status bucket holds, by offering UUID: the health
// snapshots and the drift pass's reports.
type stored struct {
	health map[string]Health
	drift  map[string]contract.DriftReport
}

// readStatus reads the status bucket in one watch; it holds nothing when
// the bucket does not exist yet.
func readStatus(ctx context.Context, js jetstream.JetStream) (stored, error) {
	st := stored{health: map[string]Health{}, drift: map[string]contract.DriftReport{}}
	err := readBucket(ctx, js, func(key string, b []byte) {
		switch {
		case strings.HasPrefix(key, healthKey("")):
			var h Health
			if json.Unmarshal(b, &h) == nil {
				st.health[h.OfferingUUID] = h
			}
		case strings.HasPrefix(key, contract.DriftKey("")):
			var r contract.DriftReport
			if json.Unmarshal(b, &r) == nil {
				st.drift[r.OfferingUUID] = r
			}
		}
	})
	return st, err
}

// readBucket hands each current key and value of the status bucket to
// each.
func readBucket(ctx context.Context, js jetstream.JetStream, each func(key string, value []byte)) error {
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("status bucket watcher closed")
			}
			if e == nil {
				return nil
			}
			each(e.Key(), e.Value())
		}
	}
}
