package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/services/statuspage"
	"github.com/sitebus/sitebus/services/stompbridge"
)

// health answers /healthz (the process serves HTTP) and /readyz (NATS
// connected, streams and consumers bound, services ready, Waldur reachable).
type health struct {
	bus       *bus.Bus
	offerings []stompbridge.Offering
	streams   atomic.Bool

	mu       sync.Mutex
	services []Service
	// waldurOK caches the last successful Waldur check per offering, so a
	// probe every few seconds does not turn into a Waldur call each time.
	waldurOK map[string]time.Time
	// status serves the operator's status page; nil serves none.
	status http.Handler
}

const waldurCheckTTL = 30 * time.Second

func newHealth(b *bus.Bus, offerings []stompbridge.Offering) *health {
	return &health{bus: b, offerings: offerings, waldurOK: map[string]time.Time{}}
}

func (h *health) streamsReady() { h.streams.Store(true) }

func (h *health) setServices(s []Service) {
	h.mu.Lock()
	h.services = s
	h.mu.Unlock()
}

func (h *health) mux(reg *prometheus.Registry) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		problems := h.check(ctx)
		if len(problems) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready:\n- %s\n", strings.Join(problems, "\n- "))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	m.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if h.status != nil {
		m.Handle("GET "+statuspage.Path, h.status)
	}
	return m
}

func (h *health) check(ctx context.Context) []string {
	var problems []string
	if !h.bus.Connected() {
		problems = append(problems, "NATS is not connected")
	}
	if !h.streams.Load() {
		problems = append(problems, "JetStream streams are not set up yet")
	}
	h.mu.Lock()
	services := h.services
	h.mu.Unlock()
	if services == nil {
		problems = append(problems, "services are starting")
	}
	for _, s := range services {
		if err := s.Ready(ctx); err != nil {
			problems = append(problems, s.Name()+": "+err.Error())
		}
	}
	for _, o := range h.offerings {
		if err := h.checkWaldur(ctx, o); err != nil {
			problems = append(problems, fmt.Sprintf("Waldur for offering %q: %v", o.Config.Name, err))
		}
	}
	return problems
}

func (h *health) checkWaldur(ctx context.Context, o stompbridge.Offering) error {
	key := o.Config.WaldurOfferingUUID
	h.mu.Lock()
	last := h.waldurOK[key]
	h.mu.Unlock()
	if time.Since(last) < waldurCheckTTL {
		return nil
	}
	if _, err := o.Waldur.Me(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.waldurOK[key] = time.Now()
	h.mu.Unlock()
	return nil
}
