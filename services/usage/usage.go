// Package usage is the usage-reporter service: every report period it
// measures what each resource of an offering has allocated on its platform
// and submits it to Waldur with the Python agent's report rules (see
// Decide and Periods).
//
// Reads are batched: per offering, one Waldur listing of the resources,
// one of the component usages per reported month, and one
// backend.UsageLister call (for ManagedNamespace: one list of CRs, pods and
// PVCs for the whole cluster). Only changed usage costs a call per
// resource (set_usage).
package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/fault"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// Name is the service name used by --only.
const Name = "usage-reporter"

// Defaults of Config.
const (
	DefaultPeriod           = 30 * time.Minute // WALDUR_SITE_AGENT_REPORT_PERIOD_MINUTES
	DefaultReportingPeriods = 2                // reporting_periods: current and previous month
	DefaultConcurrency      = 8
)

// Waldur is what the reporter calls (a *waldur.Client).
type Waldur interface {
	GetOffering(ctx context.Context, uuid string, fields ...string) (*waldur.Offering, error)
	ListProviderResources(ctx context.Context, f waldur.ResourceFilter) ([]waldur.Resource, error)
	ListOfferingComponentUsages(ctx context.Context, offeringUUID string, billingPeriod time.Time) ([]waldur.ComponentUsageRecord, error)
	SetUsage(ctx context.Context, req waldur.SetUsageRequest) error
}

// Meter reads a resource's usage, in the units limits use: a
// backend.Backend, or a platform that has only usage to offer (the
// rancher-cluster offering's provisioner.UsageMeter). When it is also a
// backend.UsageLister, one call reads every resource.
type Meter interface {
	Type() string
	Usage(ctx context.Context, backendID string) (map[string]float64, error)
}

// Offering is one offering with a reporting_backend.
type Offering struct {
	Config  *config.Offering
	Waldur  Waldur
	Backend Meter
}

// Config configures the service.
type Config struct {
	Offerings []Offering
	// Period between cycles; the first cycle runs at start.
	Period time.Duration
	// ReportingPeriods is the number of months considered (reporting_periods).
	ReportingPeriods int
	// Location decides where a billing month starts (the timezone key).
	Location *time.Location
	// Concurrency bounds the set_usage calls in flight per offering.
	Concurrency int
	// Now defaults to time.Now; tests pin it.
	Now func() time.Time

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider
}

func (c *Config) setDefaults() {
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	if c.ReportingPeriods == 0 {
		c.ReportingPeriods = DefaultReportingPeriods
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
}

// Validate reports every problem of a Config with its defaults applied.
func (c *Config) Validate() error {
	var errs []error
	if c.Period < 0 {
		errs = append(errs, errors.New("usage-reporter: period must be positive"))
	}
	if c.ReportingPeriods < 1 || c.ReportingPeriods > 12 {
		errs = append(errs, fmt.Errorf("usage-reporter: reporting_periods %d is not within 1..12", c.ReportingPeriods))
	}
	if c.Concurrency < 1 {
		errs = append(errs, errors.New("usage-reporter: concurrency must be at least 1"))
	}
	for i, o := range c.Offerings {
		if o.Config == nil || o.Waldur == nil || o.Backend == nil {
			errs = append(errs, fmt.Errorf("usage-reporter: offering %d has no config, Waldur client or backend", i))
		}
	}
	return errors.Join(errs...)
}

// Service is the usage reporter.
type Service struct {
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer

	cycles    *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	reports   *prometheus.CounterVec
	anomalies *prometheus.CounterVec
}

// New builds the service; Run starts it.
func New(cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reg := cfg.Registerer
	return &Service{
		cfg: cfg, log: cfg.Logger.With("service", Name),
		tracer: cfg.TracerProvider.Tracer("github.com/sitebus/sitebus/services/usage"),
		cycles: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_usage_cycles_total", Help: "Usage report cycles per offering, by outcome (ok: every resource was handled; partial: some failed; failed: the offering could not be read).",
		}, []string{"offering", "outcome"})),
		duration: telemetry.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sitebus_usage_cycle_duration_seconds", Help: "Duration of one offering's usage report cycle.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, []string{"offering"})),
		reports: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_usage_reports_total", Help: "Resource usage reports per billing month, by outcome (submitted, unchanged, missing: no platform object, failed).",
		}, []string{"offering", "outcome"})),
		anomalies: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitebus_usage_anomalies_total", Help: "Usage values refused because they are lower than what Waldur has for the month (or Waldur holds the component twice).",
		}, []string{"offering", "component"})),
	}, nil
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Ready is always nil: a failed cycle is retried by the next one and says
// nothing about whether this process can serve.
func (s *Service) Ready(context.Context) error { return nil }

// Run reports every period until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if len(s.cfg.Offerings) == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.cfg.Period)
	defer t.Stop()
	for {
		s.Cycle(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Cycle reports every offering once. A failing offering or resource does
// not stop the others; the next cycle retries.
func (s *Service) Cycle(ctx context.Context) {
	ctx, span := s.tracer.Start(ctx, "usage report cycle")
	defer span.End()
	for _, o := range s.cfg.Offerings {
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		st, err := s.reportOffering(ctx, o)
		s.duration.WithLabelValues(o.Config.Name).Observe(time.Since(start).Seconds())
		outcome := "ok"
		switch {
		case err != nil:
			outcome = "failed"
			if ctx.Err() == nil {
				s.log.Error("usage report of the offering failed; the next cycle retries", "offering", o.Config.Name,
					"err", err, "retryable", retryable(err))
				span.RecordError(err)
				span.SetStatus(codes.Error, "an offering failed")
			}
		case st.failed > 0:
			outcome = "partial"
		}
		s.cycles.WithLabelValues(o.Config.Name, outcome).Inc()
		s.log.Info("usage report cycle", "offering", o.Config.Name, "outcome", outcome, "resources", st.resources,
			"submitted", st.submitted, "unchanged", st.unchanged, "anomalies", st.anomalies, "missing", st.missing,
			"failed", st.failed, "duration", time.Since(start))
	}
}

// stats count one offering's cycle.
type stats struct {
	mu                                                  sync.Mutex
	resources, submitted, unchanged, anomalies, missing int
	failed                                              int
}

func (st *stats) add(f func(*stats)) { st.mu.Lock(); f(st); st.mu.Unlock() }

func (s *Service) reportOffering(ctx context.Context, o Offering) (*stats, error) {
	ctx, span := s.tracer.Start(ctx, "usage report offering", trace.WithAttributes(attribute.String("offering", o.Config.Name)))
	defer span.End()
	st := &stats{}
	log := s.log.With("offering", o.Config.Name)
	start := s.cfg.Now()

	off, err := o.Waldur.GetOffering(ctx, o.Config.WaldurOfferingUUID, "components")
	if err != nil {
		return st, fmt.Errorf("get offering components: %w", err)
	}
	offered := map[string]bool{}
	for _, c := range off.Components {
		offered[c.Type] = true
	}
	resources, err := o.Waldur.ListProviderResources(ctx, waldur.ResourceFilter{
		OfferingUUID: o.Config.WaldurOfferingUUID, States: []string{waldur.ResourceStateOK, waldur.ResourceStateErred},
		Fields: []string{"uuid", "name", "backend_id"}, DropEmptyBackendID: true,
	})
	if err != nil {
		return st, fmt.Errorf("list resources: %w", err)
	}
	st.resources = len(resources)
	span.SetAttributes(attribute.Int("resources", len(resources)))
	if len(resources) == 0 {
		return st, nil
	}
	measured, err := s.measure(ctx, o.Backend, resources, log)
	if err != nil {
		return st, fmt.Errorf("read usage from %s: %w", o.Backend.Type(), err)
	}
	// A reading that straddles a month boundary belongs to neither month
	// for sure (the Python agent skips it too); the next cycle reads again.
	if !sameMonth(start, s.cfg.Now(), s.cfg.Location) {
		log.Info("the month changed while usage was read; reporting at the next cycle")
		return st, nil
	}
	for _, period := range Periods(start, s.cfg.Location, s.cfg.ReportingPeriods, s.cfg.Period) {
		if err := s.reportPeriod(ctx, o, period, resources, measured, offered, st, log); err != nil {
			return st, err
		}
	}
	return st, nil
}

// measure reads every resource's usage, converted to the offering's units:
// in one call when the backend can, else one call per resource (a failing
// one is left out and counted).
func (s *Service) measure(ctx context.Context, b Meter, resources []waldur.Resource, log *slog.Logger) (map[string]map[string]float64, error) {
	ids := make([]string, 0, len(resources))
	for _, r := range resources {
		ids = append(ids, r.BackendID)
	}
	if l, ok := b.(backend.UsageLister); ok {
		return l.UsageAll(ctx, ids)
	}
	out := map[string]map[string]float64{}
	for _, id := range ids {
		u, err := b.Usage(ctx, id)
		switch {
		case errors.Is(err, backend.ErrNotFound):
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			log.Warn("reading a resource's usage failed; the next cycle retries", "backend_id", id, "err", err)
		default:
			out[id] = u
		}
	}
	return out, nil
}

func (s *Service) reportPeriod(ctx context.Context, o Offering, period time.Time, resources []waldur.Resource,
	measured map[string]map[string]float64, offered map[string]bool, st *stats, log *slog.Logger) error {
	existing, err := o.Waldur.ListOfferingComponentUsages(ctx, o.Config.WaldurOfferingUUID, period)
	if err != nil {
		return fmt.Errorf("list component usages of %s: %w", period.Format("2006-01"), err)
	}
	byResource := map[string][]waldur.ComponentUsageRecord{}
	for _, r := range existing {
		id := events.HexUUID(r.ResourceUUID)
		byResource[id] = append(byResource[id], r)
	}
	month := period.Format("2006-01")
	sem := make(chan struct{}, s.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, r := range resources {
		raw, ok := measured[r.BackendID]
		if !ok {
			st.add(func(st *stats) { st.missing++ })
			s.reports.WithLabelValues(o.Config.Name, "missing").Inc()
			log.Warn("no platform object for the resource; nothing to report", "resource", r.UUID, "backend_id", r.BackendID)
			continue
		}
		d := Decide(Convert(raw, o.Config.BackendComponents), byResource[events.HexUUID(r.UUID)], offered)
		for _, a := range d.Anomalies {
			s.anomalies.WithLabelValues(o.Config.Name, a.Component).Inc()
			log.Warn("usage anomaly: not reported", "resource", r.UUID, "backend_id", r.BackendID, "month", month,
				"component", a.Component, "old", a.Old, "new", a.New, "reason", a.Reason)
		}
		if len(d.NotOffered) > 0 {
			log.Debug("components the offering does not have are not reported", "resource", r.UUID, "components", d.NotOffered)
		}
		st.add(func(st *stats) { st.anomalies += len(d.Anomalies) })
		if len(d.Send) == 0 {
			st.add(func(st *stats) { st.unchanged++ })
			s.reports.WithLabelValues(o.Config.Name, "unchanged").Inc()
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := o.Waldur.SetUsage(ctx, waldur.SetUsageRequest{Usages: d.Send, Resource: r.UUID, Date: period})
			switch {
			case err == nil:
				st.add(func(st *stats) { st.submitted++ })
				s.reports.WithLabelValues(o.Config.Name, "submitted").Inc()
				log.Debug("usage submitted", "resource", r.UUID, "month", month, "usages", d.Send)
			case isPastPeriodRefusal(err):
				// Waldur closed the month; as in the Python agent, not an error.
				st.add(func(st *stats) { st.unchanged++ })
				s.reports.WithLabelValues(o.Config.Name, "unchanged").Inc()
				log.Info("Waldur refuses usage for a closed month", "resource", r.UUID, "month", month)
			default:
				st.add(func(st *stats) { st.failed++ })
				s.reports.WithLabelValues(o.Config.Name, "failed").Inc()
				if ctx.Err() == nil {
					log.Warn("submitting usage failed; the next cycle retries", "resource", r.UUID, "month", month,
						"err", err, "retryable", retryable(err))
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// isPastPeriodRefusal is Waldur's 400 for usage of a closed billing
// period, which the Python agent ignores.
func isPastPeriodRefusal(err error) bool {
	return waldur.StatusCode(err) == 400 && strings.Contains(err.Error(), "backfilling past billing periods")
}

// retryable tells an operator whether waiting can fix err (a 4xx other
// than throttling cannot: the request itself is refused).
func retryable(err error) bool {
	if fault.IsTerminal(err) {
		return false
	}
	if code := waldur.StatusCode(err); code >= 400 && code < 500 && code != 429 {
		return false
	}
	return true
}
