package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Subscriptions is the set of consumers one service runs: it answers the
// service's readiness (every consumer bound) and stops them together.
type Subscriptions struct {
	mu   sync.Mutex
	subs []*Subscription
	// started is set by the first Add, so Check can tell "not started yet".
	started bool
}

// Add records running subscriptions.
func (g *Subscriptions) Add(subs ...*Subscription) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subs = append(g.subs, subs...)
	g.started = true
}

// Check reports whether every consumer is bound, for /readyz.
func (g *Subscriptions) Check(ctx context.Context) error {
	g.mu.Lock()
	subs, started := g.subs, g.started
	g.mu.Unlock()
	if !started {
		return errors.New("consumers not started")
	}
	for _, s := range subs {
		if err := s.Check(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
	}
	return nil
}

// Stop stops every subscription, giving in-flight handlers up to grace.
func (g *Subscriptions) Stop(grace time.Duration) {
	g.mu.Lock()
	subs := g.subs
	g.subs = nil
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(func() { s.Stop(ctx) })
	}
	wg.Wait()
}
