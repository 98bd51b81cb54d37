// Package drift is the drift service: every drift period it compares what
// Waldur says each resource of an offering should be with what the
// platform has (limits and flags against the quota, access groups'
// members against the team, marks and bindings sitebus sets), repairs
// what it finds, logs and counts each repair, and publishes the findings
// for the status page. The comparisons are the other services' own dry
// runs (the plans `sitebus migrate` prints), handed in as Checks by
// services/app, so there is one differ per concern and services do not
// import each other. Objects sitebus does not manage are never reported
// or touched: each Check lists only objects that carry sitebus's mark.
package drift

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/contract"
)

// Name is the service name used by --only.
const Name = contract.Drift

// Check finds one concern's drift in one offering and repairs a finding
// of it. Find changes nothing; Repair puts back what Waldur says for one
// finding Find returned, counting it in the concern's own metric.
type Check interface {
	Find(ctx context.Context) ([]contract.DriftFinding, error)
	Repair(ctx context.Context, f contract.DriftFinding) error
}

// Offering is one offering and its checks.
type Offering struct {
	UUID, Name string
	Checks     []Check
}

// Config configures the service.
type Config struct {
	Offerings []Offering
	// Period is the drift period (sitebus.periods.drift_period).
	Period time.Duration
	// JS, when set, is where the reports are published (StatusBucket);
	// Replicas is that bucket's replica count.
	JS       jetstream.JetStream
	Replicas int
	// Identity names this process in the published reports.
	Identity string
	Logger   *slog.Logger
}

// Service is the drift service.
type Service struct {
	cfg Config
	log *slog.Logger
}

// New builds the service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("service", Name)}
}

// Name implements the service interface.
func (s *Service) Name() string { return Name }

// Ready: the service binds no consumer.
func (s *Service) Ready(context.Context) error { return nil }

// Run repairs every Period, starting one period after the start (the
// other services' first passes already put most things right).
func (s *Service) Run(ctx context.Context) error {
	if len(s.cfg.Offerings) == 0 || s.cfg.Period <= 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, r := range s.Pass(ctx, true) {
			if err := s.publish(ctx, r); err != nil && ctx.Err() == nil {
				s.log.Warn("publishing the drift report failed", "offering", r.Offering, "err", err)
			}
		}
	}
}

// Pass compares every offering and, when repair is set, repairs each
// finding, logging every repair. It reports per offering what it found.
func (s *Service) Pass(ctx context.Context, repair bool) []contract.DriftReport {
	var out []contract.DriftReport
	for _, o := range s.cfg.Offerings {
		out = append(out, s.offering(ctx, o, repair))
	}
	return out
}

func (s *Service) offering(ctx context.Context, o Offering, repair bool) contract.DriftReport {
	r := contract.DriftReport{OfferingUUID: o.UUID, Offering: o.Name, Checked: time.Now().UTC(), Publisher: s.cfg.Identity,
		Findings: []contract.DriftFinding{}}
	for _, c := range o.Checks {
		found, err := c.Find(ctx)
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
			if ctx.Err() == nil {
				s.log.Warn("drift check failed; its drift is unknown until the next pass", "offering", o.Name, "err", err)
			}
			continue
		}
		for _, f := range found {
			if repair {
				if err := c.Repair(ctx, f); err != nil {
					f.RepairError = err.Error()
					s.log.Warn("drift repair failed", "offering", o.Name, "kind", f.Kind, "resource", f.Resource, "object", f.Object, "err", err)
				} else {
					f.Repaired = true
					s.log.Info("drift repaired", "offering", o.Name, "kind", f.Kind, "resource", f.Resource, "object", f.Object, "want", f.Want, "had", f.Have)
				}
			}
			r.Findings = append(r.Findings, f)
		}
	}
	slices.SortStableFunc(r.Findings, func(a, b contract.DriftFinding) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Object, b.Object))
	})
	return r
}

// publish puts r under its offering's key of the status bucket, the one
// the health snapshots share, so any replica's page shows it.
func (s *Service) publish(ctx context.Context, r contract.DriftReport) error {
	if s.cfg.JS == nil {
		return nil
	}
	kv, err := contract.EnsureStatusBucket(ctx, s.cfg.JS, s.cfg.Replicas)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := kv.Put(cctx, contract.DriftKey(r.OfferingUUID), b); err != nil {
		return fmt.Errorf("put %s: %w", contract.DriftKey(r.OfferingUUID), err)
	}
	return nil
}
